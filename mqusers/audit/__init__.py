"""The message audit, pure: ledgers of what each process sent and received, and the verdict on every message.

Modules: ``ledgers.py`` (``entries.py``: the shapes they ship; ``intervals.py``: sets of seqs as intervals),
``audit.py`` (``auditstate.py``: what it keeps per subscription and stream; ``bagsum.py``: a queue's competing
consumers' shares summed in one pass; ``sendrecord.py``, ``expected.py``: what a subscription expects of a
producer, compared with what arrived), ``groupaudit.py`` (whether two consumers had a message group at once).

What they do: what each process sent and received, when each seq was certainly sent, shipped as deltas and
folded; the verdict on every message: lost, duplicated, reordered, redelivered, unconfirmed, unreceived,
foreign.
"""

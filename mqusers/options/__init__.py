"""Every --mq-* option declared once (the table), its declaration type and the value parsers.

Modules: ``table.py`` (every option, once; ``semantictable.py``: selectors, groups, priorities, NACKs, expiry,
transactions; ``reporttable.py``: reports and gates), ``settings.py`` (``Settings``, ``read_settings``),
``optionspec.py``, ``parsing.py`` (``paths.py``: files; ``faultspec.py``: ``--mq-fault``; ``payloadspec.py``:
``--mq-payload``; ``destpattern.py``: ``/queue/orders.{0..9999}``; ``profile.py``: ``--mq-profile``, each
message's due time; ``sizedist.py``: ``--mq-size-dist``; ``selectors.py``: ``--mq-labels`` and
``--mq-select``, the labels producers stamp and consumers select; ``groups.py``: ``--mq-groups``, the message
group each producer sends in; ``priorities.py``: ``--mq-priorities``, each message's priority from its seq),
``gatespec.py`` (``--mq-gate-regression``'s figures and thresholds, ``--mq-baseline``'s path).

What they do: each option declared once; values validated once per test; what a destination pattern names and
how Users share it.
"""

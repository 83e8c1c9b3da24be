"""The simulated clients: Locust Users that produce, consume, request and respond over STOMP.

Modules: ``base.py`` (connect, reconnect with back-off), ``producers.py``, ``requesters.py``, ``consumers.py``
(consumers, responders), ``churn.py`` (connect, a few messages, disconnect, again), ``transactions.py``
(BEGIN, N SENDs, COMMIT or ABORT), ``pacing.py``, ``inflight.py`` (sends awaiting their RECEIPT), ``lanes.py``
(a producer's destinations and the bodies dealt to each), ``publishers.py`` (its pre-encoded SENDs, stamped,
and which one a message takes), ``payloads.py``.

What they do: what a simulated client does and when, and the bodies it sends (made once per process, shared by
its producers); no sockets.
"""

"""One STOMP connection: frames, the transport seam, session, client, per-delivery receiving, broker dialects.

Modules: ``client.py``, ``session.py`` (``answers.py``: who waits on which RECEIPT or reply; ``errors.py``),
``seam.py`` (the transport seam: what a session needs of a connection), ``transport.py`` (``link.py``: one open
socket; ``heartbeats.py``; ``tcpinfo.py``: whether the broker's host still acknowledges; ``tls.py``;
``websocket.py``: ws:// and wss://), ``receiver.py`` (``nacks.py``: which deliveries a consumer NACKs;
``ackpace.py``: a paced drain's ACKs on one schedule; ``acktransactions.py``: a subscription's ACKs in transactions;
``probe.py``: waiting for a network's demand), ``replier.py`` (a responder's answers), ``dialects.py``, ``wire.py``
(``framing.py``: bytes read cut into frames).

What they do: one STOMP connection, mqusers' own from socket to frame: failover hosts dialled in order (each
one's error kept), TLS through ``ssl``, STOMP over WebSocket, CONNECT, heart-beats both ways, clean close;
every frame byte written (``wire.py``) or parsed (``framing.py``); successes into the recorder, failures as
Locust request events; per-delivery measuring and acking (a read's ACKs in one write; a paced drain's each in
its turn); broker differences in one table (``dialects.py``).
"""

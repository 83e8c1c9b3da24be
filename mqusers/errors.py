"""Every error mqusers raises on purpose, in one tree; each message is one line a user can read.

``except MqusersError`` catches them all. Where a class also derives from a built-in, callers that
catch the built-in (``ValueError`` for bad input, ``OSError`` in the transport) still do::

    MqusersError
    ├── OptionError (ValueError)         options/parsing.py        a bad option value: exit 2 before any load
    ├── PatternError (ValueError)        options/destpattern.py    a text with braces that is no destination pattern
    ├── RunFileError (ValueError)        stats/samples.py          a saved run that cannot be compared
    ├── MqError                          stomp/errors.py           a STOMP operation failed: a Locust failure
    │   ├── BrokerError                  stomp/errors.py           the broker's ERROR frame, in its words
    │   └── ConnectionLost               stomp/errors.py           dropped while an answer was pending
    ├── Unreachable                      stomp/seam.py             no host of the broker address answered
    ├── ProtocolError (ValueError)       stomp/framing.py          what the peer sent is not STOMP
    ├── UpgradeRefused (OSError)         stomp/websocket.py        the WebSocket upgrade failed
    ├── MetricsError                     brokers/model.py          the broker's own figures could not be read
    │   ├── EndpointUnreachable          brokers/httpcall.py       nothing answered at the management address
    │   └── LoginRefused                 brokers/model.py          the management API refused the user or the access
    ├── StoreRejected                    sinks/writer.py           a metrics store refused a batch for good
    ├── NoBlock                          users/pacing.py           the shared schedule handed out no block in time
    ├── BlockedError                     run/blocked.py            a send that does not move: the broker stopped reading
    ├── StalledError                     run/blocked.py            ... and nothing it sent was acknowledged
    └── StepFailed                       commands/locustchild.py   a capacity step's child run gave no report

``Interrupted`` (commands/locustchild.py) is a ``KeyboardInterrupt``, a stop rather than an error: outside.

This module sits below every folder: any layer may import it, and it imports nothing of mqusers.
"""

from __future__ import annotations


class MqusersError(Exception):
    """The root of every error mqusers raises on purpose."""

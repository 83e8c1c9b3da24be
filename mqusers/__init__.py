"""mqusers: Locust users that load STOMP message brokers and measure them.

Import Locust before anything that patches or uses sockets; this package imports it first.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching must come before any socket or ssl import)

from mqusers.measure.book import Book, Tally
from mqusers.options.parsing import BrokerAddress, OptionError, parse_broker_url, parse_size
from mqusers.options.settings import Settings, read_settings
from mqusers.stomp.client import BrokerError, ClientConfig, ConnectionLost, MqError, Publisher, Sent, StompClient
from mqusers.stomp.dialects import Dialect, dialect_for
from mqusers.stomp.receiver import Receiver
from mqusers.stomp.replier import Replier
from mqusers.users.base import StompUser
from mqusers.users.churn import StompChurnConsumerUser, StompChurnProducerUser
from mqusers.users.consumers import StompConsumerUser, StompResponderUser
from mqusers.users.producers import StompProducerUser
from mqusers.users.requesters import StompRequesterUser
from mqusers.users.transactions import StompTransactionProducerUser
from mqusers.wiring import plugin  # noqa: F401  (registers the --mq-* options and the per-Environment wiring)

__version__ = "0.1.0"

__all__ = [
    "Book",
    "BrokerAddress",
    "BrokerError",
    "ClientConfig",
    "ConnectionLost",
    "Dialect",
    "MqError",
    "OptionError",
    "Publisher",
    "Receiver",
    "Replier",
    "Sent",
    "Settings",
    "StompChurnConsumerUser",
    "StompChurnProducerUser",
    "StompClient",
    "StompConsumerUser",
    "StompProducerUser",
    "StompRequesterUser",
    "StompResponderUser",
    "StompTransactionProducerUser",
    "StompUser",
    "Tally",
    "__version__",
    "dialect_for",
    "parse_broker_url",
    "parse_size",
    "read_settings",
]

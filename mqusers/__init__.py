"""mqusers: Locust users that load STOMP message brokers and measure them.

Import Locust before anything that patches or uses sockets; this package imports it first.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching must come before any socket or ssl import)

from mqusers.errors import MqusersError
from mqusers.options.parsing import BrokerAddress, OptionError, parse_broker_url, parse_size
from mqusers.options.settings import Settings, read_settings
from mqusers.stomp.client import BrokerError, ClientConfig, ConnectionLost, MqError, Publisher, Sent, StompClient
from mqusers.users.base import StompUser
from mqusers.users.churn import StompChurnConsumerUser, StompChurnProducerUser
from mqusers.users.consumers import StompConsumerUser, StompResponderUser
from mqusers.users.producers import StompProducerUser
from mqusers.users.requesters import StompRequesterUser
from mqusers.users.transactions import StompTransactionProducerUser
from mqusers.wiring import plugin  # noqa: F401  (registers the --mq-* options and the per-Environment wiring)

__version__ = "0.1.0"

#: The public API, nothing of the machinery: the Users, the client (StompClient, ClientConfig, Publisher, Sent),
#: the settings (Settings, read_settings, BrokerAddress, parse_broker_url, parse_size) and the errors.
__all__ = [
    "BrokerAddress",
    "BrokerError",
    "ClientConfig",
    "ConnectionLost",
    "MqError",
    "MqusersError",
    "OptionError",
    "Publisher",
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
    "__version__",
    "parse_broker_url",
    "parse_size",
    "read_settings",
]

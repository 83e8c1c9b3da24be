"""The local Artemis's Jolokia, read and driven by the tests' own HTTP code (requests; no mqusers code).

The truth the Artemis source is held against: exact MBean names found with a Jolokia ``search``
(mqusers reads by pattern), one read per MBean. Also the tests' setup: a queue made ANYCAST
before any client uses it, an address that pages early, messages expired or removed by filter.
"""

from __future__ import annotations

import json
from typing import Any

import requests

import services
from services.artemis import PASSWORD, USER

DOMAIN = "org.apache.activemq.artemis"


def port(service: str = "artemis") -> int:
    return services.ports(service)["http"]


def call(request: dict[str, Any], service: str = "artemis") -> Any:
    """One Jolokia request's value (of the broker ``service``: a cluster's node too); any failure raises."""
    origin = f"http://127.0.0.1:{port(service)}"
    response = requests.post(f"{origin}/console/jolokia", json=request, auth=(USER, PASSWORD),
                             headers={"Origin": origin}, timeout=10)  # fmt: skip
    response.raise_for_status()
    answer = response.json()
    assert answer.get("status") == 200, answer
    return answer["value"]


def broker_mbean(service: str = "artemis") -> str:
    [name] = call({"type": "search", "mbean": f"{DOMAIN}:broker=*"}, service)
    return str(name)


def read(mbean: str, service: str = "artemis") -> dict[str, Any]:
    value = call({"type": "read", "mbean": mbean}, service)
    assert isinstance(value, dict), value
    return value


def address_of(destination: str, service: str = "artemis") -> str:
    """The address a STOMP destination is on this broker: without the STOMP acceptor's prefix, if it has one."""
    for acceptor in call({"type": "search", "mbean": f"{DOMAIN}:broker=*,component=acceptors,name=*"}, service):
        parameters = read(acceptor, service)["Parameters"]
        if "STOMP" in str(parameters.get("protocols", "")).upper():
            for key in ("anycastPrefix", "multicastPrefix"):
                prefix = parameters.get(key)
                if prefix and destination.startswith(prefix):
                    return destination[len(prefix) :]
    return destination


def address_mbean(address: str, service: str = "artemis") -> str:
    return f'{broker_mbean(service)},component=addresses,address="{address}"'


def queue_mbean(address: str, service: str = "artemis") -> str:
    return f'{address_mbean(address, service)},subcomponent=queues,routing-type="anycast",queue="{address}"'


def make_queue(address: str, page_beyond: int | None = None) -> None:
    """An ANYCAST queue named as its address, whatever the STOMP frames say; paging beyond ``page_beyond`` bytes."""
    if page_beyond is not None:
        settings = json.dumps(
            {"maxSizeBytes": page_beyond, "pageSizeBytes": page_beyond // 2, "addressFullMessagePolicy": "PAGE"}
        )
        operation = "addAddressSettings(java.lang.String,java.lang.String)"
        call({"type": "exec", "mbean": broker_mbean(), "operation": operation, "arguments": [address, settings]})
    queue = json.dumps({"name": address, "address": address, "routing-type": "ANYCAST", "durable": True})
    call({"type": "exec", "mbean": broker_mbean(), "operation": "createQueue(java.lang.String)", "arguments": [queue]})


def on_queue(address: str, operation: str, *arguments: Any) -> Any:
    """A QueueControl operation of the queue (``expireMessages(java.lang.String)``...); its result."""
    return call({"type": "exec", "mbean": queue_mbean(address), "operation": operation, "arguments": list(arguments)})


def figures(address: str, service: str = "artemis") -> dict[str, Any]:
    """The address's and its queue's attributes, read here, under the names mqusers reports them by."""
    at, queue = read(address_mbean(address, service), service), read(queue_mbean(address, service), service)
    return {
        "enqueued": at["RoutedMessageCount"] + at["UnRoutedMessageCount"],
        "dequeued": queue["MessagesAcknowledged"],
        "expired": queue["MessagesExpired"],
        "killed": queue["MessagesKilled"],
        "depth": queue["MessageCount"],
        "unacked": queue["DeliveringCount"],
        "consumers": queue["ConsumerCount"],
        "paging": int(at["Paging"]),
        "pages": at["NumberOfPages"],
        "memory_bytes": at["AddressSize"],
        "memory_percent": float(at["AddressLimitPercent"]),
        "store_bytes": queue["DurablePersistentSize"],
    }

"""The Artemis source without a broker: Jolokia's recorded answers read, and what it asks and refuses."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests

from mqusers.brokers import artemisjson
from mqusers.brokers.artemis import ArtemisJolokia, ArtemisJvm, console_urls, jolokia_url
from mqusers.brokers.brokeroptions import BrokerMetricsSettings
from mqusers.brokers.model import MetricsError
from mqusers.options.parsing import parse_broker_url
from mqusers.options.settings import Settings
from mqusers.wiring import brokerwatch

SAMPLES = Path(__file__).parent / "samples" / "brokers"
URL = "http://127.0.0.1:8161/console/jolokia"


def recorded(name: str) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = json.loads((SAMPLES / f"artemis-{name}.json").read_text())
    return answers


class Console:
    """Jolokia agents by port: each answers bulk reads from ``answers`` (by the first read's MBean) and
    records what it was sent; a port not listed refuses connections."""

    def __init__(self, agents: dict[int, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]], status: int = 200):
        self.agents, self.status = agents, status
        self.sent: list[dict[str, Any]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Console:
        """Every ``requests.Session`` posts here (a function, so the session is its first argument)."""
        monkeypatch.setattr(requests.Session, "post", lambda session, url, **kwargs: self.post(session, url, **kwargs))
        return self

    def post(self, session: requests.Session, url: str, **kwargs: Any) -> requests.Response:
        self.sent.append({"url": url, "auth": session.auth, **kwargs})
        port = int(url.split(":")[2].split("/")[0])
        if port not in self.agents:
            raise requests.ConnectionError("[Errno 111] Connection refused")
        response = requests.Response()
        response.status_code, response.url = self.status, url
        response._content = json.dumps(self.agents[port](kwargs["json"])).encode()
        return response


def agent(acceptor_port: int = 61613, **answers: list[dict[str, Any]]) -> Callable[..., list[dict[str, Any]]]:
    """One broker's agent: recorded answers by kind, its STOMP acceptor on ``acceptor_port``."""
    acceptors = recorded("acceptors")
    for parameters in artemisjson.matched(acceptors[0]):
        if parameters["Parameters"].get("protocols") == "STOMP":
            parameters["Parameters"]["port"] = str(acceptor_port)
    kinds = {"broker": recorded("broker"), "destination": recorded("destination"), "jvm": recorded("jvm"),
             "acceptors": acceptors, **answers}  # fmt: skip

    def answer(reads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        mbean = reads[0]["mbean"]
        kind = ("acceptors" if "component=acceptors" in mbean else "destination" if "component=addresses" in mbean
                else "jvm" if mbean.startswith("java.lang:type=Memory") else "broker")  # fmt: skip
        return kinds[kind]

    return answer


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> Console:
    return Console({8161: agent()}).install(monkeypatch)


# -------------------------------------------------------------------------- recorded answers


def test_a_queues_recorded_answer_becomes_destination_figures(console: Console) -> None:
    # 20 messages of 2 KiB, paged beyond 8 KiB; one expired, one removed; a consumer has the other 18, acked 3.
    figures = ArtemisJolokia(URL, "mqusers", "pw").destination("/queue/mqusers.test.recorded")
    assert figures == {"enqueued": 20, "dequeued": 3, "expired": 1, "killed": 1, "depth": 15, "unacked": 15,
                       "consumers": 1, "paging": 1, "pages": 15, "memory_bytes": 0, "store_bytes": 34_445,
                       "memory_percent": 0.0}  # fmt: skip


def test_the_address_is_asked_for_as_named_and_without_its_prefix(console: Console) -> None:
    ArtemisJolokia(URL, "mqusers", "pw").destination("/topic/prices")
    [sent] = console.sent
    mbeans = [read["mbean"] for read in sent["json"]]
    assert mbeans == [
        'org.apache.activemq.artemis:broker=*,component=addresses,address="/topic/prices"',
        'org.apache.activemq.artemis:broker=*,component=addresses,address="/topic/prices",subcomponent=queues,'
        "routing-type=*,queue=*",
        'org.apache.activemq.artemis:broker=*,component=addresses,address="prices"',
        'org.apache.activemq.artemis:broker=*,component=addresses,address="prices",subcomponent=queues,'
        "routing-type=*,queue=*",
    ]
    assert all(read["type"] == "read" and read["config"] == {"ignoreErrors": True} for read in sent["json"])
    # The console's own origin (jolokia-access.xml's strict checking), the login, and a bound.
    assert sent["headers"] == {"Origin": "http://127.0.0.1:8161"} and sent["auth"] == ("mqusers", "pw")
    assert sent["timeout"] == 5.0 and sent["url"] == URL


def test_an_acceptor_with_prefixes_makes_the_stripped_name_the_address(monkeypatch: pytest.MonkeyPatch) -> None:
    full = recorded("destination")
    missing = {"status": 404, "error_type": "javax.management.InstanceNotFoundException", "error": "No MBean"}
    stripped = [missing, missing, full[0], full[1]]  # the address is "NAME", not "/queue/NAME"
    Console({8161: agent(destination=stripped)}).install(monkeypatch)
    assert ArtemisJolokia(URL, "u", "p").destination("/queue/mqusers.test.recorded")["enqueued"] == 20
    Console({8161: agent(destination=[missing] * 4)}).install(monkeypatch)
    assert ArtemisJolokia(URL, "u", "p").destination("/queue/unknown") == {}
    assert ArtemisJolokia(URL, "u", "p").destination("/temp-queue/reply") == {}  # no address by that name


def test_a_topics_subscriber_queues_are_summed_without_counters() -> None:
    answers = recorded("destination")
    address, queues = artemisjson.matched(answers[0])[0], artemisjson.matched(answers[1])
    figures = artemisjson.destination_figures(address, [queues[0], queues[0]])
    assert figures["enqueued"] == 20  # the address's: every message sent to the topic, once
    assert (figures["depth"], figures["unacked"], figures["consumers"]) == (30, 30, 2)
    assert not {"dequeued", "expired", "killed"} & set(figures)  # per subscriber, they come and go with it


def test_the_recorded_broker_answer_becomes_broker_figures(console: Console) -> None:
    figures = ArtemisJolokia(URL, "u", "p").broker()
    assert set(figures) == {"memory_bytes", "memory_percent", "connections", "disk_percent", "store_percent",
                            "alarms", "instance"}  # fmt: skip
    assert figures["connections"] == 1 and figures["memory_bytes"] == 12_872 and figures["alarms"] == []
    # The store's disk against max-disk-usage (90 %): 100 would block producers.
    assert figures["store_percent"] == pytest.approx(figures["disk_percent"] / 0.9)
    assert (
        figures["instance"] == "50eb9f32-f0bd-11f1-9bf3-02fc00000001/1796483129461"
    )  # NodeID / the JVM's start: a restart changes it


def test_a_full_disk_is_the_disk_alarm() -> None:
    figures = artemisjson.broker_figures({"DiskStoreUsage": 0.93, "MaxDiskUsage": 90}, {})
    assert figures["alarms"] == ["disk"] and figures["store_percent"] == pytest.approx(103.33, abs=0.01)
    assert "store_percent" not in artemisjson.broker_figures({"DiskStoreUsage": 0.5, "MaxDiskUsage": -1}, {})


def test_an_attribute_the_broker_could_not_read_is_left_out() -> None:
    address = {"RoutedMessageCount": "ERROR: java.lang.IllegalStateException", "UnRoutedMessageCount": 0,
               "Paging": False}  # fmt: skip
    assert artemisjson.destination_figures(address, []) == {"paging": 0}


def test_the_jvm_through_jolokia_and_its_cpu_since_the_previous_reading(console: Console) -> None:
    jvm = ArtemisJvm(ArtemisJolokia(URL, "u", "p"))
    first = jvm.sample()
    assert set(first) == {"heap_used_mb", "heap_committed_mb", "gc_count", "gc_seconds", "threads"}
    assert 0 < first["heap_used_mb"] <= first["heap_committed_mb"] and first["threads"] > 10
    assert (first["gc_count"], first["gc_seconds"]) == (7, 0.159)
    jvm._cpu = (jvm._cpu[0] - 2.0, jvm._cpu[1] - 1_000_000_000)  # type: ignore[index]  # 1 s of CPU 2 s ago
    assert jvm.sample()["cpu_percent"] == pytest.approx(50.0, rel=0.01)


# -------------------------------------------------------------------------- where, and refusals


def test_the_console_is_looked_for_beside_the_stomp_port() -> None:
    assert console_urls(parse_broker_url("stomp://mq:61613")) == ["http://mq:8161/console/jolokia"]
    assert console_urls(parse_broker_url("stomp://[::1]:61713")) == [
        "http://[::1]:8161/console/jolokia", "http://[::1]:8261/console/jolokia"]  # fmt: skip
    assert jolokia_url("http://mq:8161/") == "http://mq:8161/console/jolokia"
    assert jolokia_url("https://mq/admin/jolokia") == "https://mq/admin/jolokia"


def test_a_guessed_console_of_another_broker_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    first, *others = console_urls(parse_broker_url("stomp://127.0.0.1:61713"))
    Console({8161: agent(61613), 8261: agent(61713)}).install(monkeypatch)
    source = ArtemisJolokia(first, "u", "p", stomp_port=61713, alternatives=tuple(others))
    assert source.broker()["connections"] == 1 and source.url == "http://127.0.0.1:8261/console/jolokia"

    Console({8161: agent(61613)}).install(monkeypatch)
    source = ArtemisJolokia(first, "u", "p", stomp_port=61713, alternatives=tuple(others))
    with pytest.raises(MetricsError) as none:
        ArtemisJvm(source).sample()  # the JVM is not read from another broker either
    assert str(none.value) == (
        "no Artemis console of the broker on STOMP port 61713: http://127.0.0.1:8161/console/jolokia is another "
        "broker's (acceptors on 5683, 9245, 9472, 61613, 65416); http://127.0.0.1:8261/console/jolokia is "
        "unreachable (Connection refused); give it with --mq-broker-metrics-url"
    )


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (401, b"", "Artemis's Jolokia at http://127.0.0.1:8161/console/jolokia refused the credentials (user watcher)"),
        (403, b"", "refused the access (HTTP 403): the user needs the console's role (amq by default)"),
        (200, b"<html>", "did not answer with JSON (is it Artemis's console?)"),
        (200, b'{"status": 200}', "answered a bulk read oddly (is it a Jolokia agent?)"),
        (
            200,
            b'[{"status": 500, "error": "java.lang.SecurityException: no", "request": {"mbean": "x:broker=*"}},'
            b'{"status": 200, "value": {}}]',
            "could not read x:broker=*: java.lang.SecurityException: no",
        ),
        (502, b"", "answered HTTP 502"),
    ],
)
def test_each_refusal_is_one_line_without_the_password(
    monkeypatch: pytest.MonkeyPatch, status: int, body: bytes, says: str
) -> None:
    def post(session: requests.Session, url: str, **kwargs: Any) -> requests.Response:
        response = requests.Response()
        response.status_code, response._content, response.url = status, body, url
        return response

    monkeypatch.setattr(requests.Session, "post", post)
    with pytest.raises(MetricsError) as refused:
        ArtemisJolokia("http://watcher:s3cret@127.0.0.1:8161", "watcher", "s3cret").broker()
    assert says in str(refused.value) and "s3cret" not in str(refused.value)


def test_no_login_is_named_in_the_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    Console({8161: agent()}, status=401).install(monkeypatch)
    with pytest.raises(MetricsError, match=r"no user given: --mq-broker-metrics-user or --mq-user"):
        ArtemisJolokia(URL, None, None).broker()


def test_without_a_login_an_anonymous_one_is_sent_and_its_refusal_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hawtio admits no request without a login (403), not even on the local service that allows anonymous users."""
    console = Console({8161: agent()}, status=403)
    console.install(monkeypatch)
    with pytest.raises(MetricsError, match=r"refused an anonymous login \(HTTP 403\): give a user of the console's"):
        ArtemisJolokia(URL, None, None).broker()
    assert console.sent[-1]["auth"] == ("anonymous", "anonymous")


def test_an_unreachable_console_is_one_line() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(MetricsError) as failed:
        ArtemisJolokia(f"http://127.0.0.1:{port}", "u", "p", timeout=2).broker()
    assert str(failed.value) == (
        f"Artemis's Jolokia at http://127.0.0.1:{port}/console/jolokia is unreachable (Connection refused)"
    )


# -------------------------------------------------------------------------- picked by auto


@pytest.mark.parametrize(
    ("server", "picked"),
    [
        ("ActiveMQ-Artemis/2.40.0 ActiveMQ Artemis Messaging Engine", "artemis"),
        ("ActiveMQ/6.1.8", "activemq"),
        ("RabbitMQ/3.10.8", "rabbitmq"),
    ],
)
def test_auto_picks_artemis_by_the_connected_server_header(
    monkeypatch: pytest.MonkeyPatch, server: str, picked: str
) -> None:
    monkeypatch.setattr(brokerwatch, "_server", lambda config: server)
    settings = dataclasses.replace(Settings(), broker=parse_broker_url("stomp://127.0.0.1:61713"), user="mqusers",
                                   password="pw")  # fmt: skip
    ctx: Any = SimpleNamespace(settings=settings, broker_server="")
    source = brokerwatch.open_source(BrokerMetricsSettings(), ctx)
    assert source is not None and source.name == picked and ctx.broker_server == server
    if isinstance(source, ArtemisJolokia):  # the STOMP login, the console beside the STOMP port
        assert source.user == "mqusers" and source.stomp_port == 61713 and source.url.endswith(":8161/console/jolokia")
    source.close()

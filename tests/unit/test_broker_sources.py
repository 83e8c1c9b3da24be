"""Broker-metrics sources without brokers: recorded answers parsed, and the ActiveMQ source's
protocol against a broker played over the in-memory transport."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
import pytest
import requests
from gevent.queue import Empty

from mqusers.brokers import activemq, activemqmaps, jvm, rabbitmq, rabbitmqjson
from mqusers.brokers.activemq import ActiveMQStatistics
from mqusers.brokers.jvm import JvmProbe
from mqusers.brokers.model import MetricsError
from mqusers.brokers.rabbitmq import RabbitManagement
from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.seam import ClientConfig, Listener
from mqusers.stomp.wire import Headers
from tests.unit.memory_transport import MemoryConnection, MemoryTransport

SAMPLES = Path(__file__).parent / "samples" / "brokers"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# -------------------------------------------------------------------------- ActiveMQ: parsing


def test_the_plugins_destination_map_becomes_destination_figures() -> None:
    stats = activemqmaps.parse_map_json(sample("activemq-destination.json"))
    assert stats["destinationName"] == "queue://mqusers.test.recorded"
    assert activemqmaps.destination_figures(stats) == {
        "enqueued": 10,
        "dequeued": 2,
        "dispatched": 6,
        "expired": 0,
        "depth": 8,
        "unacked": 4,
        "consumers": 1,
        "producers": 0,
        "memory_percent": 0.0,
    }


def test_the_plugins_broker_map_becomes_broker_figures_without_a_connection_count() -> None:
    figures = activemqmaps.broker_figures(activemqmaps.parse_map_json(sample("activemq-broker.json")))
    assert set(figures) == {"memory_percent", "store_percent", "temp_percent", "memory_bytes", "store_bytes",
                            "instance"}  # fmt: skip
    assert figures["instance"] == "ID:vm-36495-1796320201639-0:1"  # the brokerId: new at every start
    assert all(0.0 <= figures[key] <= 100.0 for key in ("memory_percent", "store_percent", "temp_percent"))  # type: ignore[literal-required]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"map":""}', {}),  # the empty map that ends a destination query's replies
        ('{"map":{"entry":{"string":"size","long":3}}}', {"size": 3}),  # Jettison: one entry, no list
        ('{"map":{"entry":[{"string":["name"]},{"string":"x","double":"1.5"}]}}', {"name": "", "x": 1.5}),
        ('{"map":{"entry":[{"string":"slow","boolean":true},{"string":"n","int":"7"}]}}', {"slow": True, "n": 7}),
    ],
)
def test_map_json_shapes(body: str, expected: dict[str, Any]) -> None:
    assert activemqmaps.parse_map_json(body) == expected


@pytest.mark.parametrize("body", ["not json", '{"map": [1]}', '{"map":{"entry":[{"long":1}]}}'])
def test_a_reply_that_is_no_map_is_an_error(body: str) -> None:
    with pytest.raises(ValueError):
        activemqmaps.parse_map_json(body)


def test_destinations_are_asked_about_on_their_own_kind() -> None:
    assert activemq.destination_query("/queue/a.b") == ("/queue/ActiveMQ.Statistics.Destination.a.b", "queue://a.b")
    assert activemq.destination_query("/topic/t") == ("/topic/ActiveMQ.Statistics.Destination.t", "topic://t")
    assert activemq.destination_query("/temp-queue/r") is None
    assert activemq.destination_query("/queue/") is None


# -------------------------------------------------------------------------- ActiveMQ: the protocol

Answer = Callable[[Headers], list[bytes]]


class StatisticsBroker(MemoryTransport):
    """Answers SUBSCRIBE and SEND receipts; each SEND's replies are ``answer(headers)``' bodies,
    MESSAGE frames with ``reply_headers`` besides their subscription and correlation id."""

    def __init__(self, answer: Answer, server: bytes = b"ActiveMQ/5.17.2"):
        super().__init__(connected=b"CONNECTED\nversion:1.2\nserver:%s\n\n\x00" % server)
        self.replies = answer
        self.reply_headers = b""
        self.subscription = b""
        self.requests: list[Headers] = []

    def open(self, config: ClientConfig, headers: Any, listener: Listener) -> MemoryConnection:
        connection = super().open(config, headers, listener)
        gevent.spawn(self._serve, connection)
        return connection

    def reply(self, correlation: bytes, body: bytes) -> None:
        head = b"subscription:%s\ncorrelation-id:%s\n%scontent-length:%d" % (
            self.subscription, correlation, self.reply_headers, len(body))  # fmt: skip
        self.connection.feed(b"MESSAGE\n%s\n\n%s\x00" % (head, body))

    def _serve(self, connection: MemoryConnection) -> None:
        while not connection.closed:
            try:
                command, headers, _ = connection.next_frame(timeout=5)
            except Empty:
                return
            if command == b"SUBSCRIBE":
                self.subscription = headers[b"id"]
                assert headers[b"transformation"] == b"jms-map-json"
            if b"receipt" in headers:
                connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % headers[b"receipt"])
            if command == b"SEND":
                self.requests.append(headers)
                for body in self.replies(headers):
                    self.reply(headers[b"correlation-id"], body)


CONFIG = ClientConfig(parse_broker_url("stomp://127.0.0.1:1"), client_id="load-1")


def source(answer: Answer, **kwargs: Any) -> tuple[ActiveMQStatistics, StatisticsBroker]:
    broker = StatisticsBroker(answer, **kwargs)
    return ActiveMQStatistics(CONFIG, timeout=0.3, transport=broker), broker


def test_broker_figures_over_one_connection_without_the_loads_client_id() -> None:
    stats, broker = source(lambda headers: [sample("activemq-broker.json").encode()])
    figures = stats.broker()
    assert (figures["memory_bytes"], figures["memory_percent"]) == (8264, 0.0)  # the sample's memoryUsage, percent
    assert stats.broker() == stats.broker() == figures
    assert len(broker.connections) == 1
    assert "client-id" not in broker.connection.connect_headers
    assert [request[b"destination"] for request in broker.requests] == [b"/queue/ActiveMQ.Statistics.Broker"] * 3
    assert broker.requests[0][b"reply-to"] == b"/temp-queue/mqusers-statistics"


def test_a_destination_query_asks_for_the_empty_map_and_picks_its_destination() -> None:
    other = sample("activemq-destination.json").replace("mqusers.test.recorded", "mqusers.test.recorded.more")
    stats, broker = source(lambda _: [other.encode(), sample("activemq-destination.json").encode(), b'{"map":""}'])
    assert stats.destination("/queue/mqusers.test.recorded")["enqueued"] == 10
    request = broker.requests[0]
    assert request[b"destination"] == b"/queue/ActiveMQ.Statistics.Destination.mqusers.test.recorded"
    assert request[activemq.END_WITH_EMPTY_MAP.encode()] == b"true"


def test_greenlets_asking_at_once_share_the_connection_and_get_their_own_answers() -> None:
    known = sample("activemq-destination.json").encode()
    end = b'{"map":""}'
    stats, broker = source(lambda headers: [known, end] if b"recorded" in headers[b"destination"] else [end])
    asks = [gevent.spawn(stats.destination, name) for name in ("/queue/mqusers.test.recorded", "/queue/other")] * 2
    gevent.joinall(asks, raise_error=True)
    assert [ask.value.get("enqueued") for ask in asks] == [10, None, 10, None]
    assert len(broker.connections) == 1


def test_a_destination_the_broker_does_not_know_is_an_empty_dict() -> None:
    stats, _ = source(lambda _: [b'{"map":""}'])
    assert stats.destination("/topic/nobody") == {}
    assert stats.destination("/temp-queue/x") == {}


def test_a_plugin_that_does_not_end_its_replies_still_answers_by_the_timeout() -> None:
    # Older brokers ignore the end-with-an-empty-map header.
    stats, broker = source(lambda _: [sample("activemq-destination.json").encode()])
    assert stats.destination("/queue/mqusers.test.recorded")["depth"] == 8
    broker.replies = lambda _: []
    assert stats.destination("/queue/unknown") == {}  # the plugin answered before: not a missing plugin


def test_no_reply_after_the_receipt_is_the_missing_plugin_in_one_line() -> None:
    stats, broker = source(lambda _: [])
    with pytest.raises(MetricsError) as refused:
        stats.broker()
    assert str(refused.value) == (
        "ActiveMQ at stomp://127.0.0.1:1 does not answer ActiveMQ.Statistics.Broker within 0.3s: enable the "
        "statistics plugin (<statisticsBrokerPlugin/> in activemq.xml's <plugins>)"
    )
    with pytest.raises(MetricsError, match=r"ActiveMQ\.Statistics\.Destination\.q within"):
        stats.destination("/queue/q")
    assert len(broker.connections) == 1  # the connection worked: kept


def test_a_late_reply_is_not_taken_for_the_next_requests() -> None:
    stats, broker = source(lambda _: [])
    with pytest.raises(MetricsError):
        stats.broker()
    broker.reply(broker.requests[0][b"correlation-id"], b'{"map":""}')  # it would end a query at once
    broker.replies = lambda _: [b'{"map":""}']
    assert stats.destination("/queue/q") == {}
    broker.replies = lambda _: [sample("activemq-broker.json").encode()]
    assert stats.broker()["memory_bytes"] == 8264  # the sample's own reply, not the late one


def test_a_reply_the_broker_could_not_transform_names_the_jars() -> None:
    stats, broker = source(lambda _: [b""])
    broker.reply_headers = b"transformation-error:com/thoughtworks/xstream/io/HierarchicalStreamDriver\n"
    with pytest.raises(MetricsError) as failed:
        stats.broker()
    assert str(failed.value) == (
        "ActiveMQ at stomp://127.0.0.1:1: the statistics reply could not be turned into JSON "
        "(com/thoughtworks/xstream/io/HierarchicalStreamDriver): put xstream.jar and jettison.jar on the "
        "broker's classpath"
    )


def test_a_drop_fails_the_call_and_the_next_call_connects_again() -> None:
    stats, broker = source(lambda _: [sample("activemq-broker.json").encode()])
    stats.broker()
    broker.connection.drop()
    stats.broker()
    assert len(broker.connections) == 2
    stats.close()
    assert broker.connection.closed


def test_an_unreachable_broker_is_one_line() -> None:
    stats = ActiveMQStatistics(CONFIG, timeout=0.3, transport=MemoryTransport(unreachable="Connection refused"))
    with pytest.raises(MetricsError) as failed:
        stats.broker()
    assert (
        str(failed.value) == "ActiveMQ statistics: cannot reach the broker at stomp://127.0.0.1:1 (Connection refused)"
    )


def test_a_broker_that_never_answers_connect_is_one_line() -> None:
    stats = ActiveMQStatistics(CONFIG, timeout=0.2, transport=MemoryTransport(connected=None))
    with pytest.raises(MetricsError, match=r"^ActiveMQ.* stomp://127\.0\.0\.1:1.*CONNECT"):
        stats.broker()


def test_rabbitmq_is_not_asked_for_activemqs_statistics() -> None:
    stats, broker = source(lambda _: [], server=b"RabbitMQ/3.10.8")
    with pytest.raises(MetricsError, match=r"is RabbitMQ/3\.10\.8, not ActiveMQ Classic"):
        stats.broker()
    assert broker.requests == []


# -------------------------------------------------------------------------- RabbitMQ


def test_a_queue_of_the_management_api_becomes_destination_figures() -> None:
    queue = json.loads(sample("rabbitmq-queue.json"))
    # The sample was taken idle (every rate 0.0): distinct rates show each is read from its own field.
    for key, rate in [("publish", 12.5), ("deliver", 99.0), ("deliver_get", 7.25), ("ack", 3.0)]:
        queue["message_stats"][f"{key}_details"]["rate"] = rate
    assert rabbitmqjson.queue_figures(queue) == {
        "enqueued": 10,
        "dequeued": 2,
        "dispatched": 6,
        "depth": 8,
        "unacked": 4,
        "consumers": 1,
        "publish_rate": 12.5,
        "deliver_rate": 7.25,
        "ack_rate": 3.0,
    }


def test_a_queue_without_message_stats_yet_counts_zero() -> None:
    assert rabbitmqjson.queue_figures({"name": "q", "messages": 0, "consumers": 0})["enqueued"] == 0


def test_a_topics_subscriber_queues_are_summed_without_counters() -> None:
    queue = json.loads(sample("rabbitmq-queue.json"))
    figures = rabbitmqjson.subscriber_figures([queue, {**queue, "consumers": 2}])
    assert (figures["depth"], figures["unacked"], figures["consumers"]) == (16, 8, 3)
    assert "enqueued" not in figures and "dispatched" not in figures
    assert rabbitmqjson.subscriber_figures([]) == {}


def test_overview_and_nodes_become_broker_figures() -> None:
    overview, nodes = json.loads(sample("rabbitmq-overview.json")), json.loads(sample("rabbitmq-nodes.json"))
    figures = rabbitmqjson.broker_figures(overview, nodes)
    assert figures["connections"] == overview["object_totals"]["connections"]
    assert figures["memory_bytes"] == nodes[0]["mem_used"]
    assert figures["memory_percent"] == pytest.approx(100.0 * nodes[0]["mem_used"] / nodes[0]["mem_limit"])
    assert (figures["fd_used"], figures["fd_total"]) == (nodes[0]["fd_used"], nodes[0]["fd_total"])
    assert figures["alarms"] == []
    assert figures["instance"] == f"{nodes[0]['name']}/{nodes[0]['os_pid']}"  # a restart has another pid
    alarmed = [{**nodes[0], "mem_alarm": True, "disk_free_alarm": True}]
    assert rabbitmqjson.broker_figures(overview, alarmed)["alarms"] == ["memory", "disk"]


def test_the_management_url_is_beside_the_first_stomp_host() -> None:
    assert rabbitmq.management_url(parse_broker_url("stomp://mq1:61613,stomp://mq2:61613")) == "http://mq1:15672"
    assert rabbitmq.management_url(parse_broker_url("stomp://[::1]:61613"), 8080) == "http://[::1]:8080"


def test_the_management_api_is_looked_for_beside_the_stomp_port_and_kept_only_if_it_is_that_brokers() -> None:
    # 15672, then as far from it as the STOMP port is from 61613 and from 61614 (the project's services).
    urls = rabbitmq.management_urls(parse_broker_url("stomp://mq:61624"))
    assert urls == ["http://mq:15672", "http://mq:15683", "http://mq:15682"]
    assert rabbitmq.management_urls(parse_broker_url("stomp://mq:61613")) == ["http://mq:15672", "http://mq:15671"]
    # Over WebSocket, as far from it as the web_stomp port is from its 15674.
    assert rabbitmq.management_urls(parse_broker_url("ws://mq:15684/ws")) == ["http://mq:15672", "http://mq:15682"]


def test_web_stomps_listener_counts_as_the_brokers_stomp_port() -> None:
    listeners = [{"protocol": "http", "port": 15672}, {"protocol": "http/web-stomp", "port": 15674},
                 {"protocol": "stomp", "port": 61613}, {"protocol": "amqp", "port": 5672}]  # fmt: skip
    assert rabbitmq.stomp_ports({"listeners": listeners}) == [15674, 61613]


def brokers(listening: dict[int, int]) -> Callable[..., requests.Response]:
    """Management APIs by port, each of a broker whose STOMP listens on the port given; others refuse."""

    def get(session: requests.Session, url: str, **kwargs: Any) -> requests.Response:
        port = int(url.split(":")[2].split("/")[0])
        if port not in listening:
            raise requests.ConnectionError("[Errno 111] Connection refused")
        overview = {"listeners": [{"protocol": "amqp", "port": 5672}, {"protocol": "stomp", "port": listening[port]}]}
        return answering(200, json.dumps(overview if url.endswith("/overview") else []).encode())(url)

    return get


def test_a_guessed_management_api_of_another_broker_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    first, *others = rabbitmq.management_urls(parse_broker_url("stomp://127.0.0.1:61624"))
    monkeypatch.setattr(requests.Session, "get", brokers({15672: 61614, 15682: 61624}))
    source = RabbitManagement(first, "guest", "guest", stomp_port=61624, alternatives=tuple(others))
    source.broker()
    assert source.url == "http://127.0.0.1:15682"  # 15672 is the first broker's, 15683 refused

    monkeypatch.setattr(requests.Session, "get", brokers({15672: 61614}))
    source = RabbitManagement(first, "guest", "guest", stomp_port=61624, alternatives=tuple(others))
    with pytest.raises(MetricsError) as none:
        source.broker()
    assert str(none.value) == (
        "no RabbitMQ management API of the broker on STOMP port 61624: http://127.0.0.1:15672 is another broker's "
        "(STOMP on 61614); http://127.0.0.1:15683 is unreachable (Connection refused); http://127.0.0.1:15682 is "
        "unreachable (Connection refused); give it with --mq-broker-metrics-url"
    )
    # Given with --mq-broker-metrics-url (no stomp_port): taken as it is, e.g. behind a port mapping.
    assert RabbitManagement("http://127.0.0.1:15672", "guest", "guest").broker() == {"alarms": []}


def answering(status: int, body: bytes = b"{}") -> Callable[..., requests.Response]:
    def get(url: str, **kwargs: Any) -> requests.Response:
        response = requests.Response()
        response.status_code, response._content, response.url = status, body, url
        return response

    return get


def test_refused_credentials_are_one_line_without_the_password() -> None:
    source = RabbitManagement("http://guest:s3cret@127.0.0.1:15672/", "guest", "s3cret")
    source._session.get = answering(401)  # type: ignore[method-assign]
    with pytest.raises(MetricsError) as refused:
        source.broker()
    assert str(refused.value) == "RabbitMQ management at http://127.0.0.1:15672 refused the credentials (user guest)"


def test_other_answers_of_the_management_api() -> None:
    source = RabbitManagement("http://127.0.0.1:15672", "watcher", "pw")
    source._session.get = answering(404)  # type: ignore[method-assign]
    assert source.destination("/queue/gone") == {}
    assert source.destination("/topic/nobody") == {}
    source._session.get = answering(403)  # type: ignore[method-assign]
    with pytest.raises(MetricsError, match=r"refused user watcher access to /api/overview \(HTTP 403\)"):
        source.broker()
    source._session.get = answering(200, b"<html>")  # type: ignore[method-assign]
    with pytest.raises(MetricsError, match="did not answer /api/overview with JSON"):
        source.broker()


def test_an_unreachable_management_api_is_one_line() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = RabbitManagement(f"http://127.0.0.1:{port}", "guest", "guest", timeout=2)
    with pytest.raises(MetricsError) as failed:
        source.broker()
    assert str(failed.value) == f"RabbitMQ management at http://127.0.0.1:{port} is unreachable (Connection refused)"


# -------------------------------------------------------------------------- JVM


def test_jstat_gc_output_becomes_heap_and_gc_figures() -> None:
    assert jvm.parse_jstat_gc(sample("jstat-gc.txt")) == {
        "heap_used_mb": (4564.5 + 6144.0 + 13268.5) / 1024,  # S1U + EU + OU, KB
        "heap_committed_mb": (6144.0 + 323584.0 + 194560.0) / 1024,  # S0C + S1C + EC + OC
        "gc_count": 1999 + 2,  # young + concurrent cycles
        "gc_seconds": 2.892,
    }


def test_jstat_gc_of_a_collector_without_concurrent_cycles() -> None:
    output = (
        " S0C    S1C    S0U    S1U      EC       EU        OC         OU       MC     MU    CCSC   CCSU   YGC     YGCT"
        "    FGC    FGCT     CGC    CGCT     GCT\n"
        "1024.0 1024.0  0.0   512.0  8192.0   4096.0   20480.0    10240.0  4864.0 4500.0 512.0  400.0      3    0.010"
        "   1      0.020     -          -    0.030\n"
    )
    assert jvm.parse_jstat_gc(output) == {
        "heap_used_mb": (512 + 4096 + 10240) / 1024,
        "heap_committed_mb": (1024 + 1024 + 8192 + 20480) / 1024,
        "gc_count": 4,
        "gc_seconds": 0.03,
    }


def test_jcmd_perf_counters_give_the_same_figures() -> None:
    # Recorded from the same JVM a moment apart, without a collection in between.
    jstat, jcmd = jvm.parse_jstat_gc(sample("jstat-gc.txt")), jvm.parse_perf_counters(sample("jcmd-perfcounter.txt"))
    assert jcmd["gc_count"] == jstat["gc_count"]
    for key in ("heap_used_mb", "heap_committed_mb", "gc_seconds"):
        assert jcmd[key] == pytest.approx(jstat[key], abs=0.01)  # type: ignore[literal-required]


def test_proc_stat_and_status() -> None:
    stat = "4242 (java (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 57 0 123 0 0"
    assert jvm.parse_stat_cpu_ticks(stat) == 325
    assert jvm.parse_status_threads("Name:\tjava\nThreads:\t57\n") == 57


def test_a_pid_that_does_not_exist_is_an_error() -> None:
    with pytest.raises(MetricsError, match="no process 999999999 on this host"):
        JvmProbe(999_999_999)


def test_without_jstat_and_jcmd_the_error_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(jvm.glob, "glob", lambda pattern: [])
    with pytest.raises(MetricsError, match=r"install a JDK, e\.g\. `apt-get install default-jdk-headless`"):
        JvmProbe(os.getpid())

"""``mqusers cluster-compare``: its command lines, the figures it reads, its table, bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mqusers.commands import cluster, hops
from mqusers.commands.cluster import Config, Plan, failover_figures, markdown, scheme_figures
from mqusers.commands.grids import Steady
from mqusers.options.parsing import OptionError


def _plan(tmp_path: Path) -> Plan:
    steady = Steady(warmup_seconds=4, steady_after=2, seconds=10, messages=1000, repeats=3)
    return Plan(Path("/scenarios"), "646", steady, 200.0, 20.0, 5.0, tmp_path, ("--mq-drain-idle", "3"))


def _value(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_each_scheme_is_one_producer_one_subscriber_on_a_topic(tmp_path: Path) -> None:
    plan, config = _plan(tmp_path), Config("pair", "stomp://a:1,stomp://b:2", "true")
    for scheme, (_, locustfile, persistent, durable) in cluster.SCHEMES.items():
        command = plan.throughput(scheme, config, tmp_path / "r.json", 50.0)
        assert command[:3] == [sys.executable, "-m", "locust"] and _value(command, "-f") == f"/scenarios/{locustfile}"
        assert (_value(command, "-u"), _value(command, "--mq-consumers"), _value(command, "--host")) == (
            "2", "1", "stomp://a:1,stomp://b:2")  # fmt: skip
        assert _value(command, "--mq-destination").startswith(f"/topic/mqusers.cluster.pair.{scheme}.")
        assert (_value(command, "--mq-persistent"), _value(command, "--mq-durable")) == (
            str(persistent).lower(), str(durable).lower())  # fmt: skip
        # Unpaced, its first 2 s left out, then 1,000 messages at the warm-up's 50 msg/s: 20 s, over --seconds.
        assert (_value(command, "--mq-rate"), _value(command, "--mq-warmup"), _value(command, "-t")) == (
            "0",
            "2",
            "22s",
        )
        assert "--mq-total-messages" not in command and command[-2:] == ["--mq-drain-idle", "3"]
        warmup = plan.warmup(scheme, config, tmp_path / "w.json")
        assert (_value(warmup, "-t"), _value(warmup, "--mq-rate")) == ("4s", "0") and "--mq-warmup" not in warmup
    failover = plan.failover_run(config, tmp_path / "f.json")
    assert (_value(failover, "--mq-receipts"), _value(failover, "--mq-fault"), _value(failover, "-t")) == (
        "true", "5s:true", "20s")  # fmt: skip
    assert _value(failover, "--mq-durable") == "true" and _value(failover, "--mq-total-rate") == "200"


def test_the_table_reads_the_run_reports() -> None:
    throughput = {"destinations": [{"destination": "/topic/t", "receive_rate_msgs": 4321.5, "receive_rate_mbit": 22.3,
                                    "sent": 10, "received": 10, "lost": 0, "latency_ms": {"p99": 1.5}}]}  # fmt: skip
    failover = {
        "destinations": [{"lost": 0, "unconfirmed": 2, "after_reconnect": 7}],
        "failover": {"worst_window_ms": 2345.6, "destinations": [
            {"reconnect_max_ms": 2000.0, "after_ready_max_ms": 300.0, "unrecovered": 0}]},
        "faults": [{"exit_code": 0}],
    }  # fmt: skip
    figures = failover_figures(failover)
    assert (figures["window_ms"], figures["reconnect_ms"], figures["unconfirmed"], figures["dup_after_reconnect"]) == (
        2345.6, 2000.0, 2, 7)  # fmt: skip
    assert scheme_figures(throughput)["destination"] == "/topic/t"
    cell = {"msgs": 4321.5, "msgs_interval": [4000.0, 4500.0], "runs": [scheme_figures(throughput)]}
    rows = [{"config": "single", "schemes": {"nonpersistent": cell, "persistent": cell, "durable": cell},
             "noise": [["nonpersistent", "persistent"]], "failover": figures},
            {"config": "pair", "schemes": {}, "failover": None}]  # fmt: skip
    table = markdown(rows).splitlines()
    assert table[0].split(" | ")[4] == "≈ noise"
    cells = " | ".join(["4,322 (4,000-4,500)"] * 3)
    noise = "non-persistent, non-durable ≈ persistent, non-durable"
    assert table[2] == f"| single | {cells} | {noise} | 2,346 | 2,000 | 0 | 2 | 7 |"
    assert table[3] == "| pair | - | - | - | - | - | - | - | - | - |"
    # A kill no client felt (a network's broker between the producers' and the subscriber's): no window, no
    # reconnect to time, not a reconnect of 0 ms.
    unfelt = failover_figures({**failover, "failover": {"worst_window_ms": None, "destinations": [
        {"reconnect_max_ms": None, "after_ready_max_ms": None, "unrecovered": 0}]}})  # fmt: skip
    assert (unfelt["window_ms"], unfelt["reconnect_ms"], unfelt["after_ready_ms"]) == (None, None, None)
    assert markdown([{"config": "net3", "schemes": {}, "failover": unfelt}]).splitlines()[2].endswith(
        "| - | - | 0 | 2 | 7 |")  # fmt: skip


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "at least one configuration"),
        (["--config", "single"], "use NAME=URL"),
        (["--config", "a b=stomp://h:1"], "use NAME=URL"),
        (["--config", "x=http://h:1"], "--config x: "),
        (["--config", "x=stomp://h:1", "--failover", "y=true"], "--failover y: no --config of that name"),
        (["--config", "x=stomp://h:1", "--failover", "x=no-such-tool --now"], "no such executable command"),
        (["--config", "x=stomp://h:1", "--schemes", "fast"], "--schemes: fast unknown"),
        (["--config", "x=stomp://h:1", "--fault-at", "40"], "--fault-at within --failover-seconds"),
        (["--config", "x=stomp://h:1", "--repeats", "0"], "--messages and --repeats: at least 1"),
        (["--config", "x=stomp://h:1", "--warmup-seconds", "0"], "--warmup-seconds positive"),
    ],
)
def test_bad_input_gets_one_line_and_exit_2(args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cluster.main(args) == 2
    error = capsys.readouterr().err
    assert error.startswith("mqusers cluster-compare: ") and says in error and error.count("\n") == 1


def test_a_network_configuration_puts_its_subscribers_elsewhere_and_its_rows_say_what_the_hop_adds(
    tmp_path: Path,
) -> None:
    consumers = cluster._consumers(["net2=stomp://127.0.0.1:61642  stomp://127.0.0.1:61644"])
    assert consumers == {"net2": "stomp://127.0.0.1:61642 stomp://127.0.0.1:61644"}
    config = cluster._config("net2=stomp://127.0.0.1:61640", {}, consumers)
    plan = Plan(tmp_path, "646", Steady(4.0, 1.0, 2.0, 100, 3), 200.0, 20.0, 5.0, tmp_path, (), 1_000.0)
    paced = plan.latency(config, tmp_path / "l.json")
    assert _value(paced, "--mq-consumer-host") == "stomp://127.0.0.1:61642 stomp://127.0.0.1:61644"
    assert (_value(paced, "--mq-total-rate"), _value(paced, "-t"), _value(paced, "--mq-persistent")) == (
        "1000", "3s", "false")  # fmt: skip
    single = cluster._config("single=stomp://127.0.0.1:61613", {}, {})
    assert "--mq-consumer-host" not in plan.latency(single, tmp_path / "s.json")
    with pytest.raises(OptionError, match="--consumers-at net2: 'http://b:1' has scheme 'http'"):
        cluster._consumers(["net2=http://b:1"])
    report = {"destinations": [{"received": 10_000, "lost": 0, "latency_ms": {"p50": 0.3, "p99": 1.2}}]}
    runs = [hops.run_figures(report), {**hops.run_figures(report), "p50_ms": 0.5}, hops.run_figures(report)]
    rows = [{"config": "single", "schemes": {}, "latency": hops.measured(runs[:1], 1_000.0)},
            {"config": "net2", "schemes": {}, "latency": hops.measured(runs, 1_000.0)},
            {"config": "none", "schemes": {}, "latency": hops.measured([], 1_000.0)}]  # fmt: skip
    hops.with_hops(rows)
    table = markdown(rows, 1_000.0).splitlines()
    assert table[0].split(" | ")[5:7] == ["p50 ms at 1,000 msg/s", "p99 ms at 1,000 msg/s"]
    assert table[3].split(" | ")[5:7] == ["0.300 (+0.000)", "1.200 (+0.000)"]  # the median of 0.3, 0.5, 0.3
    assert table[2].split(" | ")[5:7] == ["0.300", "1.200"] and table[4].split(" | ")[5:7] == ["-", "-"]
    assert hops.run_figures({"destinations": [{"received": 0, "latency_ms": {}}]}) is None

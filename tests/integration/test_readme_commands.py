"""Every command README.md and docs/*.md show runs, as written, with short durations (their own text is read).

A command is run with only these changes: durations shortened (``-t``, ``--mq-warmup``, a repeat's
count, find-max's and curve's ``--warmup``/``--window``/``--budget``/``--percents``, the matrix's
``--messages``/``--sizes``/``--repeats``/``--seconds``...),
optional ``[...]`` parts left out, files written under the test's folder, ``MASTER`` and
``BROKER`` this machine, the ports a parallel test could hold chosen free. Which test runs which
command, and the commands not run here with the reason, are listed in tests/doccommands.py;
tests/unit/test_docs.py fails on a shown command in neither list.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

import services
from tests.doccommands import RUN_HERE, shown_commands, why_not_run
from tests.integration.broker_stats import wait_for
from tests.integration.brokers import started
from tests.integration.locust_runs import ROOT, free_port
from tests.integration.web_ui import answers

BIN = str(Path(sys.executable).parent)


def short(command: str, tmp_path: Path) -> str:
    """The README's command with short durations and its files under ``tmp_path``."""
    command = re.sub(r"\s*\[[^\]]*\]", "", command)  # optional parts
    command = re.sub(r" -t \d+[sm]\b", " -t 4s", command)
    command = re.sub(r" --mq-warmup \d+", " --mq-warmup 1", command)  # within the 4 s
    command = re.sub(r"(--mq-report-json|--mq-report-html|--mq-report-csv|--json|--html) (\S+)", rf"\1 {tmp_path}/\2",
                     command)  # fmt: skip
    command = re.sub(r"--mq-baseline (\S+)", rf"--mq-baseline {tmp_path}/\1", command)
    command = re.sub(r"^mqusers compare (\S+) (\S+)", rf"mqusers compare {tmp_path}/\1 {tmp_path}/\2", command)
    command = re.sub(r"^mqusers report ((?:\S+\.json )+)", lambda m: "mqusers report " + " ".join(
        f"{tmp_path}/{name}" for name in m.group(1).split()) + " ", command)  # fmt: skip
    # A results folder, and the folder a trend is drawn from, under the test's folder too.
    command = re.sub(r"(--results|--mq-results) (\S+)", rf"\1 {tmp_path}/\2", command)
    command = re.sub(r"^mqusers report (reports/\S+)", rf"mqusers report {tmp_path}/\1", command)
    command = re.sub(r"^mqusers repeat \d+", "mqusers repeat 2", command)
    if command.startswith("mqusers find-max"):
        command += " --warmup 1 --window 2 --budget 10"
    if command.startswith("mqusers curve"):
        command += " --warmup 1 --window 2 --percents 50"
    if command.startswith("mqusers matrix"):
        command = re.sub(r" --messages \d+", "", command) + " --messages 200 --sizes 1KB --out " + str(tmp_path / "m")
        command += " --repeats 1 --warmup-seconds 1 --seconds 1 --steady-after 0.5"  # the last of an option wins
        if "--modes" not in command:  # the seed grid's three modes run in test_matrix: one here, in CI's time
            command += " --modes queue"
    return command.replace("MASTER", "127.0.0.1").replace("BROKER", "127.0.0.1")


def run(command: str, tmp_path: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def ran_well(command: str, tmp_path: Path) -> str:
    """The shown ``command``, shortened, run to exit 0: its output with the summary's wrapping undone."""
    done = run(short(command, tmp_path), tmp_path)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, output[-3000:]
    return output


def commands_starting(prefix: str) -> list[str]:
    """The shown commands (any page) that start with ``prefix``, one of :data:`RUN_HERE`'s."""
    assert any(prefix.startswith(run) or run.startswith(prefix) for run in RUN_HERE), prefix
    found = [command for _, command in shown_commands() if command.startswith(prefix)]
    assert found, f"no page shows a command starting {prefix!r}"
    return found


@pytest.mark.alone  # the demo's 9,000 deliveries a second are blocked by flow control beside three other tests
@pytest.mark.activemq
def test_make_demo_and_the_headless_example_and_mqusers_report(tmp_path: Path) -> None:
    started("activemq")
    demo = run("make demo DEMO_SECONDS=8", tmp_path)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "mqusers summary: run " in demo.stdout + demo.stderr
    [headless] = commands_starting("locust -f locustfiles/queue_balance.py --host")
    done = run(short(headless, tmp_path), tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"files written: {tmp_path}/report.json" in " ".join((done.stdout + done.stderr).split())
    for name in ("before.json", "after.json"):  # the README compares two runs' reports
        shutil.copy(tmp_path / "report.json", tmp_path / name)
    for command in commands_starting("mqusers report before.json"):
        shown = run(short(command, tmp_path), tmp_path)
        assert shown.returncode == 0 and (tmp_path / "compare.html").stat().st_size > 0, shown.stderr


@pytest.mark.activemq
def test_the_compare_examples_run(tmp_path: Path) -> None:
    """docs/compare.md's two runs (8 s each: 6 s measured after the 2 s warm-up) and their comparison's outputs."""
    started("activemq")
    for command in commands_starting("locust -f locustfiles/put_get.py --headless"):
        done = run(short(command, tmp_path).replace(" -t 4s", " -t 8s"), tmp_path)
        output = done.stdout[-3000:] + done.stderr[-3000:]
        if "--mq-baseline" in command:  # the gate against base.json: passes, or fails naming its figure
            if done.returncode == 2:
                # A base run whose generator was contended (this test shares the cores with others: seen in CI) is
                # refused as a baseline in one line, as docs/compare.md says; the gate itself is then run anyway.
                assert "is not a baseline: " in output and output.count("mqusers: --mq-baseline") == 1, output
                command = command + " --mq-baseline-unfit true"
                done = run(short(command, tmp_path).replace(" -t 4s", " -t 8s"), tmp_path)
                output = done.stdout[-3000:] + done.stderr[-3000:]
            assert done.returncode == 0 or (done.returncode == 3 and "than --mq-baseline by" in output), output
        else:
            assert done.returncode == 0, output
    [compare] = commands_starting("mqusers compare base.json")
    output = ran_well(compare, tmp_path)
    figures = json.loads((tmp_path / "compare.json").read_text())["operations"]["receive /queue/mqusers.putget"]
    assert sorted(figures) == ["p50", "p90", "p99", "p99.9", "throughput"]
    # Family-wise by default: each interval at 95 % spread over the figures judged (docs/compare.md).
    assert re.search(r"receive /queue/mqusers\.putget base new difference \([0-9.]+ % interval\) verdict", output)
    assert "verdicts: " in output and "family-wise" in output
    assert "note: one run a side" in output and (tmp_path / "compare.html").stat().st_size > 0


@pytest.mark.activemq
def test_the_web_ui_examples_serve_the_ui(tmp_path: Path) -> None:
    started("activemq")
    for command in [*commands_starting("locust -f locustfiles/pubsub.py --host"),
                    *commands_starting('locust -f "$(mqusers locustfiles)/pubsub.py"')]:  # fmt: skip
        port = free_port()
        env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
        ui = subprocess.Popen(["bash", "-c", f"exec {command} --web-port {port}"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        try:
            assert wait_for(partial(answers, port), timeout=30), f"{command}: no web UI on {port} within 30 s"
        finally:
            ui.send_signal(signal.SIGTERM)
            output, _ = ui.communicate(timeout=30)
        assert ui.returncode == 0, output[-3000:]


@pytest.mark.activemq
def test_your_broker_example_runs_over_tls_with_its_passcode_from_a_file(tmp_path: Path) -> None:
    """The README's "your broker": TLS verified against the local ActiveMQ's own certificate, the login from the
    environment, the passcode from a file (the local broker's account); the passcode in no line printed."""
    started("activemq")
    [command] = commands_starting("LOCUST_MQ_USER=loadtest")
    (tmp_path / "broker-pass").write_text(services.activemq.PASSWORD)
    command = (short(command, tmp_path).replace("LOCUST_MQ_USER=loadtest", f"LOCUST_MQ_USER={services.activemq.USER}")
               .replace("LOCUST_MQ_PASSWORD_FILE=broker-pass", f"LOCUST_MQ_PASSWORD_FILE={tmp_path}/broker-pass")
               .replace("--mq-ca-file broker-ca.pem", f"--mq-ca-file {services.certificate('activemq')}")
               .replace(":61612 ", f":{services.PORTS['activemq']['stomp_ssl']} "))  # fmt: skip
    output = ran_well(command, tmp_path)
    assert "mqusers summary: run " in output and "at stomp+ssl://127.0.0.1:" in output, output[-3000:]
    assert services.activemq.PASSWORD not in output


@pytest.mark.activemq
def test_the_many_destinations_example_runs(tmp_path: Path) -> None:
    started("activemq")
    [command] = commands_starting("locust -f locustfiles/put_get.py --mq-destination")
    output = ran_well(command, tmp_path)
    assert "/queue/orders.{0..999}: 1,000 destinations, 1,000 sent to, 1,000 subscribed" in output, output[-3000:]
    with (tmp_path / "orders.csv").open(encoding="utf-8") as lines:
        assert sum(1 for _ in lines) == 1 + 1 + 1_000  # the header, the pattern's row, a line per destination


@pytest.mark.activemq
def test_the_churn_example_runs(tmp_path: Path) -> None:
    started("activemq")
    [command] = commands_starting("locust -f locustfiles/churn.py --host")
    output = ran_well(command, tmp_path)
    found = re.search(r"connections: ([\d,]+) opened .*?, 0 failed; .* open files (\d+) at the start, (\d+) at the end",
                      output)  # fmt: skip
    assert found and int(found[1].replace(",", "")) > 200 and found[2] == found[3], output[-3000:]


@pytest.mark.activemq
def test_the_transactions_example_runs(tmp_path: Path) -> None:
    started("activemq")
    [command] = commands_starting("locust -f locustfiles/transactions.py --host")
    output = ran_well(command, tmp_path)
    found = re.search(r"transactions: [\d,]+ ended \([\d.,]+/s\): ([\d,]+) committed, ([\d,]+) aborted, 0 COMMIT",
                      output)  # fmt: skip
    assert found and int(found[2].replace(",", "")) > 0, output[-3000:]
    # Every 4th aborted: within one of a quarter of those ended (the last may be cut by the stop).
    ended = int(found[1].replace(",", "")) + int(found[2].replace(",", ""))
    assert abs(int(found[2].replace(",", "")) - ended // 4) <= 1, output[-3000:]
    assert "audit: nothing lost" in output and "<h3>Transactions</h3>" in (tmp_path / "transactions.html").read_text()


@pytest.mark.activemq
def test_the_distributed_example_runs_and_ends(tmp_path: Path) -> None:
    started("activemq")
    [master] = commands_starting("locust -f locustfiles/queue_balance.py --master")
    [worker] = commands_starting("locust -f locustfiles/queue_balance.py --worker")
    port = free_port()
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    popen = {"cwd": ROOT, "env": env, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    boss = subprocess.Popen(["bash", "-c", f"exec {short(master, tmp_path)} --master-bind-port {port}"], **popen)  # type: ignore[call-overload]
    hands = [subprocess.Popen(["bash", "-c", f"exec {short(worker, tmp_path)} --master-port {port}"], **popen)  # type: ignore[call-overload]
             for _ in range(2)]  # fmt: skip
    try:
        output, _ = boss.communicate(timeout=120)
    finally:
        for process in [boss, *hands]:
            if process.poll() is None:
                process.kill()
        for hand in hands:
            hand.communicate(timeout=30)
    assert boss.returncode == 0, output[-3000:]
    assert "mqusers summary: run " in output and "audit: nothing lost" in output, output[-3000:]
    # Without workers the master gives up after --expect-workers-max-wait instead of waiting for ever.
    assert "--expect-workers-max-wait" in shlex.split(master)


@pytest.mark.activemq
@pytest.mark.alone  # find-max and curve verdicts are rates
def test_the_capacity_examples_run(tmp_path: Path) -> None:
    started("activemq")
    for command in [*commands_starting("mqusers find-max -f locustfiles/"),
                    *commands_starting("mqusers curve -f locustfiles/"),
                    *commands_starting("mqusers report find-max.json")]:  # fmt: skip
        done = run(short(command, tmp_path), tmp_path)
        if command.startswith("mqusers find-max") and done.returncode == 1:
            # This machine's two cores carry the broker too, and its hypervisor steals some of them: the generator
            # may lag past 5 ms at the first steps. find-max then says no rate was kept up, that the machine was the
            # limit, not the broker, and exits 1 (docs/capacity.md), its JSON written: the command ran as shown.
            found = json.loads((tmp_path / "find-max.json").read_text())
            assert (found["max_rate"], found["limit"]) == (None, "machine"), done.stdout[-3000:]
            assert "limit: machine, not the broker" in done.stdout, done.stdout[-3000:]
            continue
        if command.startswith("mqusers curve") and done.returncode == 1:
            # The same machine may keep no point up: curve then says so and exits 1, its JSON written.
            curve = json.loads((tmp_path / "curve.json").read_text())
            assert curve["kept_up"] is None and "headline: no point kept up" in done.stdout, done.stdout[-3000:]
            continue
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    assert (tmp_path / "capacity.html").stat().st_size > 0


@pytest.mark.activemq
def test_the_repeat_and_history_examples_run(tmp_path: Path) -> None:
    """Two short runs repeated into a results folder, a single run kept in it too, and the folder's trend page."""
    started("activemq")
    shown = ("mqusers repeat ", "locust -f locustfiles/pubsub.py --headless", "mqusers report reports/")
    for command in [command for prefix in shown for command in commands_starting(prefix)]:
        done = run(short(command, tmp_path), tmp_path)
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    summary = json.loads((tmp_path / "repeat.json").read_text())
    assert [run["counted"] for run in summary["runs"]] == [True, True] and summary["operations"]
    assert len(list((tmp_path / "reports" / "nightly").glob("*.json"))) == 2 + 1  # the repeat's, the single run's
    assert (tmp_path / "repeat.html").stat().st_size > 0 and (tmp_path / "trend.html").stat().st_size > 0


@pytest.mark.activemq
@pytest.mark.alone  # 1 s cells with a 0.5 s drain; queue names by the second
def test_the_matrix_examples_run(tmp_path: Path) -> None:
    started("activemq")
    shortened: set[str] = set()
    for command in commands_starting("mqusers matrix --"):
        if why_not_run(command):
            continue
        # The seed grid, shortened, is the one-size queue example (its other modes and sizes run in test_matrix):
        # one run of the two, less its host and rate, is the same question asked once.
        options = dict(re.findall(r"(--[\w-]+) (\S+)", short(command, tmp_path)))  # the last of an option wins
        asked = " ".join(sorted(f"{k} {v}" for k, v in options.items() if k not in ("--host", "--rate", "--json")))
        if asked in shortened:
            continue
        shortened.add(asked)
        done = run(short(command, tmp_path), tmp_path)
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        modes = re.search(r"--modes (\S+)", command)
        assert f"### {modes.group(1) if modes else 'queue'}" in done.stdout
        assert "Warm-up: each cell ran 1 s first on each configuration, left out." in done.stdout


@pytest.mark.activemq
def test_the_put_get_examples_run(tmp_path: Path) -> None:
    """The payload and the rate-profile examples (sizes from a CSV too): each says what it sent, nothing lost."""
    started("activemq")
    profile = "steps:1000/5s,3000/5s,6000/5s"
    sized = "csv:locustfiles/profiles/sizes.csv"
    says = {"--mq-payload json --mq-size 2KB": "2,048 B json messages",
            f"--mq-profile {profile}": f"profile {profile} asked in all",
            f"--mq-profile {sized}": "200-4,096 B printable messages (sizes from the profile)"}  # fmt: skip
    commands = commands_starting("locust -f locustfiles/put_get.py --host")
    assert len(commands) == len(says) and all(any(key in c for c in commands) for key in says)
    for command in commands:
        output = ran_well(command, tmp_path)
        assert "audit: nothing lost" in output and all(said in output for key, said in says.items() if key in command)


@pytest.mark.activemq
@pytest.mark.alone  # 10,000 unpaced sends must finish inside -t 4s
def test_the_backlog_example_runs(tmp_path: Path) -> None:
    """-t 4s ends the run within its 5 s build: the switch is the run's end, its drain the backlog's; the paced
    drain's 10,000 messages are sent at once and drained at 2,000 msg/s."""
    started("activemq")
    commands = commands_starting("locust -f locustfiles/backlog.py --host")
    assert len(commands) == 2
    for command in commands:
        output = ran_well(command, tmp_path)
        assert "audit: nothing lost" in output
        if "--mq-backlog-drain-rate 2000" in command:
            assert "(messages sent), emptied in" in output and "paced at 2,000 msg/s" in output
        else:
            assert "(the run ended), emptied in" in output
            assert "Backlog: build, then drain" in (tmp_path / "backlog.html").read_text()


@pytest.mark.activemq
def test_the_selectors_example_runs(tmp_path: Path) -> None:
    """--mq-select L0: L1's messages are not selected, nothing is lost."""
    started("activemq")
    for command in commands_starting("locust -f locustfiles/selectors.py --host"):
        output = ran_well(command, tmp_path)
        assert "not-selected" in output and "selector-violations" not in output, output[-3000:]
        # The audit's lost column, after its heading (Locust's tables have rows of zeros for the destination too).
        assert re.search(r"not-selected /queue/mqusers\.selectors +0 ", output), output[-3000:]


@pytest.mark.activemq
def test_the_groups_example_runs(tmp_path: Path) -> None:
    """Four groups, three consumers: no group with two consumers at once, nothing lost."""
    started("activemq")
    for command in commands_starting("locust -f locustfiles/groups.py --host"):
        output = ran_well(command, tmp_path)
        assert "message groups delivered, 0 of them to two consumers at once" in output, output[-3000:]
        assert "audit: nothing lost" in output, output[-3000:]


@pytest.mark.activemq
@pytest.mark.alone  # a delivery 50 ms after its time to live counts as expired
def test_the_expiry_example_runs(tmp_path: Path) -> None:
    """A backlog with a 1 s TTL: what waited longer expired, by the audit's count and the broker's; none lost."""
    started("activemq")
    for command in commands_starting("locust -f locustfiles/expiry.py --host"):
        output = ran_well(command, tmp_path)
        # The audit's row, after its heading (Locust's tables have rows of zeros for the destination too).
        found = re.search(r"redeliv expired /queue/mqusers\.expiry +0 +0 +0 +0 +0 +0 +0 +([\d,]+) ", output)
        assert found and int(found.group(1).replace(",", "")) > 0, output[-3000:]
        assert "expired against expired" in output and "dlv-expired" not in output, output[-3000:]


@pytest.mark.activemq
def test_the_nack_example_runs(tmp_path: Path) -> None:
    """One in ten NACKed: ActiveMQ dead-letters each, nothing is lost and the broker's dequeued agrees."""
    started("activemq")
    (command,) = commands_starting("locust -f locustfiles/nack.py --host")
    output = ran_well(command, tmp_path)
    assert "dead-lettered" in output and "the broker's counts agree" in output, output[-3000:]
    # The audit's lost column, after its heading (Locust's tables have rows of zeros for the destination too).
    assert re.search(r"dead-lettered /queue/mqusers\.nack +0 ", output), output[-3000:]


@pytest.mark.activemq
def test_the_priority_example_runs(tmp_path: Path) -> None:
    """2,000 built on a prioritized queue (mqusers.prio.*), drained by one consumer: none inverted."""
    started("activemq")
    for command in commands_starting("locust -f locustfiles/priority.py --host"):
        output = ran_well(command, tmp_path)
        assert "priority: 0 inversions in 2,000 deliveries" in output, output[-3000:]


@pytest.mark.activemq
def test_the_hdr_log_examples_run(tmp_path: Path) -> None:
    """The run writes its log; HdrHistogram's own processor lists its tags and re-cuts the receive latency."""
    started("activemq")
    (locust,) = commands_starting("locust -f locustfiles/put_get.py --mq-hdr-log")
    in_tmp = {" run.hlog": f" {tmp_path}/run.hlog", "-o receive": f"-o {tmp_path}/receive"}

    def here(command: str) -> str:
        for shown, written in in_tmp.items():
            command = command.replace(shown, written)
        return command

    output = ran_well(here(locust), tmp_path)
    assert "audit: nothing lost" in output, output[-3000:]
    listed, recut = commands_starting('java -cp "$(python -m services hdr-jar)"')
    assert "receive%20/queue/hdr" in ran_well(here(listed), tmp_path).split()
    ran_well(here(recut), tmp_path)
    total = re.search(r"Total count += +(\d+)", (tmp_path / "receive.hgrm").read_text())
    assert total and int(total.group(1)) > 0

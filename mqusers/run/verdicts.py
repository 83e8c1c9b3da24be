"""The generator's verdict: each second classified, a process's and the run's verdict, and their words.

The run's ``generator`` section (:class:`Generator`, :func:`overall`) is built here from each
process's :class:`HealthReport` (:mod:`mqusers.run.health` watches the process).

Which component limits the figures, from what each load process saw each second
(:mod:`mqusers.run.health`) and how late the broker's answers were:

- ``saturated``: the loop ran late (lag >= ``LAG_LATE_MS``) while the process used a core
  (CPU >= ``CPU_SATURATED`` % of one; gevent runs on one), wanted one and ran more than it waited,
  or was held by its own work (a lag its wait for a core does not explain): the generator itself is
  the limit.
- ``contended``: the loop ran late while the process used less than a core, and its wait for a
  core explains the lag: other processes (a broker on the same host, other jobs, the hypervisor's
  steal) had the CPU.
- ``broker-slow``: every loop kept time, yet the broker's answers were late (receive, receipt or
  request p99 >= ``BROKER_LATE_MS``) or it blocked producers: the figures are the broker's.
- ``ok``: none of these.

A process is ``saturated`` after ``LATE_SECONDS`` saturated seconds, else ``contended`` after as
many late seconds; the run takes its worst process, or ``broker-slow`` when all are ``ok``.
:data:`WORDS` is the one table of what each verdict means and what to do: the console, the JSON,
the web UI and the HTML report all say :func:`sentence`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypedDict

from mqusers.measure.book import Tally, value_at
from mqusers.measure.names import (
    RECEIPT,
    RECEIVE,
    RECEIVE_BACKLOG,
    RECEIVE_NEW,
    REQUEST,
    destination_operation,
    event_name,
)

CPU_SATURATED = 90.0
LAG_LATE_MS = 20.0
LATE_SECONDS = 3
BROKER_LATE_MS = 20.0
#: Worst last: the run's verdict is the worst of its processes'.
VERDICTS = ("ok", "broker-slow", "contended", "saturated")
#: Operations the broker answers: late ones while the generator keeps time are the broker's.
BROKER_TIMED = (RECEIVE, RECEIVE_NEW, RECEIPT, REQUEST)

#: verdict -> (what happened, what to do). Filled in by :func:`sentence` from the figures.
WORDS = {
    "ok": ("the generator kept time (CPU max {cpu:.0f} % of a core, loop lag max {lag:.1f} ms)", ""),
    "saturated": (
        "the load generator ({node}) is saturated: its own work held its loop up to {lag:.0f} ms late ({late}), "
        "at up to {cpu:.0f} % of a core: latency figures of this period are the generator's, not the broker's",
        "add processes (--processes) or workers, or lower the rate",
    ),
    "contended": (
        "the machine is contended: the generator's loop ({node}) ran up to {lag:.0f} ms late ({late}) while it "
        "used only {cpu:.0f} % of a core{machine}: other processes (a broker on the same host, other jobs) or "
        "the hypervisor had the CPU; latency figures of this period include the generator's wait for it",
        "give the generator cores or a machine of its own (more processes on these cores will not help), "
        "or lower the rate",
    ),
    "broker-slow": (
        "the broker is the limit: {broker} while the generator kept time (loop lag max {lag:.1f} ms, CPU max "
        "{cpu:.0f} % of a core): the latency is the broker's (or the network's), not the generator's",
        "look at the broker (its CPU, store, flow control) or lower the rate",
    ),
}


class BlockedReport(TypedDict):
    episodes: int
    longest_s: float
    blocked_now: int
    #: When a producer was last seen blocked (epoch s): its sends were still under way until then.
    until_s: float


class HealthReport(TypedDict):
    """One process's figures, shipped to the master and shown in the report's ``generator`` section.

    The ``late_*``, machine, steal and wait figures are maxima over its late seconds (loop lag at or
    above :data:`LAG_LATE_MS`); None when none was late or ``/proc`` is missing.
    """

    node: str
    cpu_percent_max: float
    #: Over the process's measured seconds: its whole cost, where the maximum is its worst second.
    cpu_percent_mean: float
    #: Peak resident memory, MB (None: unknown).
    rss_mb_max: float | None
    loop_lag_ms_max: float
    loop_lag_ms_p99: float
    seconds: int
    saturated_s: int
    contended_s: int
    late_cpu_percent_max: float | None
    machine_cpu_percent_max: float | None
    steal_percent_max: float | None
    cpu_wait_ms_max: float | None
    verdict: str
    blocked: dict[str, BlockedReport]
    #: Sends stalled with nothing acknowledged by the broker's host (a partition): not the broker's doing.
    stalled: dict[str, BlockedReport]
    #: Open file descriptors at the test's start and once its Users were gone (None: unknown).
    open_files_start: int | None
    open_files_end: int | None


class Generator(TypedDict):
    """The run's ``generator`` section (the JSON report's): the verdict (:data:`VERDICTS`), its one
    sentence (:func:`sentence`), what showed the broker late when the verdict is ``broker-slow`` (else
    None), the worst process's CPU (% of a core) and loop lag (ms), every process's figures."""

    verdict: str
    sentence: str
    broker: str | None
    cpu_percent_max: float
    loop_lag_ms_max: float
    processes: dict[str, HealthReport]
    #: The master's own figures in a distributed run (None otherwise): it runs no load, so its lateness is
    #: no figure's, but a saturated master merges late and hears heartbeats late (workers marked missing).
    master: HealthReport | None


def second(cpu_percent: float, lag_ms: float, wait_ms: float | None = None) -> str:
    """One second of one process: ``ok``, or late and ``saturated`` or ``contended``.

    Late with a core used, it is saturated. Below that, ``wait_ms`` (its loop thread's wait for a
    core in that second, when known) says which: runnable nearly all the second and running more
    than waiting, it wanted a core of its own (saturated: on a busy machine it gets less, yet the load
    is its own); else a wait of at least half the lag explains the lateness (contended); a lag that
    waiting does not explain is its own work holding the loop (saturated). Unknown, less than a core
    is contended.
    """
    if lag_ms < LAG_LATE_MS:
        return "ok"
    if cpu_percent >= CPU_SATURATED:
        return "saturated"
    if wait_ms is None:
        return "contended"
    running_ms = cpu_percent * 10.0
    if running_ms + wait_ms >= CPU_SATURATED * 10.0 and running_ms >= wait_ms:
        return "saturated"
    return "contended" if wait_ms >= lag_ms / 2 else "saturated"


def process_verdict(saturated_s: int, contended_s: int) -> str:
    """A process's verdict from its count of saturated and contended seconds."""
    if saturated_s >= LATE_SECONDS:
        return "saturated"
    return "contended" if saturated_s + contended_s >= LATE_SECONDS else "ok"


def worst(verdicts: Iterable[str]) -> str:
    return max(verdicts, key=VERDICTS.index, default="ok")


def broker_late(p99_ms: Mapping[str, float], blocked_episodes: int) -> str | None:
    """What says the broker was late: the worst broker-timed p99 (by operation name) at or above
    ``BROKER_LATE_MS``, or producers it blocked; None when neither."""
    name, p99 = max(p99_ms.items(), key=lambda item: item[1], default=("", 0.0))
    parts = [f"{name} p99 {p99:,.1f} ms"] if p99 >= BROKER_LATE_MS else []
    if blocked_episodes:
        parts.append(f"producers blocked {blocked_episodes} time(s)")
    return ", ".join(parts) or None


def run_verdict(process_verdicts: Iterable[str], broker: str | None) -> str:
    """The run's verdict: its worst process's, or ``broker-slow`` when every loop kept time but the broker did not."""
    verdict = worst(process_verdicts)
    return "broker-slow" if verdict == "ok" and broker else verdict


def sentence(generator: Mapping[str, Any]) -> str:
    """The one line for a run's ``generator`` section (the JSON's, live or saved): what happened and what to do."""
    verdict = generator.get("verdict", "ok")
    processes = generator.get("processes", {})
    judged = [(n, p) for n, p in sorted(processes.items()) if p.get("verdict") == verdict] or sorted(processes.items())
    node, figures = judged[0] if judged else ("?", {})
    what, advice = WORDS.get(verdict, ("{verdict}", ""))
    if verdict in ("saturated", "contended"):  # the judged process's figures, CPU in its late seconds
        cpu = figures.get("late_cpu_percent_max")
        cpu, lag = figures.get("cpu_percent_max", 0.0) if cpu is None else cpu, figures.get("loop_lag_ms_max", 0.0)
    else:  # every loop kept time: the run's worst figures
        cpu = max((p.get("cpu_percent_max", 0.0) for p in processes.values()), default=0.0)
        lag = max((p.get("loop_lag_ms_max", 0.0) for p in processes.values()), default=0.0)
    machine = ""
    if figures.get("machine_cpu_percent_max") is not None:
        machine = f" (machine up to {figures['machine_cpu_percent_max']:.0f} % busy over all cores"
        if (figures.get("steal_percent_max") or 0.0) >= 1.0:
            machine += f", steal up to {figures['steal_percent_max']:.0f} %"
        if figures.get("cpu_wait_ms_max") is not None:
            machine += f"; its loop waited up to {figures['cpu_wait_ms_max']:.0f} ms a second for a core"
        machine += ")"
    late = f"{figures.get('saturated_s', 0) + figures.get('contended_s', 0)} of {figures.get('seconds', 0)} s"
    text = what.format(
        node=node, cpu=cpu, lag=lag, late=late, machine=machine, broker=generator.get("broker") or "", verdict=verdict,
    )  # fmt: skip
    return f"{verdict}: {text}" + (f"; {advice}" if advice else "")


#: verdict -> what a late master means: it runs no load, so no figure is its; its merging and heartbeats are.
MASTER_WORDS = {
    "saturated": "saturated: its own work (merging the workers' reports) held its loop, so merged figures and the "
    "workers' heartbeats ran late (a worker unheard for 4 s is marked missing); give the master a core of its own",
    "contended": "contended: other processes had its core, so merged figures and the workers' heartbeats ran late "
    "(a worker unheard for 4 s is marked missing); give the master a core of its own or fewer worker processes",
}


def master_sentence(master: Mapping[str, Any]) -> str:
    """The master's one line: what it cost over the run, and what a late master means."""
    memory = f", peak memory {master['rss_mb_max']:,.0f} MB" if master.get("rss_mb_max") is not None else ""
    mean, peak, lag = (master.get(k, 0.0) for k in ("cpu_percent_mean", "cpu_percent_max", "loop_lag_ms_max"))
    text = f"master: CPU {mean:.0f} % of a core over the run (max {peak:.0f} %){memory}, loop lag max {lag:,.1f} ms"
    verdict = master.get("verdict", "ok")
    return f"{text}; {MASTER_WORDS[verdict]}" if verdict in MASTER_WORDS else text


def broker_p99_ms(tallies: Mapping[str, Tally]) -> dict[str, float]:
    """The p99 (ms) of each operation the broker answers (receive, receipt, request), by event name."""
    p99 = {}
    for name, tally in tallies.items():
        found = destination_operation(name)
        if found is not None and found[0] == RECEIVE and event_name(RECEIVE_BACKLOG, found[1]) in tallies:
            continue  # a backlog run: this latency is mostly the backlog's age; its new messages' is the broker's
        if found is not None and found[0] in BROKER_TIMED and tally.histogram.get_total_count():
            p99[name] = value_at(tally.histogram, 99.0) / 1000.0
    return p99


def overall(
    reports: dict[str, HealthReport], broker_p99: Mapping[str, float] | None = None, master: HealthReport | None = None
) -> Generator:
    """The run's ``generator`` section: every load process's figures and the run's verdict
    (``broker_p99``: :func:`broker_p99_ms` of the run's book), and the master's figures apart."""
    episodes = sum(int(b["episodes"]) for b in blocked_by_destination(reports).values())
    broker = broker_late(broker_p99 or {}, episodes)
    verdict = run_verdict((r["verdict"] for r in reports.values()), broker)
    generator: Generator = {
        "verdict": verdict,
        "sentence": "",
        "broker": broker if verdict == "broker-slow" else None,  # a late generator's lateness is its own
        "cpu_percent_max": max((r["cpu_percent_max"] for r in reports.values()), default=0.0),
        "loop_lag_ms_max": max((r["loop_lag_ms_max"] for r in reports.values()), default=0.0),
        "processes": reports,
        "master": master,
    }
    generator["sentence"] = sentence(generator)
    return generator


def blocked_by_destination(
    reports: Mapping[str, HealthReport], kind: Literal["blocked", "stalled"] = "blocked"
) -> dict[str, dict[str, float]]:
    """Blocked (or ``stalled``) send episodes summed over processes, per destination; the last time one was seen."""
    out: dict[str, dict[str, float]] = {}
    for report in reports.values():
        for destination, b in report.get(kind, {}).items():
            mine = out.setdefault(destination, {"episodes": 0, "longest_s": 0.0, "until_s": 0.0})
            mine["episodes"] += b["episodes"]
            mine["longest_s"] = max(mine["longest_s"], b["longest_s"])
            mine["until_s"] = max(mine["until_s"], b["until_s"])
    return out

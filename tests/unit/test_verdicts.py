"""The generator's verdict blames the right component: saturated, contended, broker-slow or ok.

The pure classification, a process's monitor on planted seconds, the /proc parsers on fake files,
and the one sentence said alike by the console, the JSON, the web UI and the HTML report.
"""

from __future__ import annotations

from html import escape

from mqusers.measure.book import Book
from mqusers.options.settings import Settings
from mqusers.report.build import RunFacts, build_report
from mqusers.report.htmlreport import render
from mqusers.report.reportformats import format_summary, report_document
from mqusers.run.cpu import CpuInterval, CpuSampler, parse_schedstat, parse_stat
from mqusers.run.ending import DrainOutcome
from mqusers.run.verdicts import (
    BROKER_LATE_MS,
    CPU_SATURATED,
    LAG_LATE_MS,
    LATE_SECONDS,
    broker_p99_ms,
    master_sentence,
    overall,
    process_verdict,
    second,
    sentence,
)
from mqusers.webui.webtab import final_facts
from tests.unit.fakehealth import monitor


def test_a_late_loop_is_the_generators_only_when_it_used_a_core() -> None:
    assert second(100.0, LAG_LATE_MS - 0.1) == "ok"  # busy but on time: its figures hold
    assert second(CPU_SATURATED, LAG_LATE_MS) == "saturated"
    assert second(23.0, 80.0) == "contended"  # late with CPU to spare (no /proc): it waited for a core
    assert second(23.0, 80.0, wait_ms=400.0) == "contended"  # it waited longer than it ran
    # Late on a busy machine with most of a core: it waited, but its own load is what it could not carry.
    assert second(87.0, 80.0, wait_ms=583.0) == "saturated"
    assert second(15.0, 60.0, wait_ms=40.0) == "contended"  # one 40 ms wait for a core explains the lag
    assert second(15.0, 60.0, wait_ms=5.0) == "saturated"  # waiting does not explain it: its own work did
    assert process_verdict(LATE_SECONDS, 0) == "saturated"
    assert process_verdict(LATE_SECONDS - 1, 1) == "contended"  # late enough, mostly not on its own CPU
    assert process_verdict(1, LATE_SECONDS - 2) == "ok"


def test_make_demos_case_is_a_contended_machine_not_a_saturated_generator() -> None:
    # Observed: the generator used 9-23 % of a core while its loop ran late, the broker beside it had the CPU.
    late = [(CpuInterval(cpu, 350.0, 99.0, 0.0), 45.0) for cpu in (9.0, 23.0, 15.0, 12.0)]
    health = monitor((CpuInterval(20.0, 1.0, 60.0, 0.0), 2.0), *late)
    report = health.report()
    assert (report["verdict"], report["saturated_s"], report["contended_s"], report["seconds"]) == (
        "contended",
        0,
        4,
        5,
    )
    assert (report["late_cpu_percent_max"], report["machine_cpu_percent_max"], report["cpu_wait_ms_max"]) == (
        23.0, 99.0, 350.0)  # fmt: skip
    generator = overall({"local": report})
    words = generator["sentence"]
    assert generator["verdict"] == "contended" and words.startswith("contended: the machine is contended")
    assert "used only 23 % of a core" in words and "machine up to 99 % busy" in words and "waited up to 350 ms" in words
    assert "--processes" not in words.split("(more processes")[0]  # not told to add workers: they would not help


def test_a_generator_that_used_its_core_and_ran_late_is_saturated() -> None:
    health = monitor(*[(CpuInterval(98.0, 5.0, 60.0, 0.0), 120.0)] * LATE_SECONDS)
    generator = overall({"w1": health.report()})
    assert generator["verdict"] == "saturated"
    assert "latency figures of this period are the generator's" in generator["sentence"]
    assert "add processes (--processes) or workers" in generator["sentence"]


def late_receives(p99_ms: float) -> Book:
    book = Book()
    for ms in [1.0] * 98 + [p99_ms] * 2:
        book.on_request(request_type="STOMP", name="receive /queue/a", response_time=ms, response_length=1,
                        exception=None)  # fmt: skip
    book.on_request(request_type="STOMP", name="connect x", response_time=500.0, response_length=0, exception=None)
    return book


def test_late_answers_while_the_loop_kept_time_are_the_brokers() -> None:
    on_time = monitor(*[(CpuInterval(30.0, 0.5, 50.0, 0.0), 1.5)] * 5).report()
    slow = overall({"local": on_time}, broker_p99_ms(late_receives(4 * BROKER_LATE_MS).tallies))
    assert slow["verdict"] == "broker-slow" and slow["broker"] == "receive /queue/a p99 80.1 ms"  # hdrh's 80 ms
    assert slow["sentence"].startswith("broker-slow: the broker is the limit: receive /queue/a p99 80.1 ms while")
    assert overall({"local": on_time}, broker_p99_ms(late_receives(2.0).tallies))["verdict"] == "ok"
    blocked = {**on_time, "blocked": {"/queue/a": {"episodes": 2, "longest_s": 3.0, "blocked_now": 0, "until_s": 1.0}}}
    assert overall({"local": blocked})["broker"] == "producers blocked 2 time(s)"
    # A late generator's figures are its own: the worse verdict stands, whatever the broker did.
    saturated = monitor(*[(CpuInterval(98.0, 0.0, 60.0, 0.0), 120.0)] * 3).report()
    assert overall({"a": on_time, "b": saturated}, {"receive /queue/a": 500.0})["verdict"] == "saturated"


def test_proc_figures_over_an_interval() -> None:
    stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n"
    assert parse_stat(stat).busy == 150 and parse_stat(stat).total == 1000
    assert parse_schedstat("89032 577812 2\n") == 577812
    files = {"/proc/stat": stat, "/proc/self/schedstat": "0 1000000 1"}
    clock = iter([10.0, 11.0])
    cpu = iter([1.0, 1.25])
    sampler = CpuSampler(read=files.__getitem__, clock=lambda: next(clock), cpu_clock=lambda: next(cpu))
    sampler.start()
    files.update({"/proc/stat": "cpu  250 0 100 850 50 0 0 50 0 0\n", "/proc/self/schedstat": "0 41000000 9"})
    interval = sampler.sample()  # 300 ticks: 200 busy, 50 idle, 50 steal
    assert interval == CpuInterval(cpu_percent=25.0, wait_ms=40.0, machine_percent=200 / 3, steal_percent=50 / 3)

    def missing(path: str) -> str:
        raise FileNotFoundError(path)

    clock, cpu = iter([0.0, 2.0]), iter([0.0, 1.0])
    bare = CpuSampler(read=missing, clock=lambda: next(clock), cpu_clock=lambda: next(cpu))
    bare.start()
    assert bare.sample() == CpuInterval(50.0, None, None, None)  # not Linux: own CPU only


def test_console_json_web_ui_and_html_say_the_same_words() -> None:
    health = monitor(*[(CpuInterval(12.0, 200.0, 97.0, 3.0), 60.0)] * 4)
    generator = overall({"local": health.report()})
    facts = RunFacts("run1", 0.0, 10.0, "time", DrainOutcome(True, 0.1, "settled"), generator=generator)
    report = build_report(late_receives(1.0), None, facts, Settings())
    words = generator["sentence"]
    assert words == sentence(generator) and "steal up to 3 %" in words
    assert f"generator: {words}" in " ".join(format_summary(report).split())  # wrapped at 100 columns
    document = report_document(report)
    assert document["generator"]["verdict"] == "contended" and document["generator"]["sentence"] == words
    assert {"fact": "generator", "value": words} in [{k: f[k] for k in ("fact", "value")} for f in final_facts(
        report, None, None)]  # fmt: skip
    verdict, _, said = words.partition(": ")  # the page puts the verdict in bold before the words
    assert f'<b class="verdict-{verdict}">{verdict}</b> <span class="generator-words">{escape(said)}</span>' in render(
        [document], ["run"])  # fmt: skip
    old = {**document["generator"]}  # a report saved before the sentence was in the JSON
    del old["sentence"]
    assert escape(said) in render([{**document, "generator": old}], ["run"])


def test_a_backlogs_age_is_not_the_brokers_latency_its_new_messages_are() -> None:
    book = late_receives(4 * BROKER_LATE_MS)  # receive /queue/a: late, as a backlog's messages are
    for ms in (1.0, 2.0):
        book.on_request(request_type="STOMP", name="receive-backlog /queue/a", response_time=900.0, response_length=1,
                        exception=None)  # fmt: skip
        book.on_request(request_type="STOMP", name="receive-new /queue/a", response_time=ms, response_length=1,
                        exception=None)  # fmt: skip
    assert broker_p99_ms(book.tallies) == {"receive-new /queue/a": 2.0}


def test_the_masters_cost_is_stated_apart_and_a_late_master_says_what_it_risks() -> None:
    """The master runs no load: its figures stand beside the workers', never in the run's verdict."""
    worker = monitor(*[(CpuInterval(30.0, 1.0, 60.0, 0.0), 2.0)] * 4).report()
    master = monitor(*[(CpuInterval(cpu, 1.0, 60.0, 0.0), 2.0) for cpu in (10.0, 20.0, 30.0, 40.0)]).report()
    assert (master["cpu_percent_mean"], master["cpu_percent_max"], master["seconds"]) == (25.0, 40.0, 4)
    assert master["rss_mb_max"] is not None and master["rss_mb_max"] > 10  # this test process's own peak
    generator = overall({"w1": worker}, master=master)
    assert generator["verdict"] == "ok" and list(generator["processes"]) == ["w1"]
    line = master_sentence(master)
    assert line.startswith("master: CPU 25 % of a core over the run (max 40 %), peak memory ")
    assert "saturated" not in line and "contended" not in line
    facts = RunFacts("run1", 0.0, 10.0, "time", DrainOutcome(True, 0.1, "settled"), generator=generator)
    report = build_report(late_receives(1.0), None, facts, Settings())
    assert line in " ".join(format_summary(report).split())
    assert report_document(report)["generator"]["master"] == master
    assert {"fact": "master", "value": line.removeprefix("master: ")} in [
        {k: f[k] for k in ("fact", "value")} for f in final_facts(report, None, None)]  # fmt: skip
    assert '<td class="text">master</td>' in render([report_document(report)], ["run"])
    # A master whose own work held its loop: the run's figures are still the workers', but merging and the
    # workers' heartbeats ran late, and it says so.
    late = monitor(*[(CpuInterval(98.0, 5.0, 60.0, 0.0), 120.0)] * LATE_SECONDS).report()
    assert overall({"w1": worker}, master=late)["verdict"] == "ok"
    assert "saturated: its own work (merging the workers' reports)" in master_sentence(late)
    assert "marked missing" in master_sentence(late)

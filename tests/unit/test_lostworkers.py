"""A worker's master gone: only Locust's heartbeat checker quitting it says so, never a late normal end."""

from __future__ import annotations

from locust import runners

import time

from mqusers.wiring import lostworkers


class Worker:
    """What :func:`lostworkers.watch_master` uses of a WorkerRunner."""

    def __init__(self, last_heartbeat: float) -> None:
        self.last_heartbeat_timestamp = last_heartbeat
        self.quits = 0

    def quit(self) -> None:
        self.quits += 1


def test_a_worker_the_master_told_to_quit_is_not_abandoned_however_late_it_ends() -> None:
    """The Prometheus page's worker: told to quit, it lingered 15 s for a scrape, then quit with its master's last
    heartbeat 15 s old; it exited 1 saying "no heartbeat from the master"."""
    worker = Worker(time.time() - lostworkers.MASTER_TIMEOUT_S - 5)
    lostworkers.watch_master(worker)  # type: ignore[arg-type]
    assert not lostworkers.master_gone(worker)  # type: ignore[arg-type]


def test_the_heartbeat_checker_quitting_a_worker_is_the_master_gone() -> None:
    worker = Worker(time.time())
    lostworkers.watch_master(worker)  # type: ignore[arg-type]
    assert runners.MASTER_HEARTBEAT_TIMEOUT == lostworkers.MASTER_TIMEOUT_S
    worker.quit()  # a quit while the master still beats: Ctrl-C, say
    assert not lostworkers.master_gone(worker) and worker.quits == 1  # type: ignore[arg-type]
    worker.last_heartbeat_timestamp -= lostworkers.MASTER_TIMEOUT_S + 1
    worker.quit()  # what Locust's checker calls once the master has been silent too long
    assert lostworkers.master_gone(worker) and worker.quits == 2  # type: ignore[arg-type]

"""Open files: the Users' sockets checked against ``ulimit -n`` before load, and running out mid-run survived.

Every User holds one socket (a STOMP User its connection; any other User is counted as one too).
Before load a process needs the files it has open now, one per User it will run and a margin
(:func:`files_needed`). Below that, the soft limit is raised when the hard one allows (one log
line), else the start is refused with one line (:func:`ensure`). With ``--processes`` or workers
the need is per process: the master checks the hard limit its forked workers share, and each
worker raises its own soft limit at test start (:func:`raise_for_worker`).

Something the check cannot foresee (a User opening files of its own) can still use them up: a
connect then fails with :data:`mqusers.stomp.transport.OUT_OF_FILES`, and Locust's CPU and memory monitor,
whose ``/proc`` read would raise and quit the run as if interrupted, waits for the next reading
instead (:func:`guard_monitor`). The report counts those failures (:func:`failures`).
"""

from __future__ import annotations

from locust.runners import CPU_MONITOR_INTERVAL, Runner, locust_exception_handler

import errno
import logging
import math
import resource
from typing import Any

import gevent

from mqusers.run.openfiles import open_files
from mqusers.stomp.transport import OUT_OF_FILES

logger = logging.getLogger(__name__)
#: Locust raises the soft limit to this itself at start, when the hard limit allows.
LOCUST_MINIMUM = 10_000
#: Spare files beyond the Users' sockets (the broker metrics reader, report files, web UI clients, a
#: failed connect's second try, ``/proc`` reads), or 5 % of the Users when that is more.
MARGIN = 64
#: Open files assumed when ``/proc/self/fd`` cannot be listed (about what Locust holds at start).
ASSUMED_OPEN = 40
#: What the master tells its workers (with its parsed options): Users per worker this test.
USERS_OPTION = "mq_users_per_process"


def open_now() -> int:
    """Files this process has open now."""
    opened = open_files()
    return ASSUMED_OPEN if opened is None else opened


def files_needed(users: int, already_open: int) -> int:
    return already_open + users + max(MARGIN, math.ceil(users * 0.05))


def per_process(users: int, processes: int) -> int:
    """Users of the busiest process: Locust deals them round-robin."""
    return math.ceil(users / max(1, processes))


def ensure(users: int, processes: int = 1, *, raise_soft: bool = True) -> str | None:
    """None when ``users`` fit (the soft limit raised first if needed and ``raise_soft``); else the refusal.

    ``processes`` > 1: the users are spread over that many processes, each needing its share;
    without ``raise_soft`` only the hard limit is judged (the master, for the workers it forked).
    """
    share = per_process(users, processes)
    opened = open_now()
    need = files_needed(share, opened)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or (soft >= need and raise_soft):
        return None
    if hard != resource.RLIM_INFINITY and hard < need:
        return _refusal(users, processes, need, need - opened - share, soft, hard)
    if raise_soft:
        _raise_soft(need, soft, hard, share)
    return None


def _refusal(users: int, processes: int, need: int, spare: int, soft: int, hard: int) -> str:
    whose = f"{users:,} users" if processes == 1 else f"{per_process(users, processes):,} users per process"
    return (
        f"{whose} need about {need:,} open files (a socket each, those open already and {spare:,} spare) but "
        f"ulimit -n allows {soft:,} (hard limit {hard:,}): raise the hard limit (ulimit -Hn, systemd LimitNOFILE, "
        "nofile in /etc/security/limits.conf) or spread the users over more processes (--processes N)"
    )


def _raise_soft(need: int, soft: int, hard: int, users: int) -> None:
    # Up to Locust's own minimum where the hard limit allows: room for what the check cannot foresee.
    target = need if hard == resource.RLIM_INFINITY else min(hard, max(need, LOCUST_MINIMUM))
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    logger.info(
        "mqusers: raised the open-file limit (ulimit -n) from %s to %s for %s users (about %s files needed)",
        f"{soft:,}",
        f"{target:,}",
        f"{users:,}",
        f"{need:,}",
    )


def raise_for_worker(options: Any) -> None:
    """A worker at test start: its soft limit raised for the users the master deals it, or one error line."""
    users = getattr(options, USERS_OPTION, 0) or 0
    if users and (problem := ensure(users)) is not None:
        logger.error("mqusers: this worker's %s; its connections beyond the limit will fail", problem)


def failures(errors: dict[Any, Any]) -> int:
    """Failed operations that ran out of file descriptors, in Locust's error table (workers' merged in)."""
    return sum(e.occurrences for e in errors.values() if OUT_OF_FILES in str(e.error))


def guard_monitor(runner: Runner) -> None:
    """Locust's CPU and memory monitor, restarted after a reading that found no file to open.

    Its greenlet dies on EMFILE with a traceback, and with it the runner's last greenlet: Locust
    then quits as on Ctrl-C. The same loop, waiting out EMFILE, takes its place.
    """
    for greenlet in list(runner.greenlet):
        if getattr(greenlet, "_run", None) == runner.monitor_cpu_and_memory:
            greenlet.kill(block=False)
            runner.greenlet.spawn(_monitor, runner).link_exception(locust_exception_handler(runner.environment))


def _monitor(runner: Runner) -> None:
    warned = False
    while True:
        try:
            runner.monitor_cpu_and_memory()
        except OSError as error:
            if error.errno != errno.EMFILE:
                raise
            if not warned:
                logger.warning("mqusers: %s: Locust's CPU and memory readings wait for a free file", OUT_OF_FILES)
                warned = True
            gevent.sleep(CPU_MONITOR_INTERVAL)

"""A broker JVM's heap, GC, threads and CPU, for a broker on THIS host only.

Heap and GC come from ``jstat -gc PID`` (or, without jstat, ``jcmd PID PerfCounter.print``: the
same HotSpot counters), run as a bounded child process through gevent (it does not block the
other greenlets); threads and CPU from ``/proc/PID``. Both need the JVM on this machine and, for
jstat/jcmd, the same user (or root) and the JVM's perf data (on unless ``-XX:-UsePerfData``). A
remote broker's JVM is out of reach: its figures come from the broker's own source.

Each jstat/jcmd call starts a small JVM (a few hundred ms of CPU): sample every few seconds, not
faster, on a load generator with few cores.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import time
from pathlib import Path

import gevent.subprocess

from mqusers.brokers.model import JvmFigures, MetricsError

#: Debian's package with jstat and jcmd (default-jdk-headless pulls in the current one).
JDK_PACKAGE = "default-jdk-headless"
#: A lean JVM for the tool itself: it starts, reads one file and exits.
_TOOL_JVM = ("-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-Xshare:auto")
# jstat -gc columns, in KB: survivor, eden and old spaces; metaspace is not heap.
_USED = ("S0U", "S1U", "EU", "OU")
_CAPACITY = ("S0C", "S1C", "EC", "OC")
# Young, full and (G1, ZGC...) concurrent collections; a collector without one prints "-".
_COUNTS = ("YGC", "FGC", "CGC")


def parse_jstat_gc(output: str) -> JvmFigures:
    """``jstat -gc`` output (a header line and a value line) as :class:`JvmFigures`."""
    rows = [line.split() for line in output.splitlines() if line.strip()]
    if len(rows) < 2 or "GCT" not in rows[0]:
        raise ValueError(f"unexpected jstat -gc output: {output.strip()[:200]!r}")
    row = dict(zip(rows[0], rows[-1], strict=False))

    def total(columns: tuple[str, ...]) -> float:
        return sum(float(row[column]) for column in columns if row.get(column, "-") != "-")

    return JvmFigures(
        heap_used_mb=total(_USED) / 1024.0,
        heap_committed_mb=total(_CAPACITY) / 1024.0,
        gc_count=int(total(_COUNTS)),
        gc_seconds=float(row["GCT"]),
    )


def parse_perf_counters(output: str) -> JvmFigures:
    """``jcmd PID PerfCounter.print`` (``name=value`` lines) as :class:`JvmFigures`.

    The counters jstat reads: generations 0 (eden, survivors) and 1 (old) make the heap, in bytes;
    each collector's ``invocations`` and ``time`` (in ticks of ``sun.os.hrt.frequency``).
    """
    counters: dict[str, int] = {}
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep and value.strip().lstrip("-").isdigit():
            counters[name.strip()] = int(value)
    frequency = counters.get("sun.os.hrt.frequency")
    if not frequency:
        raise ValueError(f"unexpected jcmd PerfCounter.print output: {output.strip()[:200]!r}")

    def total(prefix: str, suffix: str) -> int:
        return sum(value for name, value in counters.items() if name.startswith(prefix) and name.endswith(suffix))

    heap = ("sun.gc.generation.0.space.", "sun.gc.generation.1.space.")
    return JvmFigures(
        heap_used_mb=sum(total(prefix, ".used") for prefix in heap) / 2**20,
        heap_committed_mb=sum(total(prefix, ".capacity") for prefix in heap) / 2**20,
        gc_count=total("sun.gc.collector.", ".invocations"),
        gc_seconds=total("sun.gc.collector.", ".time") / frequency,
    )


def parse_stat_cpu_ticks(stat: str) -> int:
    """User + system CPU time, in clock ticks, from ``/proc/PID/stat``."""
    # The command name (field 2) may hold spaces and parentheses: fields are counted after its ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15


def parse_status_threads(status: str) -> int:
    for line in status.splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise ValueError("no Threads: line in /proc/PID/status")


def find_jdk_tool(pid: int | None = None) -> tuple[str, str]:
    """(``jstat`` or ``jcmd``, its path); raise :class:`MetricsError` naming the package when neither exists.

    First the JDK the JVM ``pid`` runs from (its tools read its own counters best), then PATH,
    ``$JAVA_HOME/bin`` and ``/usr/lib/jvm/*/bin``.
    """
    folders: list[str] = []
    if pid is not None:
        with contextlib.suppress(OSError):  # gone, or another user's: the other places remain
            folders.append(str(Path(os.readlink(f"/proc/{pid}/exe")).parent))
    for tool in ("jstat", "jcmd"):
        found = [str(Path(folder) / tool) for folder in folders] + [shutil.which(tool) or ""]
        if os.environ.get("JAVA_HOME"):
            found.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / tool))
        found += sorted(glob.glob(f"/usr/lib/jvm/*/bin/{tool}"), reverse=True)
        for path in found:
            if path and os.access(path, os.X_OK):
                return tool, path
    raise MetricsError(
        "neither jstat nor jcmd found (PATH, $JAVA_HOME/bin, /usr/lib/jvm/*/bin): "
        f"install a JDK, e.g. `apt-get install {JDK_PACKAGE}`"
    )


class JvmProbe:
    """Samples the JVM ``pid`` on this host; ``timeout`` bounds each jstat/jcmd run.

    ``cpu_percent`` (of one core) covers the time since the previous successful sample, or since
    the probe was made for the first one.
    """

    def __init__(self, pid: int, *, timeout: float = 5.0) -> None:
        self.pid = pid
        self.timeout = timeout
        self._mark = self._cpu_mark()  # fails first when there is no such process
        self.tool, self._tool_path = find_jdk_tool(pid)

    def sample(self) -> JvmFigures:
        status = self._read("status")
        mark = self._cpu_mark()
        figures = self._heap()
        (then, cpu_then), (now, cpu_now) = self._mark, mark
        self._mark = mark
        figures["threads"] = parse_status_threads(status)
        if now > then:
            figures["cpu_percent"] = 100.0 * (cpu_now - cpu_then) / (now - then)
        return figures

    def _heap(self) -> JvmFigures:
        what = "-gc" if self.tool == "jstat" else "PerfCounter.print"
        argv = [self._tool_path, *_TOOL_JVM, what, str(self.pid)]
        if self.tool == "jcmd":
            argv = [self._tool_path, *_TOOL_JVM, str(self.pid), what]
        # C locale: jstat formats numbers by the locale ("0,5" in some).
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        try:
            done = gevent.subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, env=env)
        except gevent.subprocess.TimeoutExpired:
            raise MetricsError(f"{self.tool} {what} {self.pid} did not finish within {self.timeout:g}s") from None
        except OSError as error:
            raise MetricsError(f"cannot run {self._tool_path}: {error.strerror or error}") from None
        output: str = done.stdout
        if done.returncode != 0:
            # The first line says why ("... 4242 not found"); a Java stack trace follows.
            said = next((line.strip() for line in (output + "\n" + done.stderr).splitlines() if line.strip()), "")
            hint = "is it a JVM of this user, started without -XX:-UsePerfData?"
            raise MetricsError(f"{self.tool} {what} {self.pid} failed (exit {done.returncode}): {said[:160]} ({hint})")
        try:
            return parse_jstat_gc(output) if self.tool == "jstat" else parse_perf_counters(output)
        except ValueError as error:
            raise MetricsError(str(error)) from None

    def _cpu_mark(self) -> tuple[float, float]:
        """(monotonic seconds, the process's CPU seconds) now."""
        ticks = parse_stat_cpu_ticks(self._read("stat"))
        return time.monotonic(), ticks / os.sysconf("SC_CLK_TCK")

    def _read(self, name: str) -> str:
        try:
            return Path(f"/proc/{self.pid}/{name}").read_text()
        except (FileNotFoundError, ProcessLookupError):
            raise MetricsError(f"no process {self.pid} on this host (has the broker's JVM stopped?)") from None
        except OSError as error:
            raise MetricsError(f"cannot read /proc/{self.pid}/{name}: {error.strerror or error}") from None

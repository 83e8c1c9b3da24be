"""Metrics stores: VictoriaMetrics (written to, or scraping mqusers' /metrics) and InfluxDB 1.x (Debian packages)."""

from __future__ import annotations

import re
import subprocess

from .base import Ctx, ServiceError, http_status, spawn
from .control import Service

# ------------------------------------------------------------- VictoriaMetrics


def _vm_launch(ctx: Ctx) -> int:
    argv = [
        "victoria-metrics",
        f"-httpListenAddr=127.0.0.1:{ctx.ports['http']}",
        f"-storageDataPath={ctx.dir / 'data'}",
    ]
    return spawn(ctx, argv)


def _vm_ready(ctx: Ctx) -> bool:
    status, body = http_status(f"http://127.0.0.1:{ctx.ports['http']}/health")
    return status == 200 and body.strip() == b"OK"


# ----------------------------------------------- VictoriaMetrics, scraping a run

#: How often the scraping instance reads each target: the listener's interval, so no interval's figures are skipped.
SCRAPE_INTERVAL = "1s"


def scrape_config(ctx: Ctx) -> str:
    """A Prometheus scrape configuration: job ``mqusers``, the master's and one worker's ``/metrics``."""
    targets = ", ".join(f'"127.0.0.1:{ctx.ports[role]}"' for role in ("master", "worker"))
    return (
        "scrape_configs:\n"
        "  - job_name: mqusers\n"
        f"    scrape_interval: {SCRAPE_INTERVAL}\n"
        f"    static_configs:\n      - targets: [{targets}]\n"
    )


def _scrape_launch(ctx: Ctx) -> int:
    config = ctx.dir / "scrape.yml"
    config.write_text(scrape_config(ctx))
    argv = [
        "victoria-metrics",
        f"-httpListenAddr=127.0.0.1:{ctx.ports['http']}",
        f"-storageDataPath={ctx.dir / 'data'}",
        f"-promscrape.config={config}",
    ]
    return spawn(ctx, argv)


# -------------------------------------------------------------------- InfluxDB


# (section, key) -> value to force; "" is the top level. Debian's 1.6.7 names
# the usage-reporting switch `reporting-enabled` (upstream: reporting-disabled).
def _influx_overrides(ctx: Ctx) -> dict[tuple[str, str], str]:
    d = ctx.dir
    return {
        ("", "reporting-enabled"): "false",
        ("", "bind-address"): f'"127.0.0.1:{ctx.ports["rpc"]}"',  # backup/restore RPC
        ("meta", "dir"): f'"{d / "meta"}"',
        ("data", "dir"): f'"{d / "data"}"',
        ("data", "wal-dir"): f'"{d / "wal"}"',
        ("http", "bind-address"): f'"127.0.0.1:{ctx.ports["http"]}"',
    }


_SECTION = re.compile(r"^\s*\[\[?([\w-]+)\]\]?\s*$")
_KEY = re.compile(r"^(\s*)([\w-]+)(\s*=\s*)(.*)$")


def rewrite_influx_config(text: str, overrides: dict[tuple[str, str], str]) -> str:
    """Force ``overrides`` into ``influxd config`` output, keeping all else.

    Any other ``bind-address = ":port"`` (disabled listeners) is pinned to
    loopback too, so enabling one later cannot expose it by accident.
    """
    section, out, seen = "", [], set()
    for line in text.splitlines():
        if match := _SECTION.match(line):
            section = match.group(1)
        elif match := _KEY.match(line):
            indent, key, eq, value = match.groups()
            if (section, key) in overrides:
                value = overrides[(section, key)]
                seen.add((section, key))
            elif key == "bind-address" and value.startswith('":'):
                value = '"127.0.0.1' + value[1:]
            line = f"{indent}{key}{eq}{value}"
        out.append(line)
    missing = set(overrides) - seen
    if missing:
        raise ServiceError(f"influxd config output lacks {sorted(missing)}; unsupported version?")
    return "\n".join(out) + "\n"


def _influx_launch(ctx: Ctx) -> int:
    # -config /dev/null: built-in defaults only, never merged with /etc/influxdb.
    generated = subprocess.run(
        ["influxd", "config", "-config", "/dev/null"], capture_output=True, text=True, check=False
    )
    if generated.returncode != 0:
        raise ServiceError(f"influxd config failed: {generated.stderr.strip()[-300:]}")
    conf = ctx.dir / "influxdb.conf"
    conf.write_text(rewrite_influx_config(generated.stdout, _influx_overrides(ctx)))
    return spawn(ctx, ["influxd", "run", "-config", str(conf)])


def _influx_ready(ctx: Ctx) -> bool:
    return http_status(f"http://127.0.0.1:{ctx.ports['http']}/ping")[0] == 204


SERVICES = [
    Service(
        name="victoria-metrics",
        package="victoria-metrics",
        base_ports={"http": 8428},
        launch=_vm_launch,
        ready=_vm_ready,
    ),
    # Scrapes the master's (port "master") and a worker's ("worker") --prometheus-port; those two only
    # name where it looks: nothing listens there until a run does (tests/integration/test_prometheus.py).
    Service(
        name="victoria-scrape",
        package="victoria-metrics",
        base_ports={"http": 8438, "master": 9646, "worker": 9647},
        launch=_scrape_launch,
        ready=_vm_ready,
    ),
    Service(
        name="influxdb",
        package="influxdb",
        base_ports={"http": 8086, "rpc": 8088},
        launch=_influx_launch,
        ready=_influx_ready,
    ),
]

"""The Prometheus endpoint: the listener's points as metric families on ``/metrics`` (prometheus-client).

The listener hands :meth:`Exposition.add` the very points it writes to InfluxDB, so both outputs show
the same figures by construction; the families and their names are
:data:`mqusers.sinks.schema.PROMETHEUS`. An interval's counts add to counters (``_total``), running
totals are counters at their last value, and every other figure is a gauge at its last point's value
(the last interval's percentiles and rate). Each test starts afresh: a run's series are replaced by the
next run's (a new ``run`` label). gevent's WSGI server serves it on the process's own loop;
prometheus-client is imported only when an endpoint starts (the ``prometheus`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gevent.event import Event
from gevent.pywsgi import WSGIServer

from mqusers.options.parsing import OptionError
from mqusers.sinks import schema
from mqusers.sinks.sinkoptions import PrometheusSettings

#: measurement name -> its families.
_BY_MEASUREMENT: dict[str, list[schema.Family]] = {}
for _family in schema.PROMETHEUS.values():
    _BY_MEASUREMENT.setdefault(_family.measurement.name, []).append(_family)


def _value(family: schema.Family, fields: Mapping[str, schema.FieldValue]) -> float | None:
    """The point's value for ``family``, or None when the point does not carry it."""
    value = fields.get(family.field)
    if not isinstance(value, int | float):
        return None
    if family.per_second:
        seconds = fields.get("interval_s")
        return value / seconds if isinstance(seconds, int | float) and seconds > 0 else None
    return float(value)


class Exposition:
    """The current value of every series, by family: a prometheus-client collector."""

    def __init__(self) -> None:
        self.series: dict[str, dict[tuple[str, ...], float]] = {}
        self.scrapes = 0
        self._scraped = Event()

    def clear(self) -> None:
        """A new test: the last run's series go (Prometheus keeps what it scraped)."""
        self.series = {}

    def add(self, points: Iterable[schema.Point]) -> None:
        for point in points:
            for family in _BY_MEASUREMENT.get(point.measurement.name, ()):
                value = _value(family, point.fields)
                if value is None:
                    continue
                labels = tuple(point.tags.get(tag, "") for tag in point.measurement.tags)
                series = self.series.setdefault(family.name, {})
                series[labels] = series.get(labels, 0.0) + value if family.summed else value

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        for name, series in self.series.items():
            family = schema.PROMETHEUS[name]
            kind = CounterMetricFamily if family.kind == "counter" else GaugeMetricFamily
            description = f"{family.measurement.name}.{family.field}: {family.measurement.doc}"
            metric = kind(name, description, labels=family.measurement.tags)
            for labels, value in series.items():
                metric.add_metric(labels, value)
            yield metric
        self.scrapes += 1
        self._scraped.set()

    def scraped_within(self, timeout: float) -> bool:
        """Wait for a scrape that starts from now (it reads every point added so far), at most ``timeout`` s."""
        self._scraped.clear()  # a collect never yields to the loop: one under way now has already set it
        return bool(self._scraped.wait(timeout))


class Endpoint:
    """``/metrics`` on the settings' host and port, bound at once: a taken port is refused before any load."""

    def __init__(self, settings: PrometheusSettings) -> None:
        try:
            from prometheus_client import CollectorRegistry, make_wsgi_app
        except ImportError:
            raise OptionError(
                "--prometheus-port: prometheus-client is not installed; pip install 'mqusers[prometheus]'"
            ) from None
        self.settings = settings
        self.exposition = Exposition()
        registry = CollectorRegistry(auto_describe=False)  # only mqusers' families: the schema's names
        registry.register(self.exposition)
        # SERVER_NAME given: pywsgi would look the host's name up (getfqdn), yielding to the loop mid-start-up.
        environ = {"SERVER_NAME": settings.host, "SERVER_PORT": str(settings.port)}
        self.server = WSGIServer((settings.host, settings.port), make_wsgi_app(registry), log=None, environ=environ)
        try:
            self.server.start()
        except OSError as error:
            where = f"{settings.host}:{settings.port}"
            raise OptionError(f"--prometheus-port: cannot listen on {where}: {error.strerror or error}") from None

    @property
    def url(self) -> str:
        host, port = self.server.address[:2]
        return f"http://{host}:{port}/metrics"

    def close(self) -> bool:
        """Stop serving once a scrape has read the final figures, or after ``--prometheus-linger``; True if read."""
        read = self.settings.linger > 0 and self.exposition.scraped_within(self.settings.linger)
        self.server.stop(timeout=1)
        return read

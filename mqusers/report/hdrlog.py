"""The run's per-interval histograms as HdrHistogram's interval log (``--mq-hdr-log``), one tag per event name.

Written from the JSON document's ``intervals`` (:meth:`~mqusers.measure.hdrintervals.Intervals.document`)
in the format of HdrHistogram's ``HistogramLogWriter`` (log format 1.3), so its ``HistogramLogProcessor``
and the ``hdrhistogram`` package's ``HistogramLogReader`` re-cut the run: a line per interval and event
name, ``Tag=<name>,<start>,<length>,<max>,<histogram>``, oldest first. Values are µs; the max column
is in ms (the Java writer's convention: the max divided by 1,000 for µs). Timestamps are seconds from
``BaseTime``, the measured window's start.

HdrHistogram's Java reader splits a line at spaces and commas, so a tag cannot hold either: they (and
``%``) are percent-encoded (``receive /queue/a`` is ``receive%20/queue/a``; ``urllib.parse.unquote``
reads it back).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import release

LOG_FORMAT_VERSION = "1.3"
_NOT_IN_TAGS = re.compile(r"[%\s,]")


def tag_of(name: str) -> str:
    """The event name as a tag HdrHistogram's readers keep whole."""
    return _NOT_IN_TAGS.sub(lambda found: "".join(f"%{byte:02X}" for byte in found[0].encode()), name)


def name_of(tag: str) -> str:
    return unquote(tag)


def hdr_log(intervals: Mapping[str, Any], run_id: str) -> str:
    """The log's text: header, legend and every interval of every event name, oldest first."""
    base = intervals.get("measured_from") or 0.0
    lines = []
    for name, rows in intervals.get("operations", {}).items():
        for start, seconds, _, _, encoded in rows:
            lines.append((start, tag_of(name), seconds, encoded))
    if lines:
        base = min(base, min(line[0] for line in lines))
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(base))
    text = [
        f"#[mqusers run {run_id}: per-interval latencies per event name, in microseconds (max column in ms)]",
        "#[Tags: event names, with %, spaces and commas percent-encoded]",
        f"#[Histogram log format version {LOG_FORMAT_VERSION}]",
        f"#[StartTime: {base:.3f} (seconds since epoch), {stamp}]",
        f"#[BaseTime: {base:.3f} (seconds since epoch)]",
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]
    for start, tag, seconds, encoded in sorted(lines):
        histogram = HdrHistogram.decode(encoded.encode("ascii"))
        top = histogram.get_max_value() / 1000.0
        release(histogram)
        text.append(f"Tag={tag},{start - base:.3f},{seconds:.3f},{top:.3f},{encoded}")
    return "\n".join(text) + "\n"


def write_hdr_log(path: str, intervals: Mapping[str, Any], run_id: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(hdr_log(intervals, run_id))

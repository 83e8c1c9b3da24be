"""A run document's ``"intervals"`` read into per-operation samples: seconds, counts and latency slots per interval.

Only the intervals starting at or after ``measured_from`` (the warm-up's end) are kept. Each interval's
HdrHistogram (µs, :mod:`mqusers.measure.book`'s layout) becomes a row of a matrix over the union of the
slots any interval of the operation filled, so a resample's merged histogram is one matrix product.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from hdrh.histogram import HdrHistogram

from mqusers.errors import MqusersError
from mqusers.measure.book import SIGNIFICANT_DIGITS

Floats = npt.NDArray[np.float64]
#: An interval shorter than this part of the run's median interval is joined to its neighbour (:func:`whole`).
SHORT_FRACTION = 0.5


class RunFileError(MqusersError, ValueError):
    """A run file that cannot be compared; its message is the one line a user reads."""


@dataclass(frozen=True)
class Samples:
    """One operation of one run, oldest interval first (``n`` intervals, ``k`` latency slots)."""

    seconds: Floats  # (n,) each interval's width
    counts: Floats  # (n,) successes per interval
    slots: Floats  # (n, k) latencies per slot per interval
    values_ms: Floats  # (k,) each slot's highest value in ms, ascending (what hdrh reports for a percentile)


@dataclass(frozen=True)
class Run:
    name: str
    locustfile: str
    operations: dict[str, Samples]
    #: What ``load_runs``' ``inspect`` said of its document (why it cannot be a baseline, say); empty without one.
    said: tuple[str, ...] = ()


def slot_values_us(indexes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """hdrh's highest equivalent value of each counts index (unit 1 µs, ``SIGNIFICANT_DIGITS`` digits)."""
    half = 1 << (int(np.ceil(np.log2(2 * 10**SIGNIFICANT_DIGITS))) - 1)  # 1,024 slots per power of two
    bucket = (indexes // half) - 1
    sub = (indexes % half) + half
    low = bucket < 0
    sub = np.where(low, sub - half, sub)
    bucket = np.where(low, 0, bucket)
    return (sub << bucket) + (1 << bucket) - 1


def operation_samples(rows: list[list[Any]], measured_from: float) -> Samples | None:
    """An operation's interval rows ``[start, seconds, count, failures, encoded]`` from ``measured_from`` on."""
    kept = [row for row in rows if float(row[0]) >= measured_from]
    if not kept:
        return None
    decoded = []
    for row in kept:
        counts = np.ctypeslib.as_array(HdrHistogram.decode(row[4]).counts)
        where = np.flatnonzero(counts)
        decoded.append((where, counts[where]))
    union = np.unique(np.concatenate([where for where, _ in decoded])) if decoded else np.zeros(0, np.int64)
    slots = np.zeros((len(kept), len(union)))
    for i, (where, counts) in enumerate(decoded):
        slots[i, np.searchsorted(union, where)] = counts
    return whole(Samples(
        seconds=np.array([float(row[1]) for row in kept]),
        counts=np.array([float(row[2]) for row in kept]),
        slots=slots,
        values_ms=slot_values_us(union.astype(np.int64)) / 1000.0,
    ))  # fmt: skip


def whole(samples: Samples) -> Samples:
    """``samples`` with each interval shorter than :data:`SHORT_FRACTION` of the median width joined to its
    neighbour (the one before; the first, to the one after).

    The warm-up's end cuts the first interval and the stop the last: 22 ms of sends is one of seven blocks the
    bootstrap resamples alike, and resamples made mostly of such slivers set a family-wise interval's far ends
    (a 3,000 msg/s run read 1,270 to 3,002). Joined, each block holds about an interval's worth of data; no
    sample is dropped."""
    seconds = samples.seconds
    if len(seconds) < 2:
        return samples
    short = SHORT_FRACTION * float(np.median(seconds))
    starts, held = [0], float(seconds[0])
    for i in range(1, len(seconds)):
        if seconds[i] >= short and held >= short:
            starts.append(i)
            held = 0.0
        held += float(seconds[i])
    if held < short and len(starts) > 1:
        starts.pop()  # the last block is a sliver: it joins the one before
    if len(starts) == len(seconds):
        return samples
    return replace(samples, seconds=np.add.reduceat(seconds, starts), counts=np.add.reduceat(samples.counts, starts),
                   slots=np.add.reduceat(samples.slots, starts, axis=0))  # fmt: skip


def run_from_document(document: Mapping[str, Any], name: str) -> Run:
    """The run's samples per operation; :class:`RunFileError` when it has no intervals to compare."""
    intervals = document.get("intervals")
    if not isinstance(intervals, Mapping) or not isinstance(intervals.get("operations"), Mapping):
        raise RunFileError(f'{name}: no "intervals" (a run JSON written by --mq-report-json of this version)')
    measured_from = float(intervals.get("measured_from") or 0.0)
    try:
        operations = {op: operation_samples(list(rows), measured_from) for op, rows in intervals["operations"].items()}
    except (TypeError, ValueError, IndexError, KeyError) as error:
        raise RunFileError(f'{name}: its "intervals" cannot be read ({error})') from None
    kept = {op: samples for op, samples in sorted(operations.items()) if samples is not None}
    if not kept:
        raise RunFileError(f"{name}: no interval after the warm-up in any operation")
    scenario = document.get("scenario") or {}
    return Run(name, str(scenario.get("locustfile", "")) if isinstance(scenario, Mapping) else "", kept)


def common_operations(base: list[Run], new: list[Run]) -> list[str]:
    """The operations both sides measured; :class:`RunFileError` when the runs are not comparable: another
    locustfile, a side's runs (its repeats) with different operations, or no operation in common."""
    first = base[0]
    for run in (*base, *new):
        if run.locustfile != first.locustfile:
            raise RunFileError(f"{run.name} ran {run.locustfile or '?'}, {first.name} ran {first.locustfile or '?'}")
    for side in (base, new):
        for run in side[1:]:
            if set(run.operations) != set(side[0].operations):
                other = sorted(set(run.operations) ^ set(side[0].operations))
                raise RunFileError(f"{run.name} and {side[0].name} (one side's runs) differ in: {', '.join(other)}")
    common = sorted(set(first.operations) & set(new[0].operations))
    if not common:
        raise RunFileError(f"{first.name} and {new[0].name} have no operation in common")
    return common

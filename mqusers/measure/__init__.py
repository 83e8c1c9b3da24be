"""Measurement: latency histograms and per-destination tallies. Pure data, no I/O."""

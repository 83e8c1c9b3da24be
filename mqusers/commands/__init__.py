"""The mqusers commands: the CLI and its find-max, curve, matrix and cluster-compare runs (each step a locust child)."""

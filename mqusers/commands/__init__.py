"""The mqusers commands: the CLI and its find-max, curve, matrix and cluster-compare runs (each step a locust child).

Modules: ``cli.py``, ``capacity.py``, ``matrix.py``, ``cluster.py`` (``grids.py``: what both grids share;
``hops.py``: the paced runs' latency per configuration and what a network's hop adds), ``repeat.py``
(``repeatsummary.py``), ``locustchild.py``, ``compare.py``, ``machineload.py`` (whether this machine was the limit
of a step).

What they do: the ``mqusers`` command and its subcommands: ``find-max`` / ``curve`` (each step a ``locust``
child process), the seed grid, ``cluster-compare`` (the JMS report's schemes and a failover per broker
configuration), both grids' warm-up per configuration, steady runs, interleaved repeats and cells compared
within noise (``grids.py``), ``repeat`` (one test N times; each figure's median, interval and spread from
``stats/``), ``compare`` (NEW against BASE: run JSONs or folders of them), ``report``, ``locustfiles``;
``locustchild.py``: one bounded ``locust`` child in its own process group, Ctrl-C and SIGTERM passed on to it
once, its report read.
"""

"""mqusers inside Locust: its events, options and runners wired to the run state, the broker watch and the report.

Modules: ``plugin.py``, ``admission.py`` (``roles.py``, ``fdlimit.py``), ``lifecycle.py``, ``finals.py``,
``runreport.py``, ``lostworkers.py``, ``spawncost.py``, ``endscreen.py``, ``brokerwatch.py``, ``phases.py``.

What they do: Locust events: options, test start and stop (``plugin.py``); validation before load
(``admission.py``: the role split: users per role, consumers counted, mixes refused; open files against
``ulimit -n``, the soft limit raised); every end (drain, Ctrl-C: ``lifecycle.py``), workers' final shipments
merged (``finals.py``) and the report (``runreport.py``); workers lost mid-test (named, not waited for; all of
them: the run ends at once) and a master lost; a spawn message's cost to a worker kept to one parse of
Locust's defaults (``spawncost.py``); the summary printed last (after Locust's final tables) with every file
written; the broker-metrics source picked and sampled during each test (master or local runner); a backlog
run's build watched and switched (``phases.py``).
"""

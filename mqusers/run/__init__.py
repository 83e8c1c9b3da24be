"""One run's state in a process: context, shipping to the master, faults, Locust stats, health, the drain."""

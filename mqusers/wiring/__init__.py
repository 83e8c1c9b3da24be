"""mqusers inside Locust: its events, options and runners wired to the run state, the broker watch and the report."""

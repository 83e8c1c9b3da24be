"""Repository tools that work on the checkout (not shipped in the wheel): ``python -m tools.dashboards``."""

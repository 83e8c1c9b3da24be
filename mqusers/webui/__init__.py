"""The web UI's mqusers part: the parameters form, the mqusers tabs, refusals in the page."""

"""The web UI's mqusers part: the parameters form, the mqusers tabs, refusals in the page.

Modules: ``pages.py`` (``webform.py``, ``webtab.py``, ``assets/``: the form's script and styles).

What they do: the web UI's mqusers tabs, labelled custom parameters in groups, refusals in the page.
"""

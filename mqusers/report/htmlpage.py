"""The HTML pages' one skeleton: head, styles, the charts' data and the inlined scripts (vendored uPlot, MIT).

Every page (:mod:`mqusers.report.htmlreport`'s runs, :mod:`mqusers.report.htmltrend`'s trend) is
one self-contained file that opens offline; ``report.js`` draws the charts from its ``report-data``.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from typing import Any


def asset(name: str) -> str:
    """A file of ``mqusers/report/assets``: the page's script, styles, vendored uPlot."""
    return resources.files("mqusers.report").joinpath("assets", name).read_text(encoding="utf-8")


def page(heading: str, source: str, body: str, data: dict[str, Any]) -> str:
    """The page: ``heading`` (text) and ``source`` (HTML) in its header, then ``body``; ``data`` for its charts."""
    # "</" would end the script element early; JSON allows "<\/" for it.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(heading)}</title>
<style>{asset("uPlot.min.css")}</style><style>{asset("report.css")}</style></head>
<body><header><h1>{escape(heading)}</h1>{source}</header>
{body}
<script id="report-data" type="application/json">{payload}</script>
<script>{asset("uPlot.iife.min.js")}</script>
<script>{asset("report.js")}</script>
</body></html>
"""

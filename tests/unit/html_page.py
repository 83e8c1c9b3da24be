"""A page's tables, scripts and links read back as text, for the HTML pages' unit tests."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """The page's tables (cell text by table class), script bodies and every src/href."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.links: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._script: dict[str, str | None] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.links += [value for key, value in attrs if key in ("src", "href") and value]
        if tag == "table":
            self._table = found.get("class") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "script":
            self._script = found

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._script is not None:
            self.scripts.append((self._script, data))
            self._script = None

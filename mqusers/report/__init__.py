"""One report per run and its formats: summary text, JSON, CSV and the HTML page."""

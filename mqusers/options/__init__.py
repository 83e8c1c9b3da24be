"""Every --mq-* option declared once (the table), its declaration type and the value parsers."""

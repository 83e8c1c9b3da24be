"""One report per run and its formats: summary text, JSON, CSV and the HTML page.

Modules: ``build.py``, ``gates.py``, ``reportformats.py`` (``figures.py``: one text format per kind of number),
``hdrlog.py``, ``failover.py``, ``manydest.py``, ``backlogreport.py``, ``brokerreport.py``, ``perbroker.py``,
``networkbrokers.py``, ``transactionsreport.py``, ``htmlreport.py`` (``htmlrun.py``: a run's section;
``htmlgrids.py``: the matrix's and cluster-compare's tables and runs; ``htmltables.py``: tables and number formats;
``htmlpage.py``: the pages' one skeleton; ``htmltrend.py``: a results folder's trend; ``assets/``: its script,
styles, vendored uPlot), ``history.py`` (a results folder: run files named to sort in time, read back oldest first),
``runfiles.py`` (run JSONs, or folders of them, read into runs), ``comparison.py`` (``htmlcompare.py``),
``baselinefit.py``.

What they do: one report computed per run (``build.py``: rows, notes; ``gates.py``: the gates it fails; no
measurement logic); its summary text, JSON and CSV (``reportformats.py``) and HdrHistogram interval log
(``hdrlog.py``) only read it; the HTML page from saved JSON documents (runs, find-max, curve); a destination
pattern's destinations folded into one row and one section (``manydest.py``: the worst, the distributions of
their p99 and rate); a backlog run's phases (``backlogreport.py``); a run's transactions in words and the
aborted-but-delivered gate (``transactionsreport.py``); consumers on several brokers of a network: what each
broker's consumers received (``perbroker.py``) and each consumers' broker's own figures beside it
(``networkbrokers.py``); NEW against BASE as one document, its console table
(``comparison.py``) and its page (``htmlcompare.py``); whether a run can be a baseline and if not why
(messages lost, a contended or saturated generator, an early end: ``baselinefit.py``, one rule for repeat,
compare and the regression gate).
"""

// mqusers HTML report: draws the charts from the JSON in #report-data with uPlot (inlined before this).
// Each chart's <figure> carries data-points (the y values it was given), which the browser test reads.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const HEIGHT = 260;
  const AXIS_FONT = "12px system-ui, sans-serif";

  // A "nines" axis value x = 1 / (1 - p) shown as the percentile p: 10 -> 90 %, 1000 -> 99.9 %.
  function ninesLabel(x) {
    if (x <= 1) return "0 %";
    const p = 100 * (1 - 1 / x);
    return (p >= 99 ? p.toFixed(Math.min(6, Math.max(0, Math.round(Math.log10(x)) - 2))) : p.toFixed(0)) + " %";
  }

  // One number format on the page: thousands separators, at most 3 decimals (µs in ms).
  function number(v) {
    return v === null || v === undefined ? "" : v.toLocaleString("en-US", { maximumFractionDigits: 3 });
  }

  function clock(seconds) {
    return new Date(seconds * 1000).toISOString().substring(11, 19);
  }

  // Outage windows shaded and faults as dashed lines on a time chart (marks: {windows: [[a, b]], faults: [[t, label]]}).
  function marksPlugin(marks) {
    return {
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            const top = u.bbox.top;
            const height = u.bbox.height;
            ctx.save();
            ctx.fillStyle = "rgba(214, 39, 40, 0.12)";
            marks.windows.forEach(([a, b]) => {
              const x0 = u.valToPos(a, "x", true);
              const x1 = u.valToPos(b, "x", true);
              ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
            });
            ctx.strokeStyle = "#9467bd";
            ctx.setLineDash([5, 4]);
            marks.faults.forEach(([t]) => {
              const x = u.valToPos(t, "x", true);
              ctx.beginPath();
              ctx.moveTo(x, top);
              ctx.lineTo(x, top + height);
              ctx.stroke();
            });
            ctx.restore();
          },
        ],
      },
    };
  }

  // lines: [{label, x: [...], y: [...], points: bool (no line), color, dash: a bound (thin, dashed)}];
  // opts: {x: "time"|"nines"|"rate"|"run", ylog, fit (y from the data, not 0), unit, marks, runs (x "run": labels),
  // bands: [[upper, lower]] (two of the lines, the area between them shaded)}
  function chart(holder, title, lines, opts) {
    // A figure nobody reported (e.g. RabbitMQ has no store %) draws no empty line, nor an empty chart.
    lines = lines.filter((line) => line.y.some((v) => v !== null && v !== undefined));
    if (lines.length === 0) return;
    const figure = document.createElement("figure");
    figure.className = "chart";
    figure.dataset.title = title;
    const caption = document.createElement("figcaption");
    caption.textContent = title;
    figure.appendChild(caption);
    holder.appendChild(figure);
    const ys = lines.map((line) =>
      line.y.map((v) => (v === null || v === undefined || (opts.ylog && v <= 0) ? null : v)),
    );
    figure.dataset.points = String(ys.reduce((n, y) => n + y.filter((v) => v !== null).length, 0));
    const marks = opts.marks || { windows: [], faults: [] };
    figure.dataset.marks = String(marks.windows.length + marks.faults.length);
    figure.title = marks.faults.map((f) => "fault at " + f[1]).join("\n");
    const data = uPlot.join(lines.map((line, i) => [line.x, ys[i]]));
    const series = [{ label: { time: "time", nines: "percentile", run: "run" }[opts.x] || "offered msg/s" }];
    lines.forEach((line, i) => {
      const color = line.color || COLORS[i % COLORS.length];
      series.push({
        label: line.label,
        stroke: color,
        width: line.dash ? 1 : 1.5,
        dash: line.dash ? [4, 4] : undefined,
        spanGaps: true,
        paths: line.points ? () => null : undefined,
        points: { show: line.points || line.x.length < 30, size: line.points ? 9 : 5, fill: color },
        value: (u, v) => (v === null || v === undefined ? "-" : number(v) + " " + opts.unit),
      });
    });
    const xScale = opts.x === "time" ? { time: true } : { time: false, distr: opts.x === "nines" ? 3 : 1 };
    // space: the least pixels between two ticks, wider than a label ("10:21:46", "99.999 %", "16,000").
    const xAxis = {
      label: { nines: "percentile", rate: "offered msg/s", run: "run, oldest first" }[opts.x] || "time (UTC)",
      space: opts.x === "rate" || opts.x === "run" ? 70 : 90,
    };
    if (opts.x === "run") {
      // Whole runs only; a run's start and id in the legend.
      xAxis.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
      series[0].value = (u, v) => (v === null ? "-" : opts.runs[v - 1] || String(v));
    }
    if (opts.x === "time") {
      // Whole seconds (the series' resolution), in UTC as the page's other times.
      xAxis.incrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400];
      xAxis.values = (u, splits) => splits.map(clock);
      series[0].value = (u, v) => (v === null ? "-" : clock(v));
    }
    if (opts.x === "rate") xAxis.values = (u, splits) => splits.map(number);
    if (opts.x === "nines") {
      xAxis.values = (u, splits) => splits.map((x) => (x === null ? "" : ninesLabel(x)));
      series[0].value = (u, v) => (v === null ? "-" : ninesLabel(v));
    }
    xAxis.font = AXIS_FONT;
    xAxis.values = spaced(figure, xAxis.values || ((u, splits) => splits.map(number)));
    const plot = new uPlot(
      {
        width: chartWidth(holder),
        height: HEIGHT,
        series: series,
        // From 0 unless asked to fit: a trend's small differences would be lost under a rate's full height.
        scales: {
          x: xScale,
          y: opts.ylog ? { distr: 3 } : opts.fit ? {} : { range: (u, lo, hi) => [Math.min(0, lo), hi || 1] },
        },
        axes: [xAxis, { label: opts.unit, size: 70, values: (u, splits) => splits.map(number) }],
        bands: (opts.bands || [])
          .filter((pair) => pair.every((line) => lines.includes(line)))
          .map(([upper, lower]) => ({
            series: [lines.indexOf(upper) + 1, lines.indexOf(lower) + 1],
            fill: upper.color + "22",
          })),
        legend: { live: true },
        padding: [12, 28, 0, 0], // room for the last x label ("99.999 %") inside the chart
        plugins: opts.x === "time" ? [marksPlugin(marks)] : [],
      },
      data,
      figure,
    );
    // As wide as the page's column, at any window width (a phone's too), and again when the window resizes.
    new ResizeObserver(() => plot.setSize({ width: chartWidth(holder), height: HEIGHT })).observe(holder);
  }

  // The x labels as drawn, and on the figure the narrowest gap between two of them (data-x-gap, px):
  // labels that run together leave a gap of 0 or less, which the browser test looks for.
  function spaced(figure, format) {
    const measure = document.createElement("canvas").getContext("2d");
    measure.font = AXIS_FONT;
    return (u, splits) => {
      const labels = format(u, splits);
      let gap = Infinity;
      let right = -Infinity;
      splits.forEach((split, i) => {
        if (split === null || !labels[i]) return;
        const half = measure.measureText(labels[i]).width / 2;
        const middle = u.valToPos(split, "x");
        gap = Math.min(gap, middle - half - right);
        right = middle + half;
      });
      figure.dataset.xGap = String(Math.round(gap));
      return labels;
    };
  }

  function chartWidth(holder) {
    return Math.max(240, holder.clientWidth);
  }

  function runCharts(holder, doc) {
    const series = doc.series || {};
    const destinations = Object.entries(series.destinations || {});
    const generators = Object.entries(series.generators || {});
    const each = (entries, pick) => entries.flatMap(([name, col]) => pick(name, col));
    const marks = doc.marks;
    chart(holder, "Send and receive rate", each(destinations, (d, c) => [
      { label: "sent " + d, x: c.t, y: c.sent_per_s },
      { label: "received " + d, x: c.t, y: c.received_per_s },
    ]), { x: "time", unit: "msg/s", marks: marks });
    chart(holder, "Backlog (sent, not yet received by every subscription)", each(destinations, (d, c) => [
      { label: d, x: c.t, y: c.backlog },
    ]), { x: "time", unit: "msg", marks: marks });
    chart(holder, "Receive latency over time", each(destinations, (d, c) => [
      { label: "p50 " + d, x: c.t, y: c.p50_ms },
      { label: "p99 " + d, x: c.t, y: c.p99_ms },
      { label: "p99.9 " + d, x: c.t, y: c.p999_ms },
    ]), { x: "time", unit: "ms", ylog: true, marks: marks });
    chart(holder, "Generator CPU (% of one core)", each(generators, (n, c) => [
      { label: n, x: c.t, y: c.cpu_percent },
    ]), { x: "time", unit: "%" });
    chart(holder, "Generator loop lag (worst per bucket)", each(generators, (n, c) => [
      { label: n, x: c.t, y: c.loop_lag_ms },
    ]), { x: "time", unit: "ms" });
    chart(holder, "Receive latency by percentile", percentileLines(doc, ""), { x: "nines", unit: "ms", ylog: true });
    brokerCharts(holder, doc, destinations, marks);
  }

  // The broker's own readings (--mq-broker-metrics) beside mqusers' backlog.
  function brokerCharts(holder, doc, destinations, marks) {
    const points = doc.broker || [];
    if (points.length === 0) return;
    const t = points.map((p) => p.t);
    const names = [...new Set(points.flatMap((p) => Object.keys(p.depth)))];
    chart(holder, "Broker depth against mqusers' backlog", names.flatMap((d) => [
      { label: "broker depth " + d, x: t, y: points.map((p) => (d in p.depth ? p.depth[d] : null)) },
      ...destinations.filter(([n]) => n === d).map(([n, c]) => ({ label: "backlog " + n, x: c.t, y: c.backlog })),
    ]), { x: "time", unit: "msg", marks: marks });
    chart(holder, "Broker memory and store (% of their limits)", [
      { label: "memory", x: t, y: points.map((p) => p.memory_percent) },
      { label: "store", x: t, y: points.map((p) => p.store_percent) },
    ], { x: "time", unit: "%", marks: marks });
    chart(holder, "Broker JVM heap", [
      { label: "used", x: t, y: points.map((p) => p.heap_used_mb) },
      { label: "committed", x: t, y: points.map((p) => p.heap_committed_mb) },
    ], { x: "time", unit: "MB", marks: marks });
  }

  function percentileLines(doc, prefix) {
    return Object.entries(doc.percentiles || {}).map(([d, points]) => ({
      label: prefix + d,
      x: points.map((p) => p[0]),
      y: points.map((p) => p[1]),
    }));
  }

  function findMaxCharts(holder, doc) {
    const steps = doc.steps.slice().sort((a, b) => a.rate - b.rate);
    const x = steps.map((s) => s.rate);
    const held = (s) => s.sustained && !s.flaky;
    chart(holder, "Offered against achieved rate per step", [
      { label: "offered", x: x, y: x },
      { label: "achieved, kept up", x: x, y: steps.map((s) => (held(s) ? s.achieved : null)), points: true,
        color: "#2ca02c" },
      { label: "achieved, kept up on a rerun (flaky)", x: x, y: steps.map((s) => (s.flaky ? s.achieved : null)),
        points: true, color: "#ff7f0e" },
      { label: "achieved, did not keep up", x: x, y: steps.map((s) => (s.sustained ? null : s.achieved)),
        points: true, color: "#d62728" },
    ], { x: "rate", unit: "msg/s" });
    // The latency bound's figure per step, against the bound itself (absolute, or what the relative one came to).
    const figure = { p50: "p50_ms", "p99.9": "p999_ms", max: "max_ms" }[doc.bound] || "p99_ms";
    const lines = [{ label: (doc.bound || "p99") + " per step", x: x, y: steps.map((s) => s[figure]), points: true }];
    if (doc.bound_ms !== null && doc.bound_ms !== undefined) {
      lines.push({ label: "latency bound", x: x, y: x.map(() => doc.bound_ms), color: "#d62728" });
    }
    chart(holder, "Latency per step against the bound", lines, { x: "rate", unit: "ms", ylog: true });
  }

  function curveCharts(holder, doc) {
    const points = doc.points.slice().sort((a, b) => a.offered - b.offered);
    const x = points.map((p) => p.offered);
    const line = (label, key) => ({ label: label, x: x, y: points.map((p) => p[key]) });
    chart(holder, "Latency against offered load", [
      line("p50", "p50_ms"), line("p99", "p99_ms"), line("p99.9", "p999_ms"), line("max", "max_ms"),
    ], { x: "rate", unit: "ms", ylog: true });
  }

  // A results folder's trend: per run (oldest first) each figure with its 95 % interval, a shaded band.
  function trendCharts(holder, doc) {
    const x = doc.runs.map((r) => r.run);
    const started = (t) => new Date(t * 1000).toISOString().substring(0, 16).replace("T", " ");
    const labels = doc.runs.map((r) => (r.t ? started(r.t) + " UTC " : "") + r.run_id);
    const withBands = (figures) => {
      const lines = [];
      const bands = [];
      figures.forEach((figure, i) => {
        const color = COLORS[i % COLORS.length];
        const column = (k) => doc.runs.map((r) => r.figures[figure][k]);
        const high = { label: figure + " 95 % high", x: x, y: column(2), color: color, dash: true };
        const low = { label: figure + " 95 % low", x: x, y: column(1), color: color, dash: true };
        lines.push({ label: figure, x: x, y: column(0), color: color }, high, low);
        bands.push([high, low]);
      });
      return { lines: lines, bands: bands };
    };
    const throughput = withBands(["throughput"]);
    chart(holder, "Throughput per run: " + doc.operation, throughput.lines,
      { x: "run", unit: "msg/s", runs: labels, bands: throughput.bands, fit: true });
    const latency = withBands(["p50", "p99", "p99.9"]);
    chart(holder, "Latency per run: " + doc.operation, latency.lines,
      { x: "run", unit: "ms", ylog: true, runs: labels, bands: latency.bands });
  }

  const draw = { run: runCharts, trend: trendCharts, "find-max": findMaxCharts, curve: curveCharts, "cluster-compare": () => {}, matrix: () => {} };
  DATA.documents.forEach((doc, i) => {
    draw[doc.kind](document.querySelector('.charts[data-doc="' + i + '"]'), doc);
  });
  const compare = document.querySelector('.charts[data-doc="compare"]');
  if (compare) {
    const lines = DATA.documents.flatMap((doc, i) =>
      doc.kind === "run" ? percentileLines(doc, DATA.titles[i] + " ") : [],
    );
    chart(compare, "Receive latency by percentile, runs overlaid", lines, { x: "nines", unit: "ms", ylog: true });
  }
})();

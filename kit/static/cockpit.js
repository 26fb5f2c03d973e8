// loadkit cockpit: the current run, its thresholds and live charts, drawn as plain SVG from
// /loadkit/live.json every few seconds. Offline by design: no library, no CDN.
(function () {
  "use strict";
  const EVERY_MS = 2000;
  const W = 440, H = 140, L = 48, R = 10, T = 10, B = 22;
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }
  function clock(ts) {
    return new Date(ts * 1000).toLocaleTimeString([], { hour12: false });
  }
  function num(v) {
    return v === null || v === undefined ? "—" : Number(v).toLocaleString(undefined, { maximumFractionDigits: 1 });
  }

  function container() {
    let el = document.getElementById("loadkit-cockpit");
    if (!el) {
      el = document.createElement("section");
      el.id = "loadkit-cockpit";
      document.body.appendChild(el);
      if (document.getElementById("root")) document.body.classList.add("loadkit-beside");
      el.addEventListener("click", (event) => {
        if (event.target.classList.contains("toggle")) document.body.classList.toggle("loadkit-hidden");
      });
    }
    return el;
  }

  // One chart: series [{name, points: [[x, y]]}], horizontal lines [{label, value}], x from x0 to x1.
  function chart(key, title, unit, allSeries, lines, x0, x1, xLabel) {
    const series = allSeries.map((s) => ({ name: s.name, points: s.points.filter((p) => p[0] >= x0 && p[0] <= x1) }));
    const ys = series.flatMap((s) => s.points.map((p) => p[1])).concat(lines.map((l) => l.value));
    let lo = Math.min(0, ...ys), hi = Math.max(1e-9, ...ys);
    hi += (hi - lo) * 0.08;
    const span = x1 - x0 || 1;
    const x = (v) => L + ((v - x0) / span) * (W - L - R);
    const y = (v) => H - B - ((v - lo) / (hi - lo)) * (H - T - B);
    const parts = [`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#ccc"/>`];
    for (const v of [lo, (lo + hi) / 2, hi]) {
      parts.push(`<text x="${L - 4}" y="${y(v) + 3}" text-anchor="end">${num(v)}</text>`);
    }
    parts.push(`<text x="${L}" y="${H - 6}">${esc(xLabel(x0))}</text>`);
    parts.push(`<text x="${W - R}" y="${H - 6}" text-anchor="end">${esc(xLabel(x1))}</text>`);
    lines.forEach((line) => {
      const ly = y(line.value);
      parts.push(`<line class="threshold" x1="${L}" x2="${W - R}" y1="${ly}" y2="${ly}" stroke="#e67e22" stroke-dasharray="5 3"/>`);
      parts.push(`<text x="${W - R - 2}" y="${ly - 3}" text-anchor="end" fill="#e67e22">${esc(line.label)}</text>`);
    });
    series.forEach((s, i) => {
      const pts = s.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
      parts.push(`<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.5" points="${pts}"/>`);
    });
    const latest = series.length && series[0].points.length ? series[0].points[series[0].points.length - 1][1] : "";
    const legend = series
      .map((s, i) => `<span style="color:${COLORS[i % COLORS.length]}">${esc(s.name)} <b class="latest" data-series="${esc(s.name)}">${num(s.points.length ? s.points[s.points.length - 1][1] : null)}</b></span>`)
      .join(" · ");
    return `<figure data-chart="${esc(key)}"><figcaption>${esc(title)}${unit ? " (" + esc(unit) + ")" : ""}: ${legend || "no data yet"}</figcaption>` +
      `<svg viewBox="0 0 ${W} ${H}" data-key="${esc(key)}" data-latest="${latest}">${parts.join("")}</svg></figure>`;
  }

  function thresholdTable(thresholds) {
    if (!thresholds.length) return '<p class="note">No thresholds in this run.</p>';
    const rows = thresholds.map((t) => `<tr data-expr="${esc(t.expr)}"><td>${esc(t.expr)}${t.abort ? " (abort)" : ""}</td>` +
      `<td><span class="state state-${t.state.replace(" ", "-")}">${esc(t.state)}</span></td><td>${num(t.value)}</td><td>${t.samples}</td></tr>`);
    return `<table id="loadkit-thresholds"><tr><th>threshold</th><th>state</th><th>value</th><th>samples</th></tr>${rows.join("")}</table>`;
  }

  function capacityChart(capacity) {
    if (!capacity) return "";
    const xs = capacity.points.map((p) => p[0]);
    const series = [{ name: "RSS", points: capacity.points }];
    const fit = capacity.fit;
    if (fit) {
      const line = (n) => [n, fit.intercept_mib + fit.slope_mib_per_agent * n];
      series.push({ name: `fit ${fit.slope_mib_per_agent.toFixed(2)} MiB/agent`, points: [line(Math.min(...xs)), line(Math.max(...xs))] });
    }
    return chart("capacity", "RSS vs agents", "MiB", series, [], Math.min(...xs), Math.max(...xs), (n) => `${n} agents`);
  }

  let profileDefaults = {};
  fetch("/loadkit/form.json").then((r) => r.json()).then((form) => { profileDefaults = form.profiles; });

  // What the profile chosen in Locust's start form uses, with its defaults; else the run's own values.
  function profileUses(run) {
    const field = document.querySelector('[name="loadProfile"]'); // Locust's form camel-cases field names
    const chosen = field && field.value;
    const params = chosen ? profileDefaults[chosen] : run.params;
    if (!params || !Object.keys(params).length) return "";
    const items = Object.entries(params).map(([k, v]) => `${esc(k)} <b>${esc(v === null ? "—" : v)}</b>`);
    const what = chosen ? `profile <b>${esc(chosen)}</b> uses (its defaults when the fields are empty)` : "this run's parameters";
    return `<p class="note" id="loadkit-profile-uses">${what}: ${items.join(" · ")}</p>`;
  }

  function render(data) {
    const run = data.run;
    const links = `<a href="${esc(run.report)}">report</a><a href="${esc(run.files)}">run directory</a>`;
    const stop = run.stop_reason ? `<p class="note">stop reason: <b id="loadkit-stop-reason">${esc(run.stop_reason)}</b> (exit code ${esc(run.exit_code)})</p>` : "";
    const charts = data.charts.map((c) => chart(c.key, c.title, c.unit, c.series, c.lines, data.t0, data.t1, clock));
    container().innerHTML =
      '<button class="toggle" type="button">cockpit ⇆</button>' +
      `<h2 class="run">loadkit run <span id="loadkit-run-id">${esc(run.id)}</span> · ${esc(run.profile || "profile chosen at start")} · ` +
      `<span id="loadkit-run-state">${esc(run.state)}</span>${links}</h2>${stop}` +
      `<p class="note" id="loadkit-edit">${esc(run.edit || "")}</p>${profileUses(run)}${thresholdTable(data.thresholds)}` +
      `<div class="charts">${charts.join("")}${capacityChart(data.capacity)}</div>`;
  }

  async function poll() {
    try {
      const answer = await fetch("/loadkit/live.json", { cache: "no-store" });
      if (answer.ok) render(await answer.json());
    } catch (err) {
      container().dataset.error = String(err);
    }
    setTimeout(poll, EVERY_MS);
  }
  poll();
})();

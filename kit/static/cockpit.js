// loadkit cockpit: the current run, its thresholds and live charts, drawn as plain SVG from
// /loadkit/live.json every few seconds, beside Locust's page when both fit, below it otherwise; and in
// Locust's start form, what START will run. Offline by design: no library, no CDN.
(function () {
  "use strict";
  const EVERY_MS = 2000;
  const PREVIEW_WAIT_MS = 300;
  const W = 440, H = 140, L = 52, R = 10, T = 10, B = 22;
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
  const STEPS = [1, 2, 2.5, 5, 10]; // tick steps, times a power of ten

  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }
  function clock(ts) {
    return new Date(ts * 1000).toLocaleTimeString([], { hour12: false });
  }
  function num(v) {
    if (v === null || v === undefined) return "—";
    const size = Math.abs(v);
    return Number(v).toLocaleString(undefined, { maximumFractionDigits: size >= 100 ? 0 : size >= 10 ? 1 : 2 });
  }

  // ---- layout: beside Locust when its page fits in what the cockpit leaves, below it otherwise -------
  // The body is a wrapping flex row: Locust's #root asks for --loadkit-locust-min (its header's width
  // while a run goes, Locust 2.47), the cockpit for 420 px. Whenever Locust's page is seen wider than its
  // column, that width becomes the minimum it asks for: then it moves the cockpit below, never under it.
  function layout() {
    const root = document.getElementById("root"), el = document.getElementById("loadkit-cockpit");
    if (!root || !el) return;
    const body = document.body;
    if (root.scrollWidth > root.clientWidth + 1) {
      const asked = parseFloat(getComputedStyle(body).getPropertyValue("--loadkit-locust-min")) || 0;
      body.style.setProperty("--loadkit-locust-min", `${Math.max(asked, root.scrollWidth)}px`);
    }
    const below = el.getBoundingClientRect().left < root.getBoundingClientRect().right - 1;
    body.classList.toggle("loadkit-wrapped", below);
    body.dataset.loadkitLayout = below ? "below" : "beside";
  }

  function container() {
    let el = document.getElementById("loadkit-cockpit");
    if (!el) {
      el = document.createElement("section");
      el.id = "loadkit-cockpit";
      document.body.appendChild(el);
      if (document.getElementById("root")) {
        document.body.classList.add("loadkit-beside");
        window.addEventListener("resize", layout);
        new ResizeObserver(layout).observe(document.getElementById("root"));
      }
      el.addEventListener("click", (event) => {
        if (event.target.classList.contains("toggle")) document.body.classList.toggle("loadkit-hidden");
      });
    }
    return el;
  }

  // ---- charts --------------------------------------------------------------------------------------
  // Round ticks from lo to hi (at least three); a flat series gets an axis of its own, not 0/0/0.
  function ticks(lo, hi) {
    if (hi - lo < 1e-9) hi = lo + (Math.abs(lo) || 1);
    const raw = (hi - lo) / 3;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = STEPS.map((m) => m * power).find((s) => s >= raw);
    const found = [];
    for (let v = Math.floor(lo / step) * step; v < hi + step - 1e-9 * step; v += step) found.push(Number(v.toPrecision(12)));
    return found;
  }

  // One chart: series [{name, points: [[x, y]]}], horizontal lines [{label, value}], x from x0 to x1.
  function chart(key, title, unit, allSeries, lines, x0, x1, xLabel) {
    const series = allSeries.map((s) => ({ name: s.name, points: s.points.filter((p) => p[0] >= x0 && p[0] <= x1) }));
    const ys = series.flatMap((s) => s.points.map((p) => p[1])).concat(lines.map((l) => l.value));
    const marks = ticks(Math.min(0, ...ys), Math.max(0, ...ys));
    const lo = marks[0], hi = marks[marks.length - 1];
    const span = x1 - x0 || 1;
    const x = (v) => L + ((v - x0) / span) * (W - L - R);
    const y = (v) => H - B - ((v - lo) / (hi - lo)) * (H - T - B);
    const parts = [`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#ccc"/>`];
    for (const v of marks) {
      parts.push(`<text class="tick" x="${L - 4}" y="${y(v) + 3}" text-anchor="end">${num(v)}</text>`);
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

  // ---- the run --------------------------------------------------------------------------------------
  function thresholdTable(thresholds) {
    if (!thresholds.length) return '<p class="note">No thresholds in this run.</p>';
    const rows = thresholds.map((t) => `<tr data-expr="${esc(t.expr)}"><td>${esc(t.expr)}${t.abort ? " (abort)" : ""}</td>` +
      `<td><span class="state state-${t.state.replace(" ", "-")}">${esc(t.state)}</span></td>` +
      `<td class="value">${esc(t.shown_value)}</td><td>${esc(t.shown_limit)}</td><td>${t.samples}</td></tr>`);
    return `<table id="loadkit-thresholds"><tr><th>threshold</th><th>state</th><th>value</th><th>limit</th><th>samples</th></tr>${rows.join("")}</table>`;
  }

  function fields(shown) {
    return Object.entries(shown).map(([k, v]) => `${esc(k)} <b>${esc(v)}</b>`).join(" · ");
  }

  function parameters(run) {
    if (!Object.keys(run.params_shown).length) return "";
    const edited = run.edits ? ` now (after ${run.edits} EDIT${run.edits > 1 ? "s" : ""})` : "";
    return `<p class="note" id="loadkit-params">this run's parameters${edited}: ${fields(run.params_shown)}</p>`;
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
      `<p class="note" id="loadkit-edit">${esc(run.edit || "")}</p>${parameters(run)}${thresholdTable(data.thresholds)}` +
      `<div class="charts">${charts.join("")}${capacityChart(data.capacity)}</div>`;
    layout();
  }

  // ---- the start form: what START will run -----------------------------------------------------------
  // Locust's form names its fields in camelCase and posts them in snake_case; so does the preview.
  function startForm() {
    const field = document.querySelector('form [name="loadProfile"]');
    return field && field.form;
  }

  function formFields(form) {
    const found = new URLSearchParams();
    for (const [name, value] of new FormData(form)) found.append(name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase()), value);
    return found;
  }

  function previewHtml(answer) {
    if (answer.error) return `<p class="error">This start would end at once: <b>${esc(answer.error)}</b></p>`;
    const thresholds = answer.thresholds.length ? answer.thresholds.map((t) => `<code>${esc(t)}</code>`).join(" · ") : "none";
    let carried = "";
    if (answer.carried.length) {
      const items = answer.carried.map((c) => `<span class="carried" data-field="${esc(c.field)}">${esc(c.field)} <b>${esc(c.value)}</b></span>`);
      carried = `<p class="carried-note">carried from run ${esc(answer.from_run)} (still in this form): ${items.join(" · ")} · ` +
        '<a href="#" class="reset">reset the form to the command line\'s settings</a></p>';
    }
    return `<p><b>START runs</b> profile <b>${esc(answer.profile)}</b>: ${fields(answer.params_shown)}</p>` +
      `<p>thresholds: ${thresholds}</p>${carried}`;
  }

  let previewTimer = null;
  async function refreshPreview(form) {
    const box = form.querySelector("#loadkit-preview");
    try {
      const answer = await fetch("/loadkit/preview", { method: "POST", body: formFields(form) });
      if (answer.ok) box.innerHTML = previewHtml(await answer.json());
    } catch (err) {
      box.dataset.error = String(err);
    }
  }

  // Called on every poll: a start form on the page (inline before the first run, in a dialog after)
  // gets the preview just above its START button, refreshed as its fields change.
  function watchStartForm() {
    const form = startForm();
    if (!form || form.querySelector("#loadkit-preview")) return;
    const submit = form.querySelector('button[type="submit"]');
    const box = document.createElement("div");
    box.id = "loadkit-preview";
    submit.parentNode.insertBefore(box, submit);
    const later = () => {
      clearTimeout(previewTimer);
      previewTimer = setTimeout(() => refreshPreview(form), PREVIEW_WAIT_MS);
    };
    form.addEventListener("input", later);
    form.addEventListener("change", later);
    box.addEventListener("click", (event) => {
      if (event.target.classList.contains("reset")) {
        event.preventDefault();
        window.location.reload(); // Locust's form starts again from its template: the command line's values
      }
    });
    refreshPreview(form);
  }

  // ---- in view whatever the layout: the run's state beside STOP's reach, and what EDIT could not do ------
  // Below 1560 px the cockpit sits under Locust's page; START is clicked at the bottom of a long form, so
  // once a run starts the page goes back to its top (Locust's STOP) and a small status line stays in view.
  let lastRun = null, noticeUntil = 0;
  function status(run) {
    let el = document.getElementById("loadkit-status");
    if (!el) {
      el = document.createElement("div");
      el.id = "loadkit-status";
      el.innerHTML = '<span id="loadkit-status-run"></span><span id="loadkit-notice"></span>';
      document.body.appendChild(el);
    }
    const going = run.state === "running" || run.state === "spawning";
    el.querySelector("#loadkit-status-run").textContent = `loadkit run ${run.id} · ${run.profile || "profile chosen at start"} · ${run.state}`;
    if (Date.now() > noticeUntil) el.querySelector("#loadkit-notice").textContent = "";
    if (going && lastRun !== null && (lastRun.id !== run.id || !lastRun.going) && window.scrollY > 0) {
      window.scrollTo({ top: 0, behavior: "instant" });
    }
    lastRun = { id: run.id, going };
  }

  function notice(text) {
    const el = document.getElementById("loadkit-notice");
    if (!el) return;
    el.textContent = text;
    noticeUntil = Date.now() + 15000;
  }

  // EDIT posts /swarm while a run goes; the kit answers why when it does not apply (a shaped profile sets
  // the user count itself), which Locust's page does not show: the status line does.
  const locustFetch = window.fetch.bind(window);
  window.fetch = async (resource, init) => {
    const answer = await locustFetch(resource, init);
    if (String(resource && resource.url ? resource.url : resource).endsWith("/swarm") && lastRun && lastRun.going) {
      answer.clone().json().then((body) => { if (body && body.success === false && body.message) notice(body.message.startsWith("EDIT") ? body.message : `EDIT: ${body.message}`); }, () => {});
    }
    return answer;
  };

  async function poll() {
    try {
      const answer = await fetch("/loadkit/live.json", { cache: "no-store" });
      if (answer.ok) {
        const data = await answer.json();
        render(data);
        status(data.run);
      }
      watchStartForm();
    } catch (err) {
      container().dataset.error = String(err);
    }
    setTimeout(poll, EVERY_MS);
  }
  poll();
})();

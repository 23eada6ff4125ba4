/// The inspector's page: one self-contained document (no external script,
/// style or font). Its script reads the token from its own URL, listens
/// to `/events` and renders each snapshot with `textContent` only (no
/// markup from data).
let inspectorPage = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>loadstate inspector</title>
<style>
  :root { color-scheme: light dark; --line: #8884; --muted: #888; }
  body { font: 13px/1.4 system-ui, sans-serif; margin: 0; }
  header { display: flex; gap: 1.5em; align-items: baseline; padding: .6em 1em; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 15px; margin: 0; }
  #conn { color: var(--muted); }
  #conn.live { color: #2a2; }
  main { padding: .5em 1em 2em; }
  h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 1.4em 0 .3em; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .2em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  td.text { font-family: ui-monospace, monospace; max-width: 32em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .status { display: inline-block; padding: 0 .5em; border-radius: 1em; font-weight: 600; }
  .loading, .running { background: #fd4a; }
  .loaded, .finished { background: #4c4a; }
  .error, .failed { background: #f55a; }
  .absent, .idle { background: #8883; }
  .empty { color: var(--muted); }
  button { font: inherit; padding: 0 .5em; }
  td.actions { white-space: nowrap; }
  #filter { font: inherit; padding: .1em .4em; min-width: 18em; margin-left: auto; }
  svg.timeline, svg.plot { display: block; }
  .legend { color: var(--muted); font-size: 11px; }
</style>
</head>
<body>
<header><h1>loadstate inspector</h1><span id="conn">connecting…</span><span id="summary"></span>
<input id="filter" type="search" placeholder="filter cells and loaders: name, key, id, request" aria-label="filter"></header>
<main>
<h2>Cells</h2><table id="cells"></table>
<h2>Jobs in flight</h2><table id="jobs"></table>
<h2>Queued jobs</h2><table id="queued"></table><p id="queued-more" class="empty"></p>
<h2>Loaders</h2><p class="legend">latency of the loads ended in each 5 s over the last minutes: p50 (blue), p90 (orange); jobs queued (grey bars)</p><table id="loaders"></table>
<h2>Caches</h2><table id="caches"></table>
</main>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const query = "token=" + encodeURIComponent(token);
const conn = document.getElementById("conn");

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

function table(id, headings, rows, fill) {
  const t = document.getElementById(id);
  t.replaceChildren();
  const head = t.createTHead().insertRow();
  for (const h of headings) { const th = document.createElement("th"); th.textContent = h; head.appendChild(th); }
  const body = t.createTBody();
  if (rows.length === 0) {
    const td = body.insertRow().insertCell();
    td.colSpan = headings.length; td.className = "empty"; td.textContent = "none";
  }
  for (const r of rows) fill(body.insertRow(), r);
}

function action(params) {
  fetch("action?" + query + "&" + new URLSearchParams(params), { method: "POST" });
}

function us(n) { return n >= 1000 ? (n / 1000).toFixed(1) + " ms" : n + " µs"; }

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}
function tip(e, text) { svg("title", {}, e).textContent = text; }
const COLORS = { loading: "#e0b000", running: "#e0b000", loaded: "#2a2", finished: "#2a2", error: "#d33",
                 failed: "#d33", absent: "#999", idle: "#999" };

// A cell's last events as a bar: one segment per event, as wide as the
// state lasted (at least 3 px), coloured by status; each with its title.
function timeline(events) {
  const width = 180, height = 14;
  const root = svg("svg", { class: "timeline", width, height, viewBox: `0 0 ${width} ${height}` });
  if (!events || events.length === 0) return root;
  // Each event: [status, duration_ms, flag...].
  const total = events.reduce((sum, e) => sum + Math.max(e[1], 1), 0);
  const room = width - 3 * events.length;
  let x = 0;
  for (const [status, ms, ...flags] of events) {
    const w = 3 + room * Math.max(ms, 1) / total;
    const r = svg("rect", { x: x.toFixed(1), y: 1, width: Math.max(w - 1, 1).toFixed(1), height: height - 2,
                            fill: COLORS[status] || "#999", "data-status": status }, root);
    if (flags.length) r.setAttribute("fill-opacity", "0.55");
    tip(r, status + (flags.length ? " (" + flags.join(", ") + ")" : "") + " for " + ms + " ms");
    x += w;
  }
  return root;
}

// A loader's series: p50 and p90 lines (one scale), queued jobs as bars
// (their own scale), the newest point at the right.
function plot(points) {
  const width = 220, height = 44;
  const root = svg("svg", { class: "plot", width, height, viewBox: `0 0 ${width} ${height}` });
  if (!points || points.length === 0) return root;
  // One point (a loader followed since less than one sample): a level line.
  if (points.length === 1) points = [points[0], points[0]];
  const step = width / (points.length - 1);
  const top = Math.max(1, ...points.map((p) => p.p90_us));
  const most = Math.max(1, ...points.map((p) => p.queued));
  points.forEach((p, i) => {
    if (p.queued > 0) {
      const h = (height - 4) * p.queued / most;
      svg("rect", { x: Math.max(i * step - 2, 0).toFixed(1), y: (height - h).toFixed(1), width: 4, height: h.toFixed(1),
                    fill: "#8888", class: "queued" }, root);
    }
  });
  for (const [key, color] of [["p90_us", "#e80"], ["p50_us", "#36c"]]) {
    const line = points.map((p, i) => (i * step).toFixed(1) + "," +
                                      (height - 2 - (height - 4) * p[key] / top).toFixed(1)).join(" ");
    svg("polyline", { points: line, fill: "none", stroke: color, "stroke-width": 1.5, class: key }, root);
  }
  const last = points[points.length - 1];
  tip(root, "last " + ((points.length - 1) * 5) + " s: now p50 " + us(last.p50_us) + ", p90 " + us(last.p90_us) +
      ", max " + us(last.max_us) + ", " + last.loads + " loads, " + last.queued + " queued; highest p90 " + us(top));
  return root;
}

// What the filter box asks for: rows whose id, name, key or request holds it (any case).
const filterBox = document.getElementById("filter");
function matches(...texts) {
  const wanted = filterBox.value.trim().toLowerCase();
  if (wanted === "") return true;
  return texts.some((t) => t !== null && t !== undefined && String(t).toLowerCase().includes(wanted));
}
let lastSnapshot = null;
filterBox.addEventListener("input", () => { if (lastSnapshot) render(lastSnapshot); });

function render(s) {
  document.getElementById("summary").textContent =
    s.cells_alive + " cells, " + s.loads.jobs_in_flight + " jobs in flight, " + s.loads.started + " loads, " +
    s.events_delivered + " events" + (s.metrics ? "" : " (metrics off)") +
    (s.online === false ? ", offline" : ", online") + (s.foreground === false ? ", background" : ", foreground") +
    (s.loads_paused ? " (" + s.loads_paused + " loads paused)" : "");
  const cellHeadings = ["id", "name", "kind", "status", "timeline", "flags", "attempt", "seq", "key", "request", "value",
                        "error"];
  if (s.actions) cellHeadings.push("");
  const cells = s.cells.filter((c) => matches(c.id, c.name, c.key, c.request));
  table("cells", cellHeadings, cells, (row, c) => {
    row.dataset.cell = c.id;
    cell(row, c.id, "num");
    cell(row, c.name, "text");
    cell(row, c.kind);
    const status = cell(row, "");
    const badge = document.createElement("span");
    badge.className = "status " + c.status; badge.textContent = c.status;
    status.appendChild(badge);
    cell(row, "").appendChild(timeline(c.events));
    cell(row, c.flags.join(", "));
    cell(row, c.attempt, "num");
    cell(row, c.seq, "num");
    cell(row, c.key, "text");
    cell(row, c.request, "text");
    cell(row, c.value, "text");
    cell(row, c.error, "text");
    if (s.actions) {
      const td = row.insertCell();
      td.className = "actions";
      for (const what of ["refresh", "cancel"]) {
        const b = document.createElement("button");
        b.textContent = what; b.onclick = () => action({ do: what, cell: c.id });
        td.appendChild(b);
      }
    }
  });
  table("jobs", ["id", "loader", "attempt", "age", "cells", "request"], s.jobs, (row, j) => {
    cell(row, j.id, "num"); cell(row, j.loader, "num"); cell(row, j.attempt, "num");
    cell(row, (j.age_ms / 1000).toFixed(1) + " s", "num"); cell(row, j.cells, "num"); cell(row, j.request, "text");
  });
  const queued = s.loaders.flatMap((l) => l.queued_jobs);
  table("queued", ["loader", "id", "priority", "attempt", "waiting for", "cells", "request"], queued, (row, j) => {
    row.dataset.job = j.id;
    cell(row, j.loader, "num"); cell(row, j.id, "num"); cell(row, j.priority, "num"); cell(row, j.attempt, "num");
    cell(row, (j.age_ms / 1000).toFixed(1) + " s", "num"); cell(row, j.cells, "num"); cell(row, j.request, "text");
  });
  document.getElementById("queued-more").textContent = s.loaders
    .filter((l) => l.queued_jobs_total > l.queued_jobs.length)
    .map((l) => "loader " + l.id + ": the first " + l.queued_jobs.length + " of " + l.queued_jobs_total + " shown")
    .join("; ");
  const loaders = s.loaders.filter((l) => matches(l.id, l.name));
  table("loaders", ["id", "name", "latency, last minutes", "started", "succeeded", "failed", "cancelled", "timed out",
                    "from cache", "retried", "shared", "in flight", "waiting", "queued", "p50", "p90", "p99", "max",
                    "queue wait p50"], loaders,
        (row, l) => {
    const m = l.loads;
    row.dataset.loader = l.id;
    cell(row, l.id, "num");
    cell(row, l.name, "text");
    cell(row, "").appendChild(plot(l.series && l.series.points));
    for (const k of ["started", "succeeded", "failed", "cancelled", "timed_out", "from_cache", "retried", "shared",
                     "jobs_in_flight"])
      cell(row, m[k], "num");
    cell(row, l.queued_now, "num");
    cell(row, m.queued, "num");
    for (const k of ["p50_us", "p90_us", "p99_us", "max_us", "queue_wait_p50_us"]) cell(row, us(m[k]), "num");
  });
  const cacheHeadings = ["id", "kind", "entries", "bytes", "hits", "misses", "hit rate", "evictions", "expirations"];
  if (s.actions) cacheHeadings.push("");
  table("caches", cacheHeadings, s.caches, (row, c) => {
    cell(row, c.id, "num"); cell(row, c.kind);
    for (const k of ["entries", "bytes", "hits", "misses"]) cell(row, c[k], "num");
    cell(row, c.hit_rate === null ? "–" : (c.hit_rate * 100).toFixed(1) + " %", "num");
    cell(row, c.evictions, "num"); cell(row, c.expirations, "num");
    if (s.actions) {
      const td = row.insertCell();
      td.className = "actions";
      const input = document.createElement("input");
      input.placeholder = "key prefix"; input.size = 12;
      const b = document.createElement("button");
      b.textContent = "invalidate"; b.onclick = () => action({ do: "invalidate", cache: c.id, prefix: input.value });
      td.append(input, b);
    }
  });
}

const events = new EventSource("events?" + query);
events.addEventListener("snapshot", (e) => {
  conn.textContent = "live"; conn.className = "live";
  lastSnapshot = JSON.parse(e.data);
  render(lastSnapshot);
});
events.onerror = () => { conn.textContent = "disconnected, retrying…"; conn.className = ""; };
</script>
</body>
</html>
"""#

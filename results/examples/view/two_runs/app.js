// memcore-view: the page. Data files (data/*.js) call MV.site / MV.run / MV.chunk / MV.conv with their JSON;
// item detail and conversations are loaded on demand by adding a <script>, so the site works from file://.
"use strict";

const CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"};
const OUTCOMES = [
  ["", "any outcome"],
  ["f1zero", "F1 = 0 (miss)"],
  ["f1part", "0 < F1 < 1"],
  ["f1full", "F1 = 1"],
  ["jwrong", "judge: wrong"],
  ["jright", "judge: correct"],
  ["rzero", "recall = 0"],
  ["rpart", "0 < recall < 1"],
  ["rfull", "recall = 1"],
  ["gmiss", "a gold turn not in context"],
];
const COLUMNS = [
  ["id", "item"], ["cat", "cat"], ["q", "question"], ["gold", "gold"], ["ans", "answer"],
  ["f1", "F1"], ["bleu1", "BLEU-1"], ["judge", "J"], ["recall", "recall"], ["hit", "hit"],
  ["ctok", "ctx tok"], ["notes", "notes"], ["rounds", "rounds"], ["grank", "gold rank"],
  ["gmiss", "gold missing"], ["tok", "LLM tok"], ["lat", "latency s"],
];
const TEXT_COLS = new Set(["id", "q", "gold", "ans"]);
// Rows drawn at once; "show more" adds as many. Filtering and sorting always cover every item.
const PAGE = 200;

const MV = {
  meta: null,
  runs: [],
  byId: [],
  details: [],
  convs: {},
  pending: {},
  site(meta) { MV.meta = meta; },
  run(i, data) {
    const rows = data.rows.map((r) => Object.fromEntries(data.cols.map((c, k) => [c, r[k]])));
    MV.runs[i] = Object.assign({}, data, {rows: rows});
    MV.byId[i] = new Map(rows.map((r) => [r.id, r]));
  },
  chunk(i, conv, data) { (MV.details[i] = MV.details[i] || {})[conv] = data; },
  conv(id, data) {
    data.index = new Map(data.turns.map((t, k) => [t[0], k]));
    MV.convs[id] = data;
  },
};

// ------------------------------------------------------------------------------------------- helpers
function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function pct(v) { return v == null ? "–" : (100 * v).toFixed(1); }
function num(v, d) { return v == null ? "–" : Number(v).toLocaleString("en", {maximumFractionDigits: d == null ? 0 : d}); }
function el(id) { return document.getElementById(id); }

function loadScript(src) {
  if (!MV.pending[src]) {
    MV.pending[src] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = () => resolve();
      s.onerror = () => reject(new Error("cannot load " + src));
      document.head.appendChild(s);
    });
  }
  return MV.pending[src];
}

// Turn ids stored as indices into the conversation's turns, [first, last] for a run of consecutive ones.
function decodeIds(enc, turns) {
  const out = [];
  for (const e of enc) {
    if (Array.isArray(e)) { for (let k = e[0]; k <= e[1]; k++) out.push(turns[k][0]); }
    else if (typeof e === "number") out.push(turns[e][0]);
    else out.push(String(e));
  }
  return out;
}
function decodeInts(enc) {
  const out = [];
  for (const e of enc) {
    if (Array.isArray(e)) { for (let k = e[0]; k <= e[1]; k++) out.push(k); } else out.push(Number(e));
  }
  return out;
}

function expandRuns(pairs) {
  const out = [];
  for (const [v, n] of pairs || []) for (let k = 0; k < n; k++) out.push(v);
  return out;
}

function markdown(text) {
  // Enough Markdown for the report's tables: pipe tables, headings, paragraphs.
  const lines = String(text || "").split("\n");
  let html = "", table = null;
  const flush = () => {
    if (!table) return;
    html += "<table class='md'>" + table.map((cells, k) => "<tr>" + cells.map((c) =>
      k === 0 ? "<th>" + esc(c) + "</th>" : "<td>" + esc(c) + "</td>").join("") + "</tr>").join("") + "</table>";
    table = null;
  };
  for (const raw of lines) {
    const line = raw.trim();
    if (line.startsWith("|")) {
      const cells = line.replace(/^\||\|$/g, "").split("|").map((c) => c.trim().replace(/\*\*/g, ""));
      if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
      (table = table || []).push(cells);
      continue;
    }
    flush();
    if (!line) continue;
    const h = line.match(/^(#+)\s*(.*)$/);
    html += h ? "<h4>" + esc(h[2]) + "</h4>" : "<p class='note'>" + esc(line.replace(/\*\*/g, "")) + "</p>";
  }
  flush();
  return html;
}

function setStatus(text) { el("status").textContent = text || ""; }

function parseHash() {
  const h = location.hash.replace(/^#/, "");
  const [path, query] = h.split("?");
  const params = new URLSearchParams(query || "");
  const parts = (path || "overview").split("/").map(decodeURIComponent);
  return {view: parts[0] || "overview", arg: parts.slice(1).join("/"), params: params};
}
function go(view, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== "" && v != null) q.set(k, v);
  const s = q.toString();
  location.hash = view + (s ? "?" + s : "");
}

// ------------------------------------------------------------------------------------------- overview
function renderOverview() {
  let html = "";
  MV.runs.forEach((run, i) => {
    const d = run.disclosure;
    html += `<section class="run" id="overview-run${i}"><h2>${MV.runs.length > 1 ? (i === 0 ? "A: " : "B: ") : ""}${esc(run.label)}</h2>`;
    html += `<p class="path">${esc(run.path)} · ${num(run.n_items)} items</p>`;
    html += "<h3>Disclosure</h3><table class='kv'>" + Object.entries(d).map(([k, v]) =>
      `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("") + "</table>";
    html += "<h3>Per category (as memcore-run prints it)</h3>" + markdown(run.table);
    html += "<h3>Report detail table</h3>" + markdown(run.detail);
    const c = run.cost;
    html += "<h3>Cost</h3><table class='kv'>" + [
      ["LLM calls / conversation", num(c.llm_calls_per_conv, 1)],
      ["tokens / conversation", num(c.tokens_per_conv)],
      ["memory build: calls / tokens", num(c.build_calls) + " / " + num(c.build_tokens)],
      ["QA: calls / tokens (questions covered)", num(c.qa_calls) + " / " + num(c.qa_tokens) + " (" + num(c.qa_questions) + ")"],
      ["parse fallbacks", num(c.parse_fallbacks)],
      ["wall s / conversation", num(c.wall_s_per_conv, 1)],
      ["USD (this run, estimate)", c.usd_this_run == null ? "–" : "$" + Number(c.usd_this_run).toFixed(4)],
    ].map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("") + "</table>";
    if (run.ier) {
      const r = run.ier;
      html += `<h3>Iterative refinement</h3><p>${num(r.n_refined)} of ${num(r.n)} items refined; recall round 1 ${pct(r.recall_round1)} → final ${pct(r.recall_final)} %, hit ${pct(r.hit_round1)} → ${pct(r.hit_final)} %.</p>`;
    }
    if (run.plots && run.plots.length) {
      html += "<h3>The report's plots</h3><p class='note'>From the memcore-report output beside this run; they show every run of that report.</p><div class='plots'>" + run.plots.map((p) =>
        `<a href="data/plots/${esc(p)}"><img src="data/plots/${esc(p)}" alt="${esc(p)}"></a>`).join("") + "</div>";
    } else {
      html += "<p class='note'>No report plots found beside this run (memcore-report writes them under report/plots).</p>";
    }
    html += "</section>";
  });
  el("main").innerHTML = html;
}

// ------------------------------------------------------------------------------------------- items
function outcomeOk(r, o) {
  switch (o) {
    case "f1zero": return r.f1 != null && r.f1 === 0;
    case "f1part": return r.f1 != null && r.f1 > 0 && r.f1 < 1;
    case "f1full": return r.f1 != null && r.f1 === 1;
    case "jwrong": return r.judge != null && r.judge < 0.5;
    case "jright": return r.judge != null && r.judge >= 0.5;
    case "rzero": return r.recall != null && r.recall === 0;
    case "rpart": return r.recall != null && r.recall > 0 && r.recall < 1;
    case "rfull": return r.recall != null && r.recall === 1;
    case "gmiss": return r.gmiss > 0;
    default: return true;
  }
}

function filterRows(rows, p) {
  const cat = p.get("cat") || "", out = p.get("out") || "", text = (p.get("q") || "").toLowerCase();
  return rows.filter((r) => (!cat || String(r.cat) === cat) && outcomeOk(r, out) &&
    (!text || [r.id, r.q, r.gold, r.ans].some((s) => s != null && String(s).toLowerCase().includes(text))));
}

function sortRows(rows, key, dir) {
  if (!key) return rows;
  const sign = dir === "desc" ? -1 : 1;
  return rows.slice().sort((a, b) => {
    const x = a[key], y = b[key];
    if (x == null && y == null) return 0;
    if (x == null) return 1;
    if (y == null) return -1;
    return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * sign;
  });
}

function select(id, options, value) {
  return `<select id="${id}">` + options.map(([v, label]) =>
    `<option value="${esc(v)}"${String(v) === String(value) ? " selected" : ""}>${esc(label)}</option>`).join("") + "</select>";
}

function renderItems(p) {
  const ri = Number(p.get("run") || 0);
  const run = MV.runs[ri];
  const cats = [["", "all categories"], ...[...new Set(run.rows.map((r) => r.cat))].sort().map((c) => [String(c), c + " " + (CATS[c] || "")])];
  let html = "<div class='filters'>";
  if (MV.runs.length > 1) html += select("f-run", MV.runs.map((r, i) => [String(i), (i ? "B: " : "A: ") + r.label]), ri);
  html += select("f-cat", cats, p.get("cat") || "");
  html += select("f-out", OUTCOMES, p.get("out") || "");
  html += `<input id="f-q" type="search" placeholder="text in id, question, gold, answer" value="${esc(p.get("q") || "")}">`;
  html += "<span id='f-count'></span></div><div id='items-table'></div>";
  el("main").innerHTML = html;
  const update = () => {
    const t0 = performance.now();
    const q = {run: el("f-run") ? el("f-run").value : "", cat: el("f-cat").value, out: el("f-out").value,
      q: el("f-q").value, sort: p.get("sort"), dir: p.get("dir")};
    history.replaceState(null, "", "#items?" + new URLSearchParams(Object.entries(q).filter(([, v]) => v)).toString());
    p = new URLSearchParams(location.hash.split("?")[1] || "");
    drawItemTable(MV.runs[Number(q.run || 0)], p);
    window.__lastFilterMs = performance.now() - t0;
  };
  for (const id of ["f-run", "f-cat", "f-out"]) if (el(id)) el(id).addEventListener("change", update);
  el("f-q").addEventListener("input", update);
  drawItemTable(run, p);
}

function drawItemTable(run, p) {
  const rows = sortRows(filterRows(run.rows, p), p.get("sort"), p.get("dir"));
  MV.lastList = {ids: rows.map((r) => r.id), back: location.hash};
  el("f-count").textContent = `${rows.length} of ${run.rows.length} items`;
  const sortKey = p.get("sort"), dir = p.get("dir");
  el("items-table").innerHTML = "<table class='items'><thead><tr>" + COLUMNS.map(([k, label]) => {
    const mark = sortKey === k ? (dir === "desc" ? " ▼" : " ▲") : "";
    return `<th data-sort="${k}">${esc(label)}${mark}</th>`;
  }).join("") + "</tr></thead><tbody></tbody></table><p id='more'></p>";
  const body = el("items-table").querySelector("tbody");
  let shown = 0;
  const more = () => {
    const next = rows.slice(shown, shown + PAGE);
    body.insertAdjacentHTML("beforeend", next.map(itemRow).join(""));
    shown += next.length;
    el("more").innerHTML = shown < rows.length ? `<button id="more-btn">show ${Math.min(PAGE, rows.length - shown)} more (${rows.length - shown} not shown)</button>` : "";
    if (el("more-btn")) el("more-btn").addEventListener("click", more);
  };
  more();
  el("items-table").querySelector("thead").addEventListener("click", (ev) => {
    const th = ev.target.closest("th");
    if (!th) return;
    const k = th.dataset.sort;
    const nextDir = sortKey === k && dir !== "desc" ? "desc" : "asc";
    const q = new URLSearchParams(location.hash.split("?")[1] || "");
    q.set("sort", k); q.set("dir", nextDir);
    location.hash = "items?" + q.toString();
  });
  body.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr");
    if (tr) location.hash = "item/" + encodeURIComponent(tr.dataset.id);
  });
}

function itemRow(r) {
  return `<tr data-id="${esc(r.id)}">` + COLUMNS.map(([k]) => {
    const v = r[k];
    if (k === "cat") return `<td>${v}</td>`;
    if (TEXT_COLS.has(k)) return `<td class="t">${esc(v == null ? "–" : v)}</td>`;
    if (["f1", "bleu1", "judge", "recall", "hit"].includes(k)) return `<td class="${k === "f1" || k === "judge" ? scoreClass(v) : ""}">${v == null ? "–" : v.toFixed(2)}</td>`;
    return `<td>${v == null ? "–" : esc(v)}</td>`;
  }).join("") + "</tr>";
}

function scoreClass(v) { return v == null ? "" : v >= 0.5 ? "good" : v > 0 ? "mid" : "bad"; }

// ------------------------------------------------------------------------------------------- one item
async function renderItem(id) {
  const present = MV.runs.map((_, i) => MV.byId[i].get(id));
  const first = present.find((r) => r);
  if (!first) { el("main").innerHTML = `<p>No item ${esc(id)} in ${MV.runs.length > 1 ? "these runs" : "this run"}.</p>`; return; }
  setStatus("loading item…");
  const conv = first.conv;
  const loads = [];
  if (MV.meta.convs[conv]) loads.push(loadScript(MV.meta.convs[conv]));
  MV.runs.forEach((run, i) => { if (present[i] && run.chunks[conv]) loads.push(loadScript(run.chunks[conv])); });
  try { await Promise.all(loads); } catch (e) { el("main").innerHTML = `<p class="bad">${esc(e.message)}</p>`; setStatus(""); return; }
  setStatus("");
  const c = MV.convs[conv];
  let html = `<p class="crumbs">${listNav(id)} · ${esc(id)} · conversation ${esc(conv)}</p>`;
  html += `<h2 id="item-question">${esc(first.q || "(question not stored in this slim archive)")}</h2>`;
  html += `<p>category ${first.cat} ${esc(CATS[first.cat] || "")} · gold answer: <strong id="item-gold">${esc(first.gold)}</strong></p>`;
  html += `<div class="cols cols-${MV.runs.length}">`;
  MV.runs.forEach((run, i) => {
    const row = present[i];
    html += `<div class="col" id="item-run${i}"><h3>${MV.runs.length > 1 ? (i ? "B: " : "A: ") : ""}${esc(run.label)}</h3>`;
    html += row ? itemColumn(row, MV.details[i][conv].items[id], MV.details[i][conv].notes, c) : "<p>not in this run</p>";
    html += "</div>";
  });
  el("main").innerHTML = html + "</div>";
}

// Previous / next item of the list the item was opened from (keys: j / k), and the way back to that list.
function listNav(id) {
  const list = MV.lastList;
  const k = list ? list.ids.indexOf(id) : -1;
  if (k < 0) return `<a href="#items">← all items</a>`;
  const link = (j, label) => j >= 0 && j < list.ids.length ? `<a id="${label === "next" ? "nav-next" : "nav-prev"}" href="#item/${encodeURIComponent(list.ids[j])}">${label === "next" ? "next →" : "← previous"}</a>` : `<span class="off">${label === "next" ? "next →" : "← previous"}</span>`;
  return `<a href="${esc(list.back)}">↑ back to the list</a> · ${link(k - 1, "prev")} · item ${k + 1} of ${list.ids.length} · ${link(k + 1, "next")} <span class="note">(keys j / k)</span>`;
}

document.addEventListener("keydown", (ev) => {
  if (document.body.dataset.view !== "item" || ev.target.closest("input, select, textarea")) return;
  const target = ev.key === "j" ? el("nav-next") : ev.key === "k" ? el("nav-prev") : null;
  if (target) location.hash = target.getAttribute("href");
});

function turnLine(c, dia, gold, extraClass) {
  const k = c ? c.index.get(dia) : undefined;
  if (k === undefined) return `<div class="turn ${gold ? "gold" : ""} ${extraClass || ""}" data-dia="${esc(dia)}"><span class="dia">${esc(dia)}</span> <em>(not a turn of this slice)</em></div>`;
  const t = c.turns[k];
  const cap = t[4] && !String(t[2]).includes(t[4]) ? ` <span class="cap">[shares an image: ${esc(t[4])}]</span>` : "";
  return `<div class="turn ${gold ? "gold" : ""} ${extraClass || ""}" data-dia="${esc(dia)}"><span class="dia">${esc(dia)}</span> <span class="spk">${esc(t[1])}:</span> ${esc(t[2])}${cap}</div>`;
}

function kvTable(pairs, cls) {
  return `<table class="kv ${cls || ""}">` + pairs.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${v}</td></tr>`).join("") + "</table>";
}

// An imported run's item: the vendor's own judge's verdict ("J as published", never the harness's J).
function publishedRows(pub) {
  if (!pub) return [];
  const grade = pub.grade == null ? "not graded" : Number(pub.grade).toFixed(2);
  const votes = (pub.judgements || []).map((v) => (v ? "correct" : "wrong")).join(", ");
  const rows = [["J as published (vendor's judge)", esc(grade) + (votes ? ` (${esc(votes)})` : "")]];
  if (pub.question_differs) rows.push(["question in the file", `<span class="bad">${esc(pub.question)}</span>`]);
  return rows;
}

function itemColumn(row, d, noteTable, c) {
  const ev = new Set(d.ev);
  let html = "";
  html += kvTable([
    ["answer", `<span class="answer">${esc(row.ans == null ? "(retrieval only: not answered)" : row.ans)}</span>`],
    ...(d.raw != null && d.raw !== row.ans ? [["raw reply", `<code>${esc(d.raw)}</code>`]] : []),
    ...Object.entries(d.scores).map(([k, v]) => [k, esc(Array.isArray(v) ? v.map((x) => Number(x).toFixed(2)).join(", ") : typeof v === "number" ? v.toFixed(3) : JSON.stringify(v))]),
    ["recall / hit", `${row.recall == null ? "–" : row.recall.toFixed(2)} / ${row.hit == null ? "–" : row.hit.toFixed(2)}`],
    ["context tokens · notes · rounds", `${num(row.ctok)} · ${num(row.notes)} · ${num(row.rounds)}`],
    ["prompt", esc(d.prompt || "–") + (d.prompt_hash ? ` <code>${esc(d.prompt_hash)}</code>` : "")],
    ...publishedRows(d.extra && d.extra.published),
  ], "scores");
  if (d.audited) {
    html += "<h4>Audited gold</h4>" + kvTable([["gold", esc(d.audited.gold)], ["scores", esc(JSON.stringify(d.audited.scores))], ["recall / hit", esc(d.audited.recall + " / " + d.audited.hit)]]);
  }
  if (d.judge) {
    html += `<h4>Judge (${esc(d.judge.preset || "")}) — majority ${esc(d.judge.majority || "–")}</h4><ol class="judge">` +
      (d.judge.runs || []).map((r) => `<li class="${r.label === "CORRECT" ? "good" : "bad"}">${esc(r.label)}${r.parsed === false ? " (unparsed)" : ""}${r.reason ? " — " + esc(r.reason) : ""}</li>`).join("") + "</ol>";
  }
  // Gold evidence: where each gold turn stood, and the missing ones shown from the conversation.
  html += "<h4>Gold evidence</h4>";
  if (!d.granks.length) html += "<p class='note'>This item has no gold evidence turns.</p>";
  html += "<div class='golds'>";
  for (const g of d.granks) {
    let where;
    if (g.rank != null) where = `<span class="good">in context: note ${g.rank} of ${g.n_notes}, after ${num(g.tokens_before)} tokens</span>`;
    else if (g.in_round1) where = `<span class="bad">not in context: in round 1's pool, dropped by refinement</span>`;
    else if (g.in_retrieved) where = `<span class="bad">not in the notes the answerer got (retrieved ids only)</span>`;
    else {
      const dropped = ((d.extra || {}).context_budget || {}).dropped;
      where = `<span class="bad">not retrieved: not among the ${g.n_notes} notes handed over` +
        (dropped ? ` (${dropped} candidates were cut to fit the token budget; the item does not record which)` : "") + "</span>";
    }
    html += `<div class="gold-status">${where}</div>` + turnLine(c, g.dia_id, true, g.rank == null ? "missing" : "present");
  }
  html += "</div>";
  // IER rounds.
  const x = d.extra || {};
  if (x.rounds_log || x.ier_stop) {
    html += `<h4>Iterative refinement${x.ier_stop ? " — stopped: " + esc(x.ier_stop) : ""}</h4>`;
    if (x.rounds_log) {
      html += "<ol class='rounds'>" + x.rounds_log.map((r) => {
        const plan = r.plan || {};
        const rest = Object.entries(r).filter(([k]) => !["round", "plan"].includes(k));
        return `<li>round ${esc(r.round)}: query <q>${esc(plan.query || "")}</q>` +
          (plan.topic && plan.topic !== plan.query ? `, topic <q>${esc(plan.topic)}</q>` : "") +
          (plan.entities ? `, entities ${esc((plan.entities || []).join(", "))}` : "") +
          (rest.length ? ` · ${rest.map(([k, v]) => esc(k) + ": " + esc(JSON.stringify(v))).join(" · ")}` : "") + "</li>";
      }).join("") + "</ol>";
    } else {
      html += `<p class='note'>${d.slim ? "The round log (sub-queries) is not kept in a slim archive; only the stop reason is." : "The item records no round log; only the stop reason."}</p>`;
    }
    if (x.round1_dia_ids) html += `<p class="note">Round 1's pool: ${x.round1_dia_ids.filter((i) => ev.has(i)).length} of ${ev.size} gold turns.</p>`;
  }
  // Usage and latency.
  const usage = d.usage || {};
  const lat = d.latency || {};
  const stages = [...new Set([...Object.keys(usage), ...Object.keys(lat)])];
  if (stages.length) {
    html += "<h4>Tokens and latency</h4><table class='usage'><tr><th>stage</th><th>calls</th><th>cached</th><th>prompt tok</th><th>completion tok</th><th>parse retries / failures</th><th>latency s</th></tr>" +
      stages.map((s) => {
        const u = usage[s] || {};
        return `<tr><td>${esc(s)}</td><td>${num(u.calls)}</td><td>${num(u.cached_calls)}</td><td>${num(u.prompt_tokens)}</td><td>${num(u.completion_tokens)}</td><td>${num(u.parse_retries)} / ${num(u.parse_failures)}</td><td>${lat[s] == null ? "–" : Number(lat[s]).toFixed(2)}</td></tr>`;
      }).join("") + "</table>";
    if (!Object.keys(lat).length) html += `<p class='note'>${d.slim ? "Latencies are not kept in a slim archive." : "The item records no latencies."}</p>`;
  }
  const other = Object.entries(x).filter(([k]) => !["rounds_log", "ier_stop", "round1_dia_ids"].includes(k));
  if (other.length) html += "<h4>Method extras</h4>" + kvTable(other.map(([k, v]) => [k, `<code>${esc(JSON.stringify(v))}</code>`]));
  // The context, note by note.
  const refs = decodeInts(d.n);
  const noteScores = expandRuns(d.ns), noteChannels = expandRuns(d.nc);
  html += `<h4>Context the answerer got (${refs.length} notes, ${num(row.ctok)} tokens)</h4>`;
  html += "<p class='note recon'>Reconstructed from the notes' turn ids: items do not store the rendered context, so each note is shown as the conversation turns it cites; a method's own note text (summaries, keywords, timestamps) is not shown. Gold evidence turns are highlighted.</p>";
  html += "<div class='context'>";
  const parts = [];
  refs.forEach((ref, k) => {
    const [noteId, enc, tokens] = noteTable[ref];
    const ids = c ? decodeIds(enc, c.turns) : enc.map(String);
    const score = noteScores[k];
    const ch = noteChannels[k];
    const hasGold = ids.some((i) => ev.has(i));
    parts.push(`<div class="note-block${hasGold ? " has-gold" : ""}"><div class="note-head">#${k + 1} ${esc(noteId)} · ${num(tokens)} tok${score != null ? " · score " + score : ""}${ch ? " · " + esc(ch) : ""}</div>` +
      ids.map((i) => turnLine(c, i, ev.has(i), "in-context")).join("") + "</div>");
  });
  html += parts.join("") + "</div>";
  if (d.rid) {
    const rid = c ? decodeIds(d.rid, c.turns) : d.rid.map(String);
    html += `<h4>Retrieved turn ids (differ from the notes' turns)</h4><p class="ids">${rid.map((i) => `<span class="${ev.has(i) ? "gold" : ""}">${esc(i)}</span>`).join(" ")}</p>`;
  }
  return html;
}

// ------------------------------------------------------------------------------------------- two runs
function renderDiff(p) {
  if (MV.runs.length < 2) { el("main").innerHTML = "<p>Pass two runs to memcore-view to compare them.</p>"; return; }
  const [A, B] = MV.runs;
  const metric = p.get("metric") || (A.rows.some((r) => r.f1 != null) && B.rows.some((r) => r.f1 != null) ? "f1" : "recall");
  let html = `<h2>A: ${esc(A.label)} vs B: ${esc(B.label)}</h2>`;
  const deltas = MV.meta.diff.deltas;
  const ms = ["f1", "judge", "recall"].filter((m) => deltas.some((r) => r[m] != null));
  html += "<h3>B − A per category (points, paired per item; 95 % bootstrap interval over items, as memcore-report)</h3>";
  html += "<table class='md' id='deltas'><tr><th>category</th>" + ms.map((m) => `<th>${m}</th>`).join("") + "</tr>" +
    deltas.map((r) => `<tr><td>${esc(r.group)}</td>` + ms.map((m) => {
      const v = r[m];
      if (!v) return "<td>–</td>";
      const sig = v[1] > 0 ? "good" : v[2] < 0 ? "bad" : "";
      return `<td class="${sig}">${v[0] >= 0 ? "+" : ""}${v[0].toFixed(2)} [${v[1].toFixed(2)}, ${v[2].toFixed(2)}] <span class="n">n=${v[3]}</span></td>`;
    }).join("") + "</tr>").join("") + "</table>";
  html += "<p class='note'>Green: the interval is above 0 (B better); red: below 0. Items, not conversations, are resampled (memcore.eval.bootstrap.paired_delta_ci), so on one or two conversations the interval is narrower than a conversation-level one.</p>";
  html += "<details><summary>The report's detail table, both runs</summary>" + markdown(MV.meta.diff.detail) + "</details>";
  const cats = [["", "all categories"], ...[...new Set(A.rows.map((r) => r.cat))].sort().map((c) => [String(c), c + " " + (CATS[c] || "")])];
  html += "<h3>Items where the runs disagree</h3><div class='filters'>" +
    select("d-metric", [["f1", "F1"], ["judge", "judge"], ["recall", "recall"], ["bleu1", "BLEU-1"]], metric) +
    select("d-cat", cats, p.get("cat") || "") +
    `<input id="d-q" type="search" placeholder="text" value="${esc(p.get("q") || "")}"><span id="d-count"></span></div><div id="diff-table"></div>`;
  el("main").innerHTML = html;
  const update = () => {
    const q = {metric: el("d-metric").value, cat: el("d-cat").value, q: el("d-q").value};
    history.replaceState(null, "", "#diff?" + new URLSearchParams(Object.entries(q).filter(([, v]) => v)).toString());
    drawDiffTable(q);
  };
  for (const id of ["d-metric", "d-cat"]) el(id).addEventListener("change", update);
  el("d-q").addEventListener("input", update);
  drawDiffTable({metric: metric, cat: p.get("cat") || "", q: p.get("q") || ""});
}

function drawDiffTable(q) {
  const [A, B] = MV.runs;
  const text = (q.q || "").toLowerCase();
  const rows = [];
  for (const a of A.rows) {
    const b = MV.byId[1].get(a.id);
    if (!b || a[q.metric] == null || b[q.metric] == null || a[q.metric] === b[q.metric]) continue;
    if (q.cat && String(a.cat) !== q.cat) continue;
    if (text && ![a.id, a.q, a.gold, a.ans, b.ans].some((s) => s != null && String(s).toLowerCase().includes(text))) continue;
    rows.push([a, b, b[q.metric] - a[q.metric]]);
  }
  rows.sort((x, y) => Math.abs(y[2]) - Math.abs(x[2]) || (x[0].id < y[0].id ? -1 : 1));
  MV.lastList = {ids: rows.map((r) => r[0].id), back: location.hash};
  el("d-count").textContent = `${rows.length} items differ in ${q.metric}`;
  el("diff-table").innerHTML = "<table class='items diff'><thead><tr><th>item</th><th>cat</th><th>question</th><th>gold</th><th>A answer</th><th>A</th><th>B answer</th><th>B</th><th>B − A</th><th>A / B gold missing</th></tr></thead><tbody>" +
    rows.map(([a, b, dlt]) => `<tr data-id="${esc(a.id)}"><td class="t">${esc(a.id)}</td><td>${a.cat}</td><td class="t">${esc(a.q)}</td><td class="t">${esc(a.gold)}</td>` +
      `<td class="t">${esc(a.ans == null ? "–" : a.ans)}</td><td class="${scoreClass(a[q.metric])}">${a[q.metric].toFixed(2)}</td>` +
      `<td class="t">${esc(b.ans == null ? "–" : b.ans)}</td><td class="${scoreClass(b[q.metric])}">${b[q.metric].toFixed(2)}</td>` +
      `<td class="${dlt > 0 ? "good" : "bad"}">${dlt > 0 ? "+" : ""}${dlt.toFixed(2)}</td><td>${a.gmiss} / ${b.gmiss}</td></tr>`).join("") + "</tbody></table>";
  el("diff-table").querySelector("tbody").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr");
    if (tr) location.hash = "item/" + encodeURIComponent(tr.dataset.id);
  });
}

// ------------------------------------------------------------------------------------------- routing
async function route() {
  const {view, arg, params} = parseHash();
  for (const v of ["overview", "items", "diff"]) el("nav-" + v).classList.toggle("active", v === view);
  window.scrollTo(0, 0);
  document.body.dataset.view = view;
  document.body.dataset.drawn = "no";
  if (view === "items") renderItems(params);
  else if (view === "item") await renderItem(arg);
  else if (view === "diff") renderDiff(params);
  else renderOverview();
  if (parseHash().view === view) document.body.dataset.drawn = "yes";
}

async function start() {
  if (!MV.meta) { el("main").innerHTML = "<p class='bad'>data/site.js is missing: rebuild the site with memcore-view.</p>"; return; }
  try {
    await Promise.all([...Array(MV.meta.n_runs).keys()].map((i) => loadScript(`data/run${i}.js`)));
  } catch (e) {
    el("main").innerHTML = `<p class="bad">${esc(e.message)}: rebuild the site with memcore-view.</p>`;
    return;
  }
  el("title").textContent = "memcore-view · " + MV.runs.map((r) => r.label).join(" vs ");
  el("nav-diff").hidden = MV.runs.length < 2;
  window.addEventListener("hashchange", route);
  route();
  window.__mvReady = performance.now();
}

window.addEventListener("DOMContentLoaded", start);

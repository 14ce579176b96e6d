// The Troupe page (docs/web.md): play a session of a pack on the server,
// branch it, and inspect any message. Everything comes from `/api/v1`
// (api.js); everything from the server is shown as text (dom.js).

import * as api from "./api.js";
import { h, fill, svgElement, download } from "./dom.js";

const $ = (id) => document.getElementById(id);

const S = {
  scenarios: [],
  session: null, // the session document (id, pack, current, ended, outcome, header)
  lines: new Map(), // message ID -> its line of the session file
  order: [], // message IDs in file order
  turns: new Map(), // message ID -> the turn document that wrote it
  rendered: new Map(), // message ID -> {name, author, text} as the transcript rendered it
  names: new Map(), // character ID -> display name
  players: new Set(), // character IDs of the players
  selected: null, // the message inspected
  graph: null, // the graph SVG text of the session
  delta: {}, // the last turn's state changes
  suggested: 0, // how many lines `troupe explore` would try
};

// ------------------------------------------------------------ problems

function showProblem(e) {
  const p = $("problem");
  p.textContent = e instanceof api.Problem ? `Server: ${e.message}` : `Error: ${e && e.message ? e.message : e}`;
  p.hidden = false;
}

function clearProblem() {
  $("problem").hidden = true;
  $("problem").textContent = "";
}

/** Runs `f`, showing any error as a plain line, with the page marked busy. */
async function act(f) {
  document.body.dataset.busy = "1";
  try {
    await f();
    clearProblem();
  } catch (e) {
    showProblem(e);
  } finally {
    document.body.dataset.busy = "0";
  }
}

// --------------------------------------------------------------- login

async function connect(ws, token, pack) {
  api.login(ws, token);
  $("ws").value = ws;
  $("token").value = token;
  const packs = (await api.get("/packs")).packs || [];
  const sel = $("pack");
  fill(sel, packs.map((p) => {
    const first = (p.scenarios && p.scenarios[0]) || {};
    return h("option", { value: p.hash }, `${first.name || first.id || "pack"} · ${p.hash.slice(0, 8)}`);
  }));
  if (!packs.length) fill(sel, h("option", { value: "" }, "no pack: upload one"));
  if (pack && packs.some((p) => p.hash === pack)) sel.value = pack;
  await loadScenarios();
  remember();
}

async function loadScenarios() {
  const hash = $("pack").value;
  S.scenarios = hash ? await api.get(`/packs/${encodeURIComponent(hash)}/scenarios`) : [];
  fill($("scenario"), S.scenarios.map((s) => h("option", { value: s.id }, s.name ? `${s.name} (${s.id})` : s.id)));
  scenarioChosen();
}

function scenarioChosen() {
  const s = S.scenarios.find((x) => x.id === $("scenario").value) || { difficulty: { options: [] }, openings: [] };
  const d = s.difficulty || { options: [] };
  fill($("difficulty"), h("option", { value: "" }, d.default ? `default (${d.default})` : "default"),
    (d.options || []).map((o) => h("option", { value: o }, o)));
  fill($("opening"), h("option", { value: "" }, "default"), (s.openings || []).map((o) => h("option", { value: o }, o)));
}

// ------------------------------------------------------------- actions

async function start() {
  const body = { pack: $("pack").value, seed: Number($("seed").value || 0) };
  for (const k of ["scenario", "difficulty", "opening"]) if ($(k).value) body[k] = $(k).value;
  await adopt(await api.post("/sessions", body));
}

/** Where the page is, kept for a reload: workspace, pack and session in
 * the URL fragment (never the token) and in sessionStorage. */
function remember() {
  const at = { ws: $("ws").value.trim(), pack: $("pack").value, session: S.session ? S.session.id : "" };
  const frag = new URLSearchParams();
  for (const [k, v] of Object.entries(at)) if (v) frag.set(k, v);
  history.replaceState(null, "", `${location.pathname}${location.search}#${frag}`);
  try {
    sessionStorage.setItem("troupe.pack", at.pack);
    sessionStorage.setItem("troupe.session", at.session);
  } catch (_) { /* storage refused: the fragment only */ }
}

/** Shows session `id` of the pack chosen (a reload). */
async function resume(id) {
  const doc = await api.get(`/sessions/${encodeURIComponent(id)}`);
  if (doc.pack && doc.pack !== $("pack").value && [...$("pack").options].some((o) => o.value === doc.pack)) {
    $("pack").value = doc.pack;
    await loadScenarios();
  }
  await adopt(doc);
}

/** Makes `doc` (a session document) the page's session. */
async function adopt(doc) {
  S.session = doc;
  S.lines.clear();
  S.turns.clear();
  S.rendered.clear();
  S.graph = null;
  S.delta = {};
  S.selected = null;
  S.names.clear();
  const scn = S.scenarios.find((x) => x.id === doc.header.scenario);
  for (const c of (scn && scn.cast) || []) S.names.set(c.id, c.name);
  for (const c of doc.header.characters || []) S.names.set(c.id, c.name || c.id);
  S.players = new Set((doc.header.players || []).map((p) => p.character));
  // Who the prompt is for: the turn order's choice, a cast member who is
  // not a player, or the narrator (Format 24.3).
  fill($("prompt-char"), h("option", { value: "" }, "whoever the turn order chooses"),
    ((scn && scn.cast) || []).filter((c) => !S.players.has(c.id)).map((c) => h("option", { value: c.id }, c.name)),
    h("option", { value: "narrator" }, "the narrator"));
  if (doc.opening && doc.opening.message) S.turns.set(doc.opening.message, { opening: doc.opening });
  await refresh();
  // The lines `troupe explore` would try: a click puts one in the line field.
  const lines = await api.get(`/packs/${encodeURIComponent(doc.pack)}/lines?scenario=${encodeURIComponent(doc.header.scenario)}`);
  fill($("suggest"), h("span", { class: "muted small" }, "Lines explore would try: "), lines.map((l) =>
    h("button", { type: "button", class: "small line-pick", title: `for ${(l.for || []).join(", ")}`,
      onclick: () => { $("line").value = l.text; $("line").focus(); } }, l.text)));
  S.suggested = lines.length;
  // No turn after an ending (Format 18): no line to try then either.
  $("suggest").hidden = !S.suggested || !!S.session.ended;
  remember();
}

async function say() {
  const text = $("line").value;
  if (!text.trim() || !S.session) return;
  const body = { text, expected: S.session.current };
  if ($("to").value) body.to = $("to").value;
  const doc = await api.post(`/sessions/${S.session.id}/turns`, body);
  for (const m of doc.messages || []) S.turns.set(m, doc);
  S.delta = doc.state_delta || {};
  $("line").value = "";
  S.selected = null;
  await refresh();
  $("line").focus();
}

async function move(kind, body) {
  S.session = await api.post(`/sessions/${S.session.id}/${kind}`, { ...body, expected: S.session.current });
  S.delta = (S.turns.get(S.session.current) || {}).state_delta || {};
  S.selected = null;
  await refresh();
}

async function refresh() {
  const id = S.session.id;
  const [doc, jsonl] = await Promise.all([api.get(`/sessions/${id}`), api.text(`/sessions/${id}.jsonl`)]);
  S.session = doc;
  readLines(jsonl);
  const at = doc.current;
  const [tr, state, score] = await Promise.all([
    api.get(`/sessions/${id}/transcript?at=${encodeURIComponent(at)}`),
    api.get(`/sessions/${id}/state?at=${encodeURIComponent(at)}`),
    api.get(`/sessions/${id}/score`),
  ]);
  for (const m of tr.messages) {
    S.rendered.set(m.id, { name: m.name, author: m.author, text: m.parts.map((p) => p.text).join("\n"), parts: m.parts, hidden: m.hidden });
    S.names.set(m.author, m.name);
  }
  if (!S.selected || !S.lines.has(S.selected)) S.selected = at;
  renderPlay(tr, state, score);
  renderTree();
  await showNext();
  await showSelected();
}

function readLines(jsonl) {
  S.lines.clear();
  S.order = [];
  for (const raw of jsonl.split("\n")) {
    if (!raw.trim()) continue;
    let line;
    try { line = JSON.parse(raw); } catch (_) { continue; }
    if (line && typeof line.id === "string") {
      S.lines.set(line.id, line);
      S.order.push(line.id);
    }
  }
}

/** The message IDs from the root to `id`. */
function pathOf(id) {
  const path = [];
  const seen = new Set();
  for (let m = id; m && S.lines.has(m) && !seen.has(m); m = S.lines.get(m).parent) {
    seen.add(m);
    path.push(m);
  }
  return path.reverse();
}

const nameOf = (id) => S.names.get(id) || id;

// ---------------------------------------------------------------- play

function valueText(v) {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function turnDetails(doc, messageId) {
  if (doc.opening) {
    const f = doc.opening.firings || [];
    return f.length ? h("div", { class: "details" }, h("span", { class: "chip fired" }, "fired: ", f.map(firingText).join(", "))) : null;
  }
  const replies = doc.replies || [];
  const last = replies.length ? replies[replies.length - 1].message : (doc.messages || [])[1];
  if (messageId !== last) return null;
  const chips = [];
  if (doc.rule) chips.push(h("span", { class: "chip" }, `rule ${doc.rule}`));
  for (const r of replies) {
    if (r.chosen && r.chosen.why) chips.push(h("span", { class: "chip" }, `${nameOf(r.author)} spoke (${r.chosen.why})`));
  }
  for (const [k, v] of Object.entries(doc.state_delta || {})) chips.push(h("span", { class: "chip changed" }, `${k} = ${valueText(v)}`));
  for (const f of doc.firings || []) chips.push(h("span", { class: "chip fired" }, `fired ${firingText(f)}`));
  chips.push(h("span", { class: `chip safety-${doc.safety_status}` }, `safety ${doc.safety_status}`));
  if (doc.npc_emotion) chips.push(h("span", { class: "chip" }, `emotion ${doc.npc_emotion}`));
  if (doc.session_control && doc.session_control !== "continue_session") chips.push(h("span", { class: "chip" }, doc.session_control));
  return h("div", { class: "details", "aria-label": "What this turn did" }, chips);
}

function firingText(f) {
  if (typeof f === "string") return f;
  if (f && typeof f === "object") return Object.entries(f).filter(([k]) => k !== "message").map(([k, v]) => `${k} ${valueText(v)}`).join(", ");
  return String(f);
}

function authorClass(author) {
  if (S.players.has(author)) return "who-player";
  if (author === "narrator") return "who-narrator";
  const cast = [...S.names.keys()].filter((k) => !S.players.has(k) && k !== "narrator").sort();
  return `who-${cast.indexOf(author) % 6}`;
}

function renderPlay(tr, state, score) {
  const s = S.session;
  $("session-line").textContent = `Session ${s.id} · ${s.header.scenario} · seed ${s.header.seed}` +
    (s.header.difficulty ? ` · ${s.header.difficulty}` : "") + ` · at ${s.current}`;
  document.body.dataset.current = s.current || "";
  const items = tr.messages.map((m) => {
    const doc = S.turns.get(m.id);
    return h("li", { class: `msg ${authorClass(m.author)}`, "data-id": m.id, "data-author": m.author },
      h("div", { class: "msg-head" },
        h("span", { class: "author" }, m.name || m.author, m.hidden ? " (hidden)" : ""),
        h("span", { class: "mid" }, m.id),
        h("button", { type: "button", class: "small", "aria-label": `Inspect message ${m.id}`, onclick: () => act(() => select(m.id, true)) }, "Inspect")),
      m.parts.map((p) => h("p", { class: "part" }, p.audience ? h("span", { class: "audience" }, `(to ${p.audience.map(nameOf).join(", ")}) `) : null, p.text)),
      doc ? turnDetails(doc, m.id) : null);
  });
  fill($("transcript"), items);
  // Who is present, and who can be addressed.
  const present = Array.isArray(state.state["scene.present"]) ? state.state["scene.present"] : [];
  const others = present.filter((c) => !S.players.has(c));
  fill($("present"), present.length ? "Present: " : "", others.map((c) =>
    h("button", { type: "button", class: "name", "aria-label": `Address ${nameOf(c)}`, onclick: () => { $("to").value = c; $("line").focus(); nextSoon(); } }, nameOf(c))),
  present.filter((c) => S.players.has(c)).map((c) => h("span", { class: "name-player" }, ` ${nameOf(c)} (you)`)));
  const to = $("to").value;
  fill($("to"), h("option", { value: "" }, "whoever answers"), others.map((c) => h("option", { value: c }, nameOf(c))));
  if (others.includes(to)) $("to").value = to;
  // The state now, the last turn's changes highlighted.
  fill($("state-now").tBodies[0], Object.entries(state.state).map(([k, v]) =>
    h("tr", { class: k in S.delta ? "changed" : null }, h("th", { scope: "row" }, k), h("td", {}, valueText(v)))));
  // The ending.
  const end = $("ending");
  if (s.ended) {
    fill(end, h("strong", {}, `The story ended: ${s.outcome || "no outcome"}.`), " ", score ? scoreText(score) : "");
    end.hidden = false;
  } else {
    end.hidden = true;
    fill(end);
  }
  for (const id of ["line", "send", "to"]) $(id).disabled = !!s.ended;
  $("suggest").hidden = !S.suggested || !!s.ended;
  $("undo").disabled = false;
  $("download").disabled = false;
  $("dl-graph").disabled = false;
  $("dl-plot").disabled = false;
}

// Who speaks next under the scene's turn order (Format 18.9) if the line
// in the field were said now, to the one chosen in "To" if any: asked of
// `GET /sessions/{id}/next` (no turn taken) when the line or "To" changes.
let nextAsked = 0;
let nextTimer = null;

function nextSoon() {
  clearTimeout(nextTimer);
  nextTimer = setTimeout(() => act(showNext), 200);
}

async function showNext() {
  const el = $("next");
  if (!S.session || S.session.ended) {
    el.hidden = true;
    return;
  }
  const text = $("line").value;
  const to = $("to").value;
  const ask = ++nextAsked;
  el.dataset.loaded = "";
  const q = `text=${encodeURIComponent(text)}${to ? `&to=${encodeURIComponent(to)}` : ""}`;
  const next = await api.get(`/sessions/${S.session.id}/next?${q}`);
  if (ask !== nextAsked) return; // the line changed meanwhile
  const c = next.chosen || {};
  const why = [c.why, c.name ? `by “${c.name}”` : null, c.draw !== undefined ? `draw ${c.draw}` : null].filter(Boolean).join(", ");
  fill(el, text.trim() ? "Your line would be answered by " : "Next to speak: ",
    h("strong", { "data-speaker": next.speaker }, next.speaker === "narrator" ? "the narrator" : nameOf(next.speaker)),
    ` (${why})`);
  el.hidden = false;
  el.dataset.speaker = next.speaker;
  el.dataset.loaded = `${to}|${text}`;
}

function scoreText(score) {
  if (!score || typeof score !== "object") return `Score: ${valueText(score)}`;
  const criteria = Object.entries(score.criteria || {}).map(([k, v]) => `${k} ${valueText(v)}`);
  return `Score: total ${valueText(score.total)}` + (criteria.length ? ` (${criteria.join(", ")})` : "") + ".";
}

// ---------------------------------------------------------------- tree

function renderTree() {
  const children = new Map();
  const roots = [];
  for (const id of S.order) {
    const p = S.lines.get(id).parent;
    if (p && S.lines.has(p)) {
      if (!children.has(p)) children.set(p, []);
      children.get(p).push(id);
    } else roots.push(id);
  }
  const onPath = new Set(pathOf(S.session.current));
  const node = (id) => {
    const r = S.rendered.get(id);
    const line = S.lines.get(id);
    const who = r ? r.name : nameOf(line.author || "");
    let text = r ? r.text : ((line.parts || []).map((p) => p.text || "").join(" ") || (line.opening ? `opening ${line.opening}` : ""));
    if (text.length > 60) text = text.slice(0, 57) + "…";
    const current = id === S.session.current;
    return h("div", { class: `node${onPath.has(id) ? " on-path" : ""}${id === S.selected ? " selected" : ""}`, "data-id": id },
      h("button", { type: "button", class: "pick", "aria-current": current ? "step" : null, "aria-pressed": id === S.selected ? "true" : "false",
        onclick: () => act(() => select(id, false)) }, h("span", { class: "mid" }, id), ` ${who}: `, text),
      current ? h("span", { class: "badge" }, "current") :
        h("button", { type: "button", class: "small goto", "aria-label": `Go to message ${id}`, onclick: () => act(() => move("goto", { message: id })) }, "Go here"));
  };
  // A chain goes on in one list; a message with several answers opens a
  // nested list per branch.
  const chain = (id) => {
    const items = [];
    for (let m = id; m;) {
      items.push(h("li", {}, node(m)));
      const kids = children.get(m) || [];
      if (kids.length === 1) m = kids[0];
      else {
        if (kids.length > 1) items.push(h("li", { class: "branches" }, kids.map((k) => h("ul", { class: "branch", "aria-label": `Branch from ${m}` }, chain(k)))));
        m = null;
      }
    }
    return items;
  };
  fill($("tree"), h("ul", { class: "branch root" }, roots.flatMap(chain)));
}

// ------------------------------------------------------------- inspect

async function select(id, show) {
  S.selected = id;
  renderTree();
  await showSelected();
  if (show) view("inspect");
}

async function showSelected() {
  const id = S.selected;
  const sid = S.session.id;
  const q = `at=${encodeURIComponent(id)}`;
  $("inspect").dataset.loaded = "";
  $("graph").dataset.loaded = "";
  const r = S.rendered.get(id);
  $("sel-id").textContent = id;
  $("sel-text").textContent = r ? `${r.name}: ${r.text}` : "";
  const line = S.lines.get(id) || {};
  const parts = (line.parts || []).length;
  const who = $("prompt-char").value;
  const [state, explain, knows, plot, prompt] = await Promise.all([
    api.get(`/sessions/${sid}/state?${q}`),
    api.get(`/sessions/${sid}/explain?${q}`),
    Promise.all([...Array(parts).keys()].map((i) => api.get(`/sessions/${sid}/knows?message=${encodeURIComponent(id)}&part=${i}`))),
    api.text(`/sessions/${sid}/plot.svg?${q}`),
    api.get(`/sessions/${sid}/prompt?${q}${who ? `&char=${encodeURIComponent(who)}` : ""}`),
  ]);
  if (S.graph === null) S.graph = await api.text(`/sessions/${sid}/graph.svg`);
  if (S.selected !== id) return; // another message was chosen meanwhile
  $("state-json").textContent = JSON.stringify(state, null, 2);
  $("explain-json").textContent = JSON.stringify(explain, null, 2);
  $("prompt-json").textContent = JSON.stringify(prompt, null, 2);
  $("prompt-json").dataset.char = who;
  fill($("knows"), parts ? knows.map((who, i) => h("li", {}, `part ${i}: `, who.map(nameOf).join(", ") || "no one")) : h("li", {}, "this message has no parts"));
  $("inspect").dataset.loaded = id;
  showGraph(id, plot);
  $("graph").dataset.loaded = id;
}

function showGraph(id, plot) {
  const svg = svgElement(S.graph);
  const fired = new Set();
  const ran = new Set();
  for (const m of pathOf(id)) {
    for (const f of S.lines.get(m).firings || []) {
      for (const [k, v] of Object.entries(f)) fired.add(`${k} ${v}`);
    }
    const doc = S.turns.get(m);
    if (doc && !doc.opening) for (const r of doc.replies || [{ rule: doc.rule }]) if (r.rule) ran.add(`rule ${r.rule}`);
  }
  const own = S.turns.get(id);
  const current = own && !own.opening ? `rule ${((own.replies || []).find((r) => r.message === id) || own).rule}` : null;
  if (svg) {
    for (const g of svg.querySelectorAll("g.node")) {
      const t = g.querySelector("title");
      const name = t ? t.textContent : "";
      if (fired.has(name)) g.classList.add("fired");
      if (ran.has(name)) g.classList.add("ran");
      if (name === current) g.classList.add("current");
    }
  }
  fill($("graph-box"), svg || h("p", { class: "problem" }, "The graph could not be read."));
  fill($("plot-box"), svgElement(plot) || h("p", { class: "problem" }, "The plot could not be read."));
}

// --------------------------------------------------------------- tests

function failureText(x) {
  if (!x || typeof x !== "object" || !x.message) return valueText(x);
  const at = x.file ? ` (${x.file}${x.line ? `:${x.line}` : ""})` : "";
  return `${x.message}${at}`;
}

/** `POST /packs:test?format=all` with the chosen zip; the report shown. */
async function runTests() {
  const f = $("test-zip").files[0];
  if (!f) return;
  $("tests").dataset.loaded = "";
  const name = f.name.replace(/\.zip$/i, "") || "pack";
  const all = await api.postBytes(`/packs:test?format=all&name=${encodeURIComponent(name)}`, new Uint8Array(await f.arrayBuffer()), "application/zip");
  let report = {};
  try { report = JSON.parse(all.json); } catch (_) { /* shown as text below */ }
  $("test-summary").textContent = `${name}: ${report.status || "?"} (exit code ${all.exit_code})`;
  $("test-summary").className = report.status === "PASS" ? "pass" : "fail";
  // Each run (a fixture's as `troupe run` prints it; a recorded session's
  // or a playtest's as `troupe transcript` does), by stage and test name,
  // shown under its test; each failure of a test from a fixture's file
  // (the fixture's own, or a static assertion written in it) links to the
  // fixture's run, a recorded session's or playtest's failure to its own.
  const key = (stage, name) => `${stage}\u0000${name}`;
  const transcripts = new Map((all.transcripts || []).map((x) => [key(x.stage, x.test), x.transcript]));
  const byFile = new Map();
  for (const st of report.stages || []) {
    for (const t of st.tests || []) {
      if (st.stage === "fixtures" && t.file && transcripts.has(key(st.stage, t.name)) && !byFile.has(t.file)) byFile.set(t.file, [st.stage, t.name]);
    }
  }
  const owner = (st, t) => transcripts.has(key(st.stage, t.name)) ? [st.stage, t.name] : byFile.get(t.file);
  const runOf = (st, t) => st.stage === "fixtures" ? "as troupe run prints it" : "as troupe transcript prints it";
  const test = (st) => (t) => {
    const failed = t.status !== "PASS" && t.status !== "SKIP";
    const of = failed ? owner(st, t) : undefined;
    const link = () => of === undefined ? null :
      [" ", h("button", { type: "button", class: "small to-transcript", "data-stage": of[0], "data-fixture": of[1], "aria-label": `Show the transcript of ${of[1]}` }, "transcript")];
    const text = transcripts.get(key(st.stage, t.name));
    return h("li", { class: `test ${t.status === "PASS" ? "pass" : "fail"}`, "data-name": t.name },
      h("span", { class: "chip" }, t.status), " ", h("strong", {}, t.name), t.file ? h("span", { class: "mid" }, ` ${t.file}`) : null,
      t.reason ? h("div", { class: "muted" }, t.reason) : null,
      (t.failures || []).length ? h("ul", { class: "failures" }, t.failures.map((x) => h("li", {}, failureText(x), link()))) : null,
      text !== undefined ? h("details", { class: "transcript-of", "data-stage": st.stage, "data-fixture": t.name }, h("summary", {}, `Transcript of ${t.name} (${runOf(st, t)})`), h("pre", { class: "json", tabindex: "0" }, text)) : null);
  };
  fill($("test-stages"), (report.stages || []).map((st) => h("section", { class: "stage" },
    h("h3", {}, `${st.stage}: ${st.status}`, st.reason ? ` — ${st.reason}` : ""),
    h("ul", {}, (st.tests || []).map(test(st))))));
  const details = [...document.querySelectorAll("#test-stages details.transcript-of")];
  for (const b of document.querySelectorAll("#test-stages button.to-transcript")) {
    const d = details.find((x) => x.dataset.stage === b.dataset.stage && x.dataset.fixture === b.dataset.fixture);
    b.addEventListener("click", () => {
      d.open = true;
      d.scrollIntoView({ block: "nearest" });
      d.querySelector("summary").focus();
    });
  }
  $("test-text").textContent = all.text || "";
  $("tests").dataset.loaded = report.status || "done";
}

// --------------------------------------------------------------- views

function view(name) {
  for (const v of ["play", "inspect", "graph", "tests"]) {
    $(v).hidden = v !== name;
    $(`tab-${v}`).setAttribute("aria-selected", v === name ? "true" : "false");
  }
  document.body.dataset.view = name;
}

// ------------------------------------------------------------- wiring

function wire() {
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    act(() => connect($("ws").value.trim(), $("token").value.trim()));
  });
  $("pack").addEventListener("change", () => act(loadScenarios));
  $("scenario").addEventListener("change", scenarioChosen);
  $("prompt-char").addEventListener("change", () => act(async () => { if (S.session && S.selected) await showSelected(); }));
  $("setup").addEventListener("submit", (e) => {
    e.preventDefault();
    act(start);
  });
  $("upload").addEventListener("change", () => act(async () => {
    const f = $("upload").files[0];
    if (!f) return;
    const doc = await api.put("/packs", new Uint8Array(await f.arrayBuffer()));
    await connect($("ws").value.trim(), $("token").value.trim(), doc.hash);
  }));
  $("say").addEventListener("submit", (e) => {
    e.preventDefault();
    act(say);
  });
  $("undo").addEventListener("click", () => act(() => move("undo", {})));
  $("line").addEventListener("input", nextSoon);
  $("to").addEventListener("change", nextSoon);
  $("download").addEventListener("click", () => act(async () => {
    download(`${S.session.id}.jsonl`, await api.text(`/sessions/${S.session.id}.jsonl`), "application/jsonl");
  }));
  $("dl-graph").addEventListener("click", () => act(async () => {
    download(`${S.session.header.scenario}-graph.svg`, S.graph || await api.text(`/sessions/${S.session.id}/graph.svg`), "image/svg+xml");
  }));
  $("dl-plot").addEventListener("click", () => act(async () => {
    download(`${S.session.id}-plot.svg`, await api.text(`/sessions/${S.session.id}/plot.svg?at=${encodeURIComponent(S.selected)}`), "image/svg+xml");
  }));
  for (const v of ["play", "inspect", "graph", "tests"]) $(`tab-${v}`).addEventListener("click", () => view(v));
  $("test-form").addEventListener("submit", (e) => {
    e.preventDefault();
    act(runTests);
  });
}

function boot() {
  wire();
  view("play");
  document.body.dataset.busy = "0";
  // `#ws=…&token=…` (what `troupe play --web` prints) logs in and is
  // taken off the address bar at once.
  // A reload keeps the place: `#ws=…&pack=…&session=…` (what remember()
  // writes), else what sessionStorage kept.
  const frag = new URLSearchParams(location.hash.slice(1));
  let { ws, token } = api.saved();
  let kept = { pack: "", session: "" };
  try {
    kept = { pack: sessionStorage.getItem("troupe.pack") || "", session: sessionStorage.getItem("troupe.session") || "" };
  } catch (_) { /* no storage */ }
  const fromFrag = frag.get("ws") && frag.get("ws") !== ws;
  const pack = frag.get("pack") || (fromFrag ? "" : kept.pack);
  const session = frag.get("session") || (fromFrag || frag.get("pack") ? "" : kept.session);
  ws = frag.get("ws") || ws;
  if (frag.get("token")) {
    token = frag.get("token");
    history.replaceState(null, "", location.pathname + location.search);
  }
  if (ws && token) {
    act(async () => {
      await connect(ws, token, pack);
      if (session) {
        try {
          await resume(session);
        } catch (e) {
          // A session that is gone is forgotten, so the next reload is clean.
          if (e instanceof api.Problem && e.status === 404) remember();
          throw e;
        }
      }
    });
  }
}

boot();

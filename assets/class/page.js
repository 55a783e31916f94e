// nexttoken · class: the student's page.
// It speaks only the HTTP API of docs/CLASS.md. Every text from the server
// goes into the page as text (textContent / text nodes), never as markup.
"use strict";

const KEY = "nexttoken-student";      // {student, name, code}
const GUESS_KEY = "nexttoken-guess";  // {position, token: {id, text}}
const $ = (id) => document.getElementById(id);

const PHASES = {
  waiting: "Wait for the teacher…",
  aloud: "Answer this one aloud: the teacher takes the class's answer",
  guessing: "Guess the next token",
  scoring: "The model is scoring the class…",
  revealed: "Revealed",
};

let me = load(KEY);       // who we are, once joined
let myGuess = null;       // our guess for the open position
let state = null;         // the newest /api/state
let prevPhase = null;     // the phase and position before `state`
let prevPosition = null;
let prevRound = null;
let live = false;         // the live stream (or polling) has started

// ---------- small helpers ----------

function load(key) {
  try { return JSON.parse(sessionStorage.getItem(key)); } catch (_) { return null; }
}
function save(key, value) {
  try {
    if (value == null) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, JSON.stringify(value));
  } catch (_) { /* storage off: we just forget on reload */ }
}

// One call to the API: {status, data}; status 0 when the server cannot be reached.
async function api(method, path, body) {
  const opts = { method, headers: {}, cache: "no-store" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  try {
    const res = await fetch(path, opts);
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    return { status: res.status, data: data || {} };
  } catch (_) {
    return { status: 0, data: { error: "Cannot reach the class server: check the Wi-Fi and try again." } };
  }
}

function errorText(r) {
  return (r.data && typeof r.data.error === "string" && r.data.error) || "Something went wrong (HTTP " + r.status + ").";
}

// Make a DOM element with a class and optional text.
function make(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// A token as <span class="tok">, its edge spaces shown as ␣, newlines as ↵, tabs as ⇥.
function tok(text) {
  const span = make("span", "tok");
  text = String(text == null ? "" : text);
  if (text === "") { span.append(make("span", "ws", "∅")); return span; }
  const lead = text.length - text.replace(/^ +/, "").length;
  const trail = lead === text.length ? 0 : text.length - text.replace(/ +$/, "").length;
  const mid = text.slice(lead, text.length - trail);
  if (lead) span.append(make("span", "ws", "␣".repeat(lead)));
  for (const part of mid.split(/([\n\t\r])/)) {
    if (part === "\n") span.append(make("span", "ws", "↵"));
    else if (part === "\t") span.append(make("span", "ws", "⇥"));
    else if (part === "\r") span.append(make("span", "ws", "␍"));
    else if (part) span.append(document.createTextNode(part));
  }
  if (trail) span.append(make("span", "ws", "␣".repeat(trail)));
  return span;
}

// A token in words, for screen readers: " Paris" → "space Paris".
function spoken(text) {
  return String(text).replace(/^ /, "space ").replace(/\n/g, " newline ").trim() || "empty";
}

// 0.78 → "78%", 0.034 → "3.4%", 0.0002 → "<0.1%".
function pct(p) {
  if (typeof p !== "number" || !isFinite(p)) return "–";
  const x = p * 100;
  if (x === 0) return "0%";
  if (x < 0.1) return "<0.1%";
  if (x < 9.95) return x.toFixed(1) + "%";
  return Math.round(x) + "%";
}

function width(p) {
  return Math.max(0, Math.min(100, (Number(p) || 0) * 100)) + "%";
}

// ---------- join ----------

const joinForm = $("join-form");
const codeInput = $("code");
const nameInput = $("name");
const joinButton = $("join");
const joinError = $("join-error");

codeInput.addEventListener("input", () => {
  const digits = codeInput.value.replace(/\D/g, "").slice(0, 6);
  if (digits !== codeInput.value) codeInput.value = digits;
});

joinForm.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const code = codeInput.value.replace(/\D/g, "");
  const name = nameInput.value.trim();
  if (code.length !== 6) { joinError.textContent = "The join code has 6 digits."; codeInput.focus(); return; }
  if (!name) { joinError.textContent = "Choose a nickname."; nameInput.focus(); return; }
  joinError.textContent = "";
  joinButton.disabled = true;
  joinButton.textContent = "Joining…";
  const r = await api("POST", "/api/join", { code, name });
  joinButton.disabled = false;
  joinButton.textContent = "Join";
  if (r.status === 200 && r.data.student) {
    me = { student: r.data.student, name: r.data.name || name, code };
    save(KEY, me);
    enterClass();
  } else {
    joinError.textContent = errorText(r);
  }
});

function showJoin() {
  $("main-screen").hidden = true;
  $("join-screen").hidden = false;
  delete document.body.dataset.joined;
  $("who").textContent = "";
  const url = new URLSearchParams(location.search).get("code");
  if (url && /^\d{6}$/.test(url) && !codeInput.value) codeInput.value = url;
  if (codeInput.value.length === 6) nameInput.focus(); else codeInput.focus();
}

function enterClass() {
  $("join-screen").hidden = true;
  $("main-screen").hidden = false;
  document.body.dataset.joined = "yes";
  $("who").textContent = "· " + me.name;
  startLive();
  if (state) render(state);
}

// The server no longer knows us (a 403): forget the id and join again.
function forget(r) {
  if (me && !nameInput.value) nameInput.value = me.name || "";
  me = null;
  myGuess = null;
  save(KEY, null);
  save(GUESS_KEY, null);
  $("result").hidden = true;
  $("result").textContent = "";
  $("score").textContent = "";
  prevPhase = prevPosition = null; // so a rejoin during a reveal fetches its result
  joinError.textContent = "Please join again (" + errorText(r).replace(/[.\s]+$/, "") + ").";
  showJoin();
}

// ---------- live state ----------

function startLive() {
  if (live) return;
  live = true;
  if (!("EventSource" in window)) { poll(); return; }
  let errors = 0;
  const es = new EventSource("/api/events");
  es.addEventListener("state", (e) => {
    errors = 0;
    try { render(JSON.parse(e.data)); } catch (_) { /* a bad frame: wait for the next */ }
  });
  es.addEventListener("error", () => {
    // EventSource reconnects by itself; after a few failures (or a refusal) poll instead.
    errors += 1;
    if (errors >= 3 || es.readyState === EventSource.CLOSED) { es.close(); poll(); }
  });
}

async function poll() {
  const r = await api("GET", "/api/state");
  if (r.status === 200) render(r.data);
  setTimeout(poll, 2000);
}

// A phone that slept may have missed updates: ask once when the page shows again.
document.addEventListener("visibilitychange", async () => {
  if (document.visibilityState !== "visible" || !me) return;
  const r = await api("GET", "/api/state");
  if (r.status === 200) render(r.data);
});

function render(s) {
  state = s;
  const phase = s.phase in PHASES ? s.phase : "waiting";
  document.body.dataset.phase = phase;
  $("model").textContent = s.model || "";
  $("phase").textContent = PHASES[phase];

  // The text so far, as plain text (pre-wrap), kept scrolled to its end.
  const text = $("text");
  const newText = s.text || "";
  if (text.textContent !== newText) {
    text.textContent = newText;
    text.scrollTop = text.scrollHeight;
  }

  // The question and which token it is about.
  const q = $("question");
  q.textContent = "";
  if (s.question) q.append(make("span", "q", s.question));
  if (typeof s.step === "number") q.append(make("span", "step", "token " + (s.step + 1)));

  $("count").textContent = (phase === "waiting" || phase === "aloud")
    ? (s.students || 0) + " in the class"
    : (s.guesses || 0) + " of " + (s.students || 0) + " have guessed";

  // A new question (another round: another position, or the same one asked again after a rewind;
  // or guessing opened again) forgets the old guess.
  const reopened = prevPhase !== null && prevPhase !== "guessing" && phase === "guessing";
  const newRound = myGuess && myGuess.round != null && s.round != null && myGuess.round !== s.round;
  if (myGuess && (myGuess.position !== s.position || newRound || reopened)) {
    myGuess = null;
    save(GUESS_KEY, null);
  }

  // The guess form only while guesses are taken; it starts empty for each question.
  const guessing = phase === "guessing";
  if (guessForm.hidden === guessing) {
    guessForm.hidden = !guessing;
    guessError.textContent = "";
    if (guessing) { guessInput.value = ""; items = []; }
    seq += 1;
    closeList();
  }
  renderMyGuess();

  // After the reveal, fetch the result once per position.
  if (phase === "revealed" && (prevPhase !== "revealed" || prevPosition !== s.position || prevRound !== s.round)) {
    wantResult(s.position);
  }
  prevPhase = phase;
  prevPosition = s.position;
  prevRound = s.round;
}

function renderMyGuess() {
  const p = $("my-guess");
  const show = state && (state.phase === "guessing" || state.phase === "scoring");
  p.hidden = !show;
  p.textContent = "";
  if (!show) return;
  if (myGuess && myGuess.position === state.position) {
    p.append("Your guess: ", tok(myGuess.token.text));
    if (state.phase === "guessing") p.append(make("span", "muted", " (you can change it until the reveal)"));
  } else if (state.phase === "guessing") {
    p.append(make("span", "muted", "No guess yet."));
  } else {
    p.append(make("span", "muted", "You did not guess this one."));
  }
}

// ---------- guessing ----------

const guessForm = $("guess-form");
const guessInput = $("guess");
const list = $("suggestions");
const guessError = $("guess-error");
let items = [];      // the suggestions shown
let active = -1;     // the highlighted one, -1 for none
let timer = 0;       // the suggestion debounce
let seq = 0;         // answers to older suggestion requests are dropped

guessInput.addEventListener("input", () => {
  clearTimeout(timer);
  seq += 1;
  if (!guessInput.value) { closeList(); return; }
  timer = setTimeout(suggest, 150);
});

async function suggest() {
  const q = guessInput.value;
  const mine = ++seq;
  if (!me || !q || new TextEncoder().encode(q).length > 32) { closeList(); return; }
  const r = await api("GET", "/api/suggest?student=" + encodeURIComponent(me.student) + "&q=" + encodeURIComponent(q));
  if (mine !== seq) return;
  if (r.status === 403) { forget(r); return; }
  if (r.status === 200 && Array.isArray(r.data.tokens)) showList(r.data.tokens.slice(0, 8));
  else closeList();
}

function showList(tokens) {
  items = tokens;
  active = -1;
  list.textContent = "";
  tokens.forEach((t, i) => {
    const li = make("li");
    li.id = "suggestion-" + i;
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", "false");
    li.setAttribute("aria-label", spoken(t.text));
    li.append(tok(t.text));
    li.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus in the input
    li.addEventListener("click", () => submitGuess(t.text));
    list.append(li);
  });
  list.hidden = tokens.length === 0;
  guessInput.setAttribute("aria-expanded", String(!list.hidden));
  guessInput.removeAttribute("aria-activedescendant");
}

function closeList() {
  list.hidden = true;
  active = -1;
  guessInput.setAttribute("aria-expanded", "false");
  guessInput.removeAttribute("aria-activedescendant");
}

function setActive(i) {
  active = i;
  [...list.children].forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
  if (i < 0) { guessInput.removeAttribute("aria-activedescendant"); return; }
  const li = list.children[i];
  guessInput.setAttribute("aria-activedescendant", li.id);
  li.scrollIntoView({ block: "nearest" });
}

guessInput.addEventListener("keydown", (e) => {
  const n = items.length;
  if (e.key === "ArrowDown" && n) {
    e.preventDefault();
    if (list.hidden) { list.hidden = false; guessInput.setAttribute("aria-expanded", "true"); }
    setActive((active + 1) % n);
  } else if (e.key === "ArrowUp" && n && !list.hidden) {
    e.preventDefault();
    setActive(active === 0 ? -1 : active < 0 ? n - 1 : active - 1);
  } else if (e.key === "Escape" && !list.hidden) {
    e.preventDefault();
    closeList();
  }
});

// Enter (or the button): the highlighted suggestion, else the typed text.
guessForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const text = !list.hidden && active >= 0 ? items[active].text : guessInput.value;
  submitGuess(text);
});

async function submitGuess(text) {
  if (!me) return;
  clearTimeout(timer);
  seq += 1; // drop suggestions still on their way
  if (!text) { guessError.textContent = "Type a token first."; guessInput.focus(); return; }
  guessError.textContent = "";
  const r = await api("POST", "/api/guess", { student: me.student, text });
  if (r.status === 200 && r.data.token) {
    myGuess = { position: r.data.position, round: state ? state.round : null, token: r.data.token };
    save(GUESS_KEY, myGuess);
    guessInput.value = "";
    items = [];
    closeList();
    renderMyGuess();
  } else if (r.status === 403) {
    forget(r);
  } else {
    guessError.textContent = errorText(r);
  }
}

// ---------- the result ----------

let resultWanted = null; // the position whose result we still need
let resultBusy = false;
let resultTries = 0;

function wantResult(position) {
  resultWanted = position;
  resultTries = 0;
  fetchResult();
}

async function fetchResult() {
  if (resultBusy || resultWanted === null || !me) return;
  resultBusy = true;
  const r = await api("GET", "/api/result?student=" + encodeURIComponent(me.student));
  resultBusy = false;
  if (r.status === 200) {
    renderResult(r.data);
    if (r.data.position === resultWanted) resultWanted = null;
  } else if (r.status === 403) {
    forget(r);
    return;
  }
  // Not yet (409 in a race with the reveal) or unreachable: try a few more times.
  if (resultWanted !== null && state && state.phase === "revealed" && ++resultTries < 5) {
    setTimeout(fetchResult, 1000);
  }
}

// A row: label, a bar whose width is p, a value; `sub` an optional small line below.
function barRow(text, p, value, sub, mine) {
  const li = make("li", "row" + (mine ? " mine" : ""));
  const label = make("span", "label");
  label.append(tok(text));
  if (mine) label.append(make("span", "you", "you"));
  const track = make("span", "track");
  const bar = make("span", "bar");
  bar.style.width = width(p);
  track.append(bar);
  li.append(label, track, make("span", "val", value));
  if (sub) li.append(make("span", "sub", sub));
  return li;
}

function renderResult(r) {
  const box = $("result");
  box.textContent = "";
  box.dataset.position = String(r.position);
  box.hidden = false;
  const g = r.guess;
  const mineId = g ? g.id : null;

  box.append(make("h2", null, typeof r.step === "number" ? "Token " + (r.step + 1) + " revealed" : "Revealed"));

  // The student's own guess.
  const own = make("div", "own");
  if (g) {
    const line = make("p", "guess-line");
    line.append("Your guess: ", tok(g.text));
    own.append(line);
    own.append(make("p", "stats",
      pct(g.prob) + " · rank " + g.rank + " of the whole vocabulary · " +
      Number(g.surprise_bits).toFixed(1) + " bits of surprise"));
    own.append(make("p", "verdict " + (g.top1 ? "good" : ""),
      g.top1 ? "The model's own top choice!" : g.rank <= 5 ? "In the model's top 5, not its top choice." : "Not the model's top choice."));
  } else {
    own.append(make("p", "guess-line muted", "You did not guess this one."));
  }
  box.append(own);

  // The model's top choices.
  const top = Array.isArray(r.model_top) ? r.model_top.slice(0, 5) : [];
  box.append(make("h3", null, "The model's top choices"));
  const ol = make("ol", "bars model");
  for (const t of top) ol.append(barRow(t.text, t.prob, pct(t.prob), null, t.id === mineId));
  box.append(ol);

  // The class.
  const cls = Array.isArray(r.class) ? r.class : [];
  const size = Number(r.class_size) || 0;
  box.append(make("h3", null, "The class · " + size + (size === 1 ? " guess" : " guesses")));
  if (cls.length) {
    const ul = make("ol", "bars class");
    for (const c of cls) {
      ul.append(barRow(c.text, c.share, c.count + " · " + pct(c.share), "model: " + pct(c.prob), c.id === mineId));
    }
    box.append(ul);
  } else {
    box.append(make("p", "muted", "Nobody guessed this one."));
  }

  renderScore(r.score);
}

function renderScore(s) {
  const el = $("score");
  if (!s) { el.textContent = ""; return; }
  const n = (x) => Number(x) || 0;
  const parts = [
    n(s.guesses) + (n(s.guesses) === 1 ? " guess" : " guesses"),
    n(s.top1) + " model's top-1",
    n(s.top5) + " in its top 5",
  ];
  if (typeof s.mean_rank === "number") parts.push("mean rank " + s.mean_rank.toFixed(1));
  if (s.place != null && s.of != null) parts.push("place " + s.place + " of " + s.of);
  el.textContent = parts.join(" · ");
}

// ---------- start ----------

const url = new URLSearchParams(location.search).get("code");
if (me && me.student && (!url || !me.code || url === me.code)) {
  myGuess = load(GUESS_KEY);
  enterClass();
} else {
  // A new code in the URL is a new class: the old id would not be known there.
  if (me) { save(KEY, null); save(GUESS_KEY, null); nameInput.value = me.name || ""; }
  me = null;
  showJoin();
}

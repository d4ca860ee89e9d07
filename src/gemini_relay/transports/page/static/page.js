// The job page: one event stream on /events; cards are updated in place (players keep playing, open results stay
// open). Job text is untrusted model output: it only ever goes into textContent, never into markup.
// The token arrives in the URL's fragment (#token=…), which the browser never sends: it is kept in this tab's
// sessionStorage (scoped to this origin, port included, unlike a cookie), dropped from the address bar, and sent as
// an Authorization header on every call. EventSource cannot send headers, so the stream is read with fetch; media
// are fetched the same way and shown from blob: URLs.
"use strict";

const TOKEN_KEY = "gemini-relay-token";
let token = takeToken();
let stream = null; // the AbortController of the open event stream
let retry = null;

function takeToken() {
  const match = /^#token=([^&]*)/.exec(location.hash);
  let given = null;
  if (match) {
    try {
      given = decodeURIComponent(match[1]);
    } catch (err) {
      given = match[1];
    }
    history.replaceState(null, "", location.pathname); // out of the address bar and this tab's history
  }
  try {
    if (given) sessionStorage.setItem(TOKEN_KEY, given);
    return given || sessionStorage.getItem(TOKEN_KEY);
  } catch (err) {
    return given; // storage refused (a private mode): this load still works
  }
}

function authorized(init) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return { ...init, headers: { ...headers, ...(init && init.headers) }, cache: "no-store", credentials: "omit" };
}

const cards = new Map();
const STATES = ["running", "starting", "queued", "done", "failed", "cancelled"];

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function duration(seconds, precise) {
  if (precise && seconds < 10) return `${Math.max(0, seconds).toFixed(1)}s`;
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${r}s`;
  return `${r}s`;
}

function clock(epoch) {
  return new Date(epoch * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function makeCard(id) {
  const card = el("article", "card");
  card.id = `job-${id}`;
  const head = el("div", "head");
  const parts = {
    badge: el("span", "badge"),
    tool: el("span", "tool"),
    id: el("code", "jobid", id),
    elapsed: el("span", "elapsed"),
    meta: el("dl", "meta"),
    error: el("p", "error"),
    tail: el("pre", "tail"),
    media: el("div", "media"),
    details: el("details", "result"),
    summary: el("summary"),
    text: el("pre", "text"),
    preview: el("p", "preview"),
  };
  head.append(parts.badge, parts.tool, parts.id, parts.elapsed);
  parts.details.append(parts.summary, parts.text);
  parts.details.addEventListener("toggle", () => {
    if (parts.details.open) loadText(card);
  });
  card.append(head, parts.meta, parts.error, parts.tail, parts.media, parts.details, parts.preview);
  card.parts = parts;
  card.mediaKey = null;
  card.loaded = null;
  return card;
}

function setMeta(dl, pairs) {
  const key = JSON.stringify(pairs);
  if (dl.dataset.key === key) return;
  dl.dataset.key = key;
  dl.replaceChildren();
  for (const [name, value] of pairs) {
    if (!value) continue;
    const row = el("div");
    row.append(el("dt", null, name), el("dd", null, value));
    dl.append(row);
  }
}

// Media elements cannot send a header: each file is fetched with the token when it scrolls into view, then shown
// from a blob: URL (revoked when its card changes or goes).
const blobs = new Map(); // element -> blob: URL
const lazy = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    lazy.unobserve(entry.target);
    loadBlob(entry.target);
  }
}, { rootMargin: "400px" });

async function loadBlob(node) {
  try {
    const response = await fetch(node.dataset.src, authorized());
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    if (!node.isConnected) {
      URL.revokeObjectURL(url);
      return;
    }
    blobs.set(node, url);
    for (const target of [node, ...node.closest("figure").querySelectorAll("a")]) {
      if (target.tagName === "A") target.href = url;
      else target.src = url;
    }
  } catch (err) {
    node.closest("figure").dataset.failed = err.message;
  }
}

function dropBlobs(box) {
  for (const node of box.querySelectorAll("img, video, audio")) {
    lazy.unobserve(node);
    const url = blobs.get(node);
    if (url) URL.revokeObjectURL(url);
    blobs.delete(node);
  }
}

function renderMedia(box, files, card) {
  const key = files.map((f) => f.url).join("\n");
  if (card.mediaKey === key) return;
  card.mediaKey = key;
  dropBlobs(box);
  box.replaceChildren();
  for (const file of files) {
    const figure = el("figure");
    let player;
    if (file.kind === "image") {
      player = el("img");
      player.alt = file.name;
      const link = el("a");
      link.target = "_blank";
      link.rel = "noopener";
      link.append(player);
      figure.append(link);
    } else {
      player = el(file.kind === "video" ? "video" : "audio");
      player.controls = true;
      player.preload = "metadata";
      figure.append(player);
    }
    player.dataset.src = file.url;
    const caption = el("figcaption");
    const open = el("a", null, file.name);
    open.target = "_blank";
    open.rel = "noopener";
    caption.append(open);
    figure.append(caption);
    box.append(figure);
    lazy.observe(player);
  }
}

async function loadText(card) {
  const job = card.job;
  const key = `${job.id}:${job.state}`;
  if (!job.terminal || card.loaded === key) return;
  card.loaded = key;
  try {
    const response = await fetch(`/api/jobs/${encodeURIComponent(job.id)}`, authorized());
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const detail = await response.json();
    card.parts.text.textContent = detail.text || "(no text)";
  } catch (err) {
    card.loaded = null;
    card.parts.text.textContent = `Could not load the result: ${err.message}`;
  }
}

function update(card, job) {
  const p = card.parts;
  card.job = job;
  card.dataset.state = job.state;
  p.badge.textContent = job.state;
  p.badge.dataset.state = job.state;
  p.tool.textContent = job.tool;
  setMeta(p.meta, [
    ["model", job.model],
    ["conversation", job.conversation_id],
    ["backend", job.backend],
    ["started", clock(job.created_at)],
    ["receipt", job.receipt],
  ]);
  const failure = job.error ? `${job.failure_reason ? job.failure_reason + ": " : ""}${job.error}` : "";
  p.error.hidden = !failure;
  p.error.textContent = failure;
  const tail = job.terminal ? "" : job.tail || "";
  p.tail.hidden = !tail;
  if (p.tail.textContent !== tail) {
    const atBottom = p.tail.scrollHeight - p.tail.scrollTop - p.tail.clientHeight < 24;
    p.tail.textContent = tail;
    if (atBottom) p.tail.scrollTop = p.tail.scrollHeight;
  }
  const hasText = job.terminal && job.chars > 0;
  p.details.hidden = !hasText;
  p.preview.hidden = !hasText;
  if (hasText) {
    p.summary.textContent = `Result · ${job.chars.toLocaleString()} characters${job.partial ? " (partial)" : ""}`;
    p.preview.textContent = job.preview + (job.chars > job.preview.length ? "…" : "");
    if (p.details.open) loadText(card);
  }
  renderMedia(p.media, job.files || [], card);
  tick(card);
}

function tick(card) {
  const job = card.job;
  const seconds = job.terminal ? job.elapsed : Date.now() / 1000 - job.since;
  card.parts.elapsed.textContent = duration(seconds, job.terminal);
}

function render(snapshot) {
  const list = document.getElementById("jobs");
  const seen = new Set();
  let previous = null;
  for (const job of snapshot.jobs) {
    seen.add(job.id);
    let card = cards.get(job.id);
    if (!card) {
      card = makeCard(job.id);
      cards.set(job.id, card);
    }
    update(card, job);
    const wanted = previous ? previous.nextSibling : list.firstChild;
    if (wanted !== card) list.insertBefore(card, wanted);
    previous = card;
  }
  for (const [id, card] of cards) {
    if (!seen.has(id)) {
      dropBlobs(card);
      card.remove();
      cards.delete(id);
    }
  }
  document.getElementById("empty").hidden = snapshot.jobs.length > 0;
  const counts = new Map();
  for (const job of snapshot.jobs) counts.set(job.state, (counts.get(job.state) || 0) + 1);
  const box = document.getElementById("counts");
  box.replaceChildren(...STATES.filter((s) => counts.has(s)).map((s) => el("span", "count", `${counts.get(s)} ${s}`)));
  const active = (counts.get("running") || 0) + (counts.get("starting") || 0) + (counts.get("queued") || 0);
  document.title = active ? `(${active}) gemini-relay · jobs` : "gemini-relay · jobs";
}

function setConnection(state, text) {
  const conn = document.getElementById("conn");
  conn.dataset.state = state;
  conn.textContent = text;
}

// One server-sent event block: `event:` and `data:` lines (a `:` line is a keepalive comment).
function dispatch(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (name === "jobs") render(JSON.parse(data.join("\n")));
  return name;
}

async function listen(signal) {
  const response = await fetch("/events", authorized({ signal }));
  if (response.status === 401) return "unauthorized";
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  setConnection("live", "live");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return "ended";
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (dispatch(block) === "bye") return "bye";
    }
  }
}

function connect() {
  clearTimeout(retry);
  if (stream) stream.abort();
  const controller = new AbortController();
  stream = controller;
  setConnection("connecting", "connecting…");
  listen(controller.signal).then(
    (outcome) => {
      if (controller.signal.aborted) return;
      if (outcome === "unauthorized") {
        setConnection("denied", "no token: open the page at the URL the relay printed at startup (…/#token=…)");
        return; // nothing to retry with until a new #token= arrives
      }
      setConnection("down", outcome === "bye" ? "relay stopped; retrying…" : "disconnected; retrying…");
      retry = setTimeout(connect, 3000);
    },
    (err) => {
      if (controller.signal.aborted) return;
      setConnection("down", "disconnected; retrying…");
      retry = setTimeout(connect, 5000);
    },
  );
}

window.addEventListener("hashchange", () => {
  const given = takeToken();
  if (given && given !== token) {
    token = given;
    connect();
  }
});

setInterval(() => {
  for (const card of cards.values()) if (card.job && !card.job.terminal) tick(card);
}, 1000);
connect();

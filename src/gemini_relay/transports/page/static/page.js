// The job page: one EventSource on /events; cards are updated in place (players keep playing, open results stay
// open). Job text is untrusted model output: it only ever goes into textContent, never into markup.
"use strict";

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

function renderMedia(box, files, card) {
  const key = files.map((f) => f.url).join("\n");
  if (card.mediaKey === key) return;
  card.mediaKey = key;
  box.replaceChildren();
  for (const file of files) {
    const figure = el("figure");
    let player;
    if (file.kind === "image") {
      player = el("img");
      player.alt = file.name;
      player.loading = "lazy";
      player.src = file.url;
      const link = el("a");
      link.href = file.url;
      link.target = "_blank";
      link.rel = "noopener";
      link.append(player);
      figure.append(link);
    } else {
      player = el(file.kind === "video" ? "video" : "audio");
      player.controls = true;
      player.preload = "metadata";
      player.src = file.url;
      figure.append(player);
    }
    const caption = el("figcaption");
    const open = el("a", null, file.name);
    open.href = file.url;
    open.target = "_blank";
    open.rel = "noopener";
    caption.append(open);
    figure.append(caption);
    box.append(figure);
  }
}

async function loadText(card) {
  const job = card.job;
  const key = `${job.id}:${job.state}`;
  if (!job.terminal || card.loaded === key) return;
  card.loaded = key;
  try {
    const response = await fetch(`/api/jobs/${encodeURIComponent(job.id)}`, { credentials: "same-origin" });
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

function connect() {
  const events = new EventSource("/events");
  events.addEventListener("open", () => setConnection("live", "live"));
  events.addEventListener("jobs", (event) => {
    setConnection("live", "live");
    render(JSON.parse(event.data));
  });
  events.addEventListener("bye", () => {
    setConnection("down", "relay stopped; retrying…");
    events.close();
    setTimeout(connect, 3000);
  });
  events.addEventListener("error", () => {
    if (events.readyState === EventSource.CLOSED) {
      setConnection("down", "disconnected; retrying…");
      setTimeout(connect, 5000);
    } else {
      setConnection("connecting", "reconnecting…");
    }
  });
}

setInterval(() => {
  for (const card of cards.values()) if (card.job && !card.job.terminal) tick(card);
}, 1000);
connect();

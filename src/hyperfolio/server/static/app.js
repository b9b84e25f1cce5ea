// hyperfolio web app: collections, uploads with live progress, and answers whose citations open on
// the page they come from. Plain ES module, no build step, nothing fetched from outside this service.

const KEY_STORE = "hyperfolio.key"; // sessionStorage: the API key, for this tab only
const COLLECTION_STORE = "hyperfolio.collection"; // localStorage: the last collection picked
const CONVERSATION_STORE = "hyperfolio.conversation."; // localStorage + collection: its open thread
const DEFAULT_COLLECTION = "default";
const PAGE_DPI = 110; // the page image endpoint's default resolution
const GRAPH_STAGES = [
  "building hypergraph", "extracting", "reconciling facts", "refining",
  "embedding graph", "concept layer", "theme layer", "built",
];

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

const state = {
  key: storageGet("sessionStorage", KEY_STORE),
  collection: "",
  collections: [],
  docs: new Map(), // doc_id -> document row of the current collection
  pages: new Map(), // "collection/doc_id" -> Promise of the document's pages
  askController: null,
  asking: false,
  keyRefused: false, // a request needed the key and the prompt was cancelled
  conversation: null, // the thread's id in the collection (null: none started yet)
  turns: [], // the thread's turns before the one shown in the answer card
  current: null, // the turn shown in the answer card: {question, standalone, answer, citations}
};

// ---------------------------------------------------------------------- small helpers

// kind is "sessionStorage" or "localStorage"; either can be off (private modes, policies)
function storageGet(kind, name) {
  try {
    return window[kind].getItem(name) || "";
  } catch {
    return "";
  }
}

function storageSet(kind, name, value) {
  try {
    if (value) window[kind].setItem(name, value);
    else window[kind].removeItem(name);
  } catch {
    // storage can be off (private modes); the app still works for this page's life
  }
}

/** Create an element: el("button", {class: "btn", text: "Go", onclick: fn}, child, ...). */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function plural(count, word, many = `${word}s`) {
  return `${count} ${count === 1 ? word : many}`;
}

function rate(value) {
  if (!value || !Number.isFinite(value)) return "";
  return `${value >= 10 ? value.toFixed(0) : value.toFixed(1)} pages/s`;
}

function seconds(value) {
  if (!Number.isFinite(value)) return "";
  return value < 10 ? `${value.toFixed(1)} s` : `${Math.round(value)} s`;
}

/** A time left as the CLI says it: 12 s, 3m05s, 1h02m. */
function clock(value) {
  const total = Math.max(0, Math.round(value));
  if (total < 60) return `${total} s`;
  const minutes = Math.floor(total / 60);
  if (minutes < 60) return `${minutes}m${String(total % 60).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

let announceTimer = 0;
const announcements = [];
/** Say something to screen readers without moving focus; what comes together is said together. */
function announce(message) {
  announcements.push(message);
  clearTimeout(announceTimer);
  announceTimer = setTimeout(() => {
    $("announcer").textContent = announcements.splice(0).join(" ");
  }, 80);
}

function sentence(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

function showError(message) {
  $("banner-text").textContent = message;
  $("banner").hidden = false;
}

function hideError() {
  $("banner").hidden = true;
}

// ---------------------------------------------------------------------- the API, with its key

class ApiError extends Error {
  constructor(status, detail, body = null) {
    super(detail);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

async function problemOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not a problem document
  }
  const detail = body && typeof body.detail === "string" && body.detail
    ? body.detail
    : `the service answered ${response.status} ${response.statusText || ""}`.trim();
  return new ApiError(response.status, detail, body);
}

function authHeaders() {
  return state.key ? { Authorization: `Bearer ${state.key}` } : {};
}

/** Call the API; a 401 asks for the key once and retries. Returns parsed JSON, or the response when raw. */
async function api(path, { method = "GET", json, signal, raw = false } = {}) {
  for (;;) {
    const headers = authHeaders();
    let body;
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    }
    let response;
    try {
      response = await fetch(path, { method, headers, body, signal });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new ApiError(0, "cannot reach the hyperfolio service: is it still running?");
    }
    if (response.status === 401) {
      await needKey(await problemOf(response));
      continue;
    }
    if (!response.ok) throw await problemOf(response);
    return raw ? response : response.json();
  }
}

function withKey(url) {
  // EventSource and <iframe> cannot send headers; the service also takes the key as ?key=.
  if (!state.key) return url;
  return `${url}${url.includes("?") ? "&" : "?"}key=${enc(state.key)}`;
}

let keyPrompt = null;

/** Ask for the API key (one prompt however many requests were refused); rejects when cancelled. */
function needKey(problem) {
  if (keyPrompt) return keyPrompt;
  const dialog = $("key-dialog");
  const form = $("key-form");
  const input = $("key-input");
  const refused = Boolean(state.key);
  keyPrompt = new Promise((resolve, reject) => {
    const finish = (accepted) => {
      form.removeEventListener("submit", onSubmit);
      $("key-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      keyPrompt = null;
      state.keyRefused = !accepted;
      updateKeyStatus();
      if (accepted) resolve();
      else reject(problem);
    };
    const onSubmit = (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) {
        input.focus();
        return;
      }
      setKey(key);
      finish(true);
    };
    const onCancel = (event) => {
      event.preventDefault();
      finish(false);
    };
    form.addEventListener("submit", onSubmit);
    $("key-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    $("key-detail").textContent = refused
      ? "The key kept in this tab was not accepted. Enter the service's API key."
      : `${sentence(problem.message.replace(/: send .*$/, ""))}. Enter it to continue.`;
    input.value = "";
    dialog.showModal();
    input.focus();
  });
  return keyPrompt;
}

function setKey(key) {
  state.key = key;
  storageSet("sessionStorage", KEY_STORE, key);
  updateKeyStatus();
}

function updateKeyStatus() {
  $("key-status").hidden = !state.key;
  $("enter-key").hidden = Boolean(state.key) || !state.keyRefused;
  $("graph-open").hidden = Boolean(state.key) || !$("graph-open").getAttribute("href");
}

// ---------------------------------------------------------------------- collections

async function loadCollections(preferred = "") {
  let list = await api("/api/collections");
  const wanted = [preferred, state.collection, storageGet("localStorage", COLLECTION_STORE), DEFAULT_COLLECTION];
  if (!list.some((c) => wanted.includes(c.name))) {
    // nothing to open yet: start with a collection called "default"
    await api("/api/collections", { method: "POST", json: { name: DEFAULT_COLLECTION } });
    list = await api("/api/collections");
  }
  state.collections = list;
  const names = list.map((c) => c.name);
  const pick = wanted.find((n) => n && names.includes(n)) || names[0];
  renderCollections();
  $("collection").value = pick;
  if (pick !== state.collection) await selectCollection(pick);
  else await loadDocuments();
}

function renderCollections() {
  const select = $("collection");
  const current = select.value;
  select.replaceChildren(
    ...state.collections.map((c) => el("option", { value: c.name, text: `${c.name} (${plural(c.documents, "doc")})` })),
  );
  if (current) select.value = current;
}

async function selectCollection(name) {
  state.collection = name;
  storageSet("localStorage", COLLECTION_STORE, name);
  document.title = `${name} · hyperfolio`;
  resetAnswer();
  updateUploadsHead();
  state.docs = new Map();
  renderDocuments([]);
  forgetThread();
  await loadDocuments();
  await restoreThread(name);
}

function toggleNewCollection(show) {
  $("new-collection-form").hidden = !show;
  $("new-collection").hidden = show;
  $("new-collection").setAttribute("aria-expanded", String(show));
  $("collection-status").textContent = "";
  if (show) {
    $("new-collection-name").value = "";
    $("new-collection-name").focus();
  } else {
    $("new-collection").focus();
  }
}

async function createCollection(event) {
  event.preventDefault();
  const input = $("new-collection-name");
  const name = input.value.trim();
  if (!input.checkValidity()) {
    $("collection-status").textContent = "Use letters, digits, '-' or '_', starting with a letter or digit.";
    input.focus();
    return;
  }
  try {
    const made = await api("/api/collections", { method: "POST", json: { name } });
    toggleNewCollection(false);
    await loadCollections(name);
    $("collection-status").textContent = made.created ? `Created ${name}.` : `${name} already existed; opened it.`;
    $("collection").focus();
  } catch (err) {
    $("collection-status").textContent = err.message;
  }
}

// ---------------------------------------------------------------------- documents

async function loadDocuments() {
  const name = state.collection;
  if (!name) return;
  try {
    const docs = await api(`/api/collections/${enc(name)}/documents`);
    if (name !== state.collection) return; // another collection was picked meanwhile
    state.docs = new Map(docs.map((d) => [d.doc_id, d]));
    renderDocuments(docs);
    const entry = state.collections.find((c) => c.name === name);
    if (entry && entry.documents !== docs.length) {
      entry.documents = docs.length;
      renderCollections();
    }
  } catch (err) {
    showError(`Could not list the documents: ${err.message}`);
  }
}

let docsTimer = 0;
function refreshDocuments() {
  clearTimeout(docsTimer);
  docsTimer = setTimeout(loadDocuments, 150);
}

function statusChip(status) {
  const kind = status === "ready" ? "chip-ok" : status === "failed" ? "chip-bad" : "chip-busy";
  return el("span", { class: `chip ${kind}`, "data-testid": "doc-status", text: status || "unknown" });
}

function renderDocuments(docs) {
  const list = $("documents");
  list.replaceChildren(...docs.map(documentRow));
  $("documents-empty").hidden = docs.length > 0 || !state.collection;
  const pages = docs.reduce((sum, d) => sum + (d.num_pages || 0), 0);
  $("docs-count").textContent = docs.length ? `${plural(docs.length, "document")} · ${plural(pages, "page")}` : "";
}

function documentRow(doc) {
  const title = doc.title || doc.doc_id;
  const remove = el("button", {
    type: "button",
    class: "btn btn-quiet btn-small btn-danger",
    text: "Remove",
    "aria-label": `Remove ${title}`,
  });
  remove.addEventListener("click", () => removeDocument(doc, remove));
  const view = el("button", {
    type: "button",
    class: "btn btn-quiet btn-small",
    text: "View",
    "aria-label": `View the pages of ${title}`,
    onclick: (event) => openDocument(doc, event.currentTarget),
  });
  return el(
    "li",
    { class: "doc", "data-testid": "document", "data-doc-id": doc.doc_id, "data-status": doc.status },
    el("div", { class: "doc-title", title }, title),
    el(
      "div",
      { class: "doc-meta" },
      statusChip(doc.status),
      el("span", { class: "chip chip-kind", text: doc.kind }),
      el("span", {
        class: "doc-counts",
        text: `${plural(doc.num_pages, "page")} · ${plural(doc.num_chunks, "chunk")}`,
      }),
      el("div", { class: "doc-actions" }, view, remove),
    ),
  );
}

async function removeDocument(doc, button) {
  const title = doc.title || doc.doc_id;
  if (!button.classList.contains("confirming")) {
    // two steps, so a stray click or key press never deletes anything
    button.classList.add("confirming");
    button.textContent = "Confirm";
    button.setAttribute("aria-label", `Confirm removing ${title}`);
    announce(`Press again to remove ${title}.`);
    setTimeout(() => {
      if (!button.isConnected || !button.classList.contains("confirming")) return;
      button.classList.remove("confirming");
      button.textContent = "Remove";
      button.setAttribute("aria-label", `Remove ${title}`);
    }, 4000);
    return;
  }
  button.disabled = true;
  try {
    await api(`/api/collections/${enc(state.collection)}/documents/${enc(doc.doc_id)}`, { method: "DELETE" });
    state.pages.delete(`${state.collection}/${doc.doc_id}`);
    announce(`Removed ${title}.`);
    hideError();
    await loadDocuments();
    $("choose-files").focus();
  } catch (err) {
    button.disabled = false;
    button.classList.remove("confirming");
    button.textContent = "Remove";
    showError(`Could not remove ${title}: ${err.message}`);
  }
}

// ---------------------------------------------------------------------- uploads

const ROW_LABELS = {
  uploading: "uploading", queued: "queued", indexing: "indexing", done: "ready", failed: "failed", locked: "locked",
};
let rowCount = 0; // ids that tie a row's fields to its detail line

/** The name the service shows for an uploaded file (its last path part, trimmed). */
function shownName(name) {
  const base = (name || "").replaceAll("\\", "/").split("/").pop().trim();
  return base.slice(0, 200) || "upload";
}

function makeRow(file) {
  rowCount += 1;
  const row = {
    id: rowCount,
    file, // kept to send it again, with a password, when it turns out to be encrypted
    lock: null, // the password form of an encrypted file
    lockFocus: false, // focus was in that form when it was sent
    collection: state.collection,
    name: shownName(file.name),
    status: "uploading",
    fraction: 0,
    pages: 0,
    claimed: false,
    finished: false,
    lastStage: "",
  };
  row.chip = el("span", { class: "chip chip-busy" });
  row.fill = el("div", { class: "bar-fill" });
  row.bar = el(
    "div",
    {
      class: "bar",
      role: "progressbar",
      "aria-label": `${row.name} progress`,
      "aria-valuemin": 0,
      "aria-valuemax": 100,
    },
    row.fill,
  );
  row.detail = el("div", { class: "upload-detail", id: `upload-detail-${row.id}`, "data-testid": "upload-detail" });
  row.el = el(
    "li",
    { class: "upload-row", "data-testid": "upload-row", "data-name": row.name, "data-collection": row.collection },
    el("div", { class: "upload-top" }, el("span", { class: "upload-name", title: row.name, text: row.name }), row.chip),
    row.bar,
    row.detail,
  );
  $("uploads").prepend(row.el);
  updateUploadsHead();
  updateRow(row, { status: "uploading", detail: "uploading…" });
  return row;
}

function updateRow(row, { status, fraction, detail, valueText } = {}) {
  if (row.finished) return;
  if (status && row.status === "uploading" && status !== "uploading") row.fraction = 0; // now the indexing bar
  if (status) {
    row.status = status;
    row.el.dataset.status = status;
    row.chip.textContent = ROW_LABELS[status] || status;
    row.chip.className = `chip ${status === "done" ? "chip-ok" : status === "failed" ? "chip-bad" : "chip-busy"}`;
    row.finished = status === "done" || status === "failed";
    if (row.lock && status !== "locked" && status !== "uploading") dropLock(row);
  }
  if (fraction !== undefined && fraction !== null) {
    row.fraction = status === "uploading" ? fraction : Math.max(row.fraction, Math.min(1, fraction));
    const percent = Math.round(row.fraction * 100);
    row.fill.style.width = `${percent}%`;
    row.bar.setAttribute("aria-valuenow", String(percent));
  }
  if (valueText) row.bar.setAttribute("aria-valuetext", valueText);
  if (detail !== undefined) row.detail.textContent = detail;
}

function failRow(row, reason) {
  if (row.finished) return;
  updateRow(row, { status: "failed", detail: reason });
  announce(`${row.name} failed: ${reason}`);
}

function startUpload(fileList) {
  const files = [...fileList];
  if (!files.length) return;
  if (!state.collection) {
    showError("Pick or create a collection first.");
    return;
  }
  hideError();
  const rows = files.map(makeRow);
  announce(`Uploading ${plural(files.length, "file")}.`);
  sendFiles(files, rows, state.collection);
}

// `password` opens the encrypted files among `files`; it goes in this request only and is kept nowhere.
function sendFiles(files, rows, collection, password = "") {
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  if (password) form.append("password", password);
  const request = new XMLHttpRequest();
  request.open("POST", `/api/collections/${enc(collection)}/documents`);
  if (state.key) request.setRequestHeader("Authorization", `Bearer ${state.key}`);
  request.upload.addEventListener("progress", (event) => {
    if (!event.lengthComputable) return;
    const fraction = event.loaded / event.total;
    for (const row of rows) {
      const detail = `uploading ${Math.round(fraction * 100)}%`;
      updateRow(row, { status: "uploading", fraction: fraction * 0.98, detail });
    }
  });
  request.addEventListener("load", async () => {
    let body = null;
    try {
      body = JSON.parse(request.responseText);
    } catch {
      // not JSON: reported below with the status
    }
    if (request.status === 401) {
      try {
        await needKey(new ApiError(401, (body && body.detail) || "this service needs its API key"));
        sendFiles(files, rows, collection, password);
      } catch (err) {
        rows.forEach((row) => failRow(row, err.message));
      }
      return;
    }
    if (request.status >= 200 && request.status < 300 && body && body.job_id) {
      accepted(body, rows, collection, Boolean(password));
      return;
    }
    const detail = (body && body.detail) || `upload refused (${request.status} ${request.statusText})`;
    const rejected = (body && Array.isArray(body.rejected)) ? body.rejected : [];
    applyRejected(rows, rejected, Boolean(password));
    rows.filter((row) => !row.finished).forEach((row) => failRow(row, detail));
  });
  request.addEventListener("error", () => {
    rows.forEach((row) => failRow(row, "the upload did not reach the service (connection lost?)"));
  });
  request.send(form);
}

function claimRow(rows, name) {
  const row = rows.find((r) => !r.claimed && r.name === name);
  if (row) row.claimed = true;
  return row;
}

// An encrypted file refused after a password was sent was refused for that password.
function applyRejected(rows, rejected, sentPassword = false) {
  for (const item of rejected) {
    const row = claimRow(rows, item.name);
    if (!row) continue;
    if (item.encrypted) askPassword(row, sentPassword);
    else failRow(row, item.reason || "rejected by the service");
  }
}

/** An encrypted file the service refused: a password field on its row, to send that file again. */
function askPassword(row, wrong) {
  updateRow(row, {
    status: "locked",
    detail: wrong ? "Wrong password: try again." : "Encrypted: enter its password to index it.",
  });
  row.finished = true; // nothing more comes for this row until it is sent again
  if (!row.lock) row.lock = passwordForm(row);
  row.lock.hidden = false;
  const input = row.lock.querySelector("input");
  input.value = "";
  input.setAttribute("aria-invalid", String(wrong));
  announce(wrong ? `Wrong password for ${row.name}.` : `${row.name} is encrypted: enter its password to index it.`);
  // Into the field after a wrong password, or when nothing else holds focus (the first locked file).
  const idle = [document.body, $("choose-files")].includes(document.activeElement);
  if (wrong || idle) input.focus();
}

function passwordForm(row) {
  const id = `upload-password-${row.id}`;
  const input = el("input", {
    id,
    type: "password",
    placeholder: "Password",
    autocomplete: "off",
    spellcheck: "false",
    maxlength: 1024,
    required: true,
    "aria-describedby": row.detail.id,
    "data-testid": "upload-password",
  });
  const form = el(
    "form",
    { class: "password-form", "data-testid": "password-form" },
    el("label", { for: id, class: "visually-hidden", text: `Password for ${row.name}` }),
    input,
    el("button", {
      type: "submit",
      class: "btn btn-primary btn-small",
      text: "Unlock",
      "aria-label": `Unlock ${row.name}`,
    }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const password = input.value;
    if (!password) {
      input.focus();
      return;
    }
    input.value = ""; // the password lives in the request below only
    row.lockFocus = form.contains(document.activeElement);
    form.hidden = true;
    row.finished = false;
    row.claimed = false;
    updateRow(row, { status: "uploading", fraction: 0, detail: "uploading with the password…" });
    announce(`Sending ${row.name} again with its password.`);
    sendFiles([row.file], [row], row.collection, password);
  });
  row.el.append(form);
  return form;
}

/** The file went on (or failed for another reason): its password form goes, focus stays in the panel. */
function dropLock(row) {
  row.lock.remove();
  row.lock = null;
  if (row.lockFocus && (document.activeElement === document.body || !document.activeElement)) {
    $("choose-files").focus();
  }
  row.lockFocus = false;
}

function accepted(job, rows, collection, sentPassword = false) {
  applyRejected(rows, job.rejected || [], sentPassword);
  const jobRows = [];
  for (const file of job.files || []) {
    const row = claimRow(rows, file.name);
    if (!row) continue;
    row.pages = file.pages || 0;
    jobRows.push(row);
    updateRow(row, {
      status: "queued",
      fraction: 0,
      detail: `queued · ${plural(row.pages, "page")}`,
      valueText: "queued",
    });
  }
  rows.filter((row) => !row.claimed).forEach((row) => failRow(row, "the service did not take this file"));
  if (jobRows.length) followJob(job, jobRows, collection);
}

function followJob(job, rows, collection) {
  const tracker = { job, rows, collection, filesSeen: 0, over: false, source: null };
  const source = new EventSource(withKey(job.events));
  tracker.source = source;
  const on = (type, handle) => source.addEventListener(type, (event) => {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    handle(data);
  });
  on("queued", (data) => {
    const ahead = (data.position || 1) - 1;
    if (ahead > 0) {
      rows.forEach((row) => updateRow(row, { detail: `queued behind ${plural(ahead, "other upload")}` }));
    }
  });
  on("started", () => {
    rows.forEach((row) => updateRow(row, { detail: `waiting for its turn · ${plural(row.pages, "page")}` }));
  });
  on("preparing", (data) => {
    rows.filter((row) => !row.finished).forEach((row) => updateRow(row, { detail: data.stage }));
  });
  on("progress", (data) => jobProgress(tracker, data));
  on("file", (data) => fileResult(tracker, data));
  on("done", (data) => jobDone(tracker, data));
  source.addEventListener("error", () => {
    // The browser reconnects by itself (resuming after the last event); a closed source will not.
    if (!tracker.over && source.readyState === EventSource.CLOSED) pollJob(tracker);
  });
}

function openRow(tracker, name) {
  return tracker.rows.find((r) => !r.finished && r.name === name);
}

function jobProgress(tracker, data) {
  const row = openRow(tracker, data.file);
  if (!row) return;
  const total = data.file_pages || row.pages || 0;
  const done = Math.min(total, data.file_pages_done || 0);
  let fraction = null;
  if (data.stage === "reading") fraction = 0.02;
  else if (data.stage === "parsing") fraction = 0.02 + 0.68 * (total ? done / total : 0);
  else if (data.stage === "embedding") {
    fraction = 0.7 + 0.12 * (data.chunks_total ? (data.chunks_done || 0) / data.chunks_total : 0);
  } else {
    const step = GRAPH_STAGES.indexOf(data.stage);
    if (step >= 0) fraction = 0.82 + (0.17 * (step + 1)) / GRAPH_STAGES.length;
  }
  const parts = [data.stage, total ? `${done} / ${total} pages` : ""];
  if (data.stage === "embedding" && data.chunks_total) {
    parts.push(`${data.chunks_done || 0} / ${data.chunks_total} chunks`);
  }
  parts.push(rate(data.pages_per_second));
  if (Number.isFinite(data.seconds_left)) parts.push(`about ${clock(data.seconds_left)} left`);
  updateRow(row, {
    status: "indexing",
    fraction,
    detail: parts.filter(Boolean).join(" · "),
    valueText: `${data.stage}, ${done} of ${total} pages`,
  });
  if (!row.lastStage) announce(`${row.name}: indexing.`);
  row.lastStage = data.stage;
}

function fileResult(tracker, data) {
  tracker.filesSeen += 1;
  const row = openRow(tracker, data.name);
  refreshDocuments();
  if (!row) return;
  if (data.status === "failed") {
    failRow(row, data.reason || "failed while indexing");
    return;
  }
  const counts = `${plural(data.pages || 0, "page")} · ${plural(data.chunks || 0, "chunk")}`;
  const took = data.seconds ? ` · ${seconds(data.seconds)}` : "";
  const detail = {
    skipped: `already indexed, unchanged${data.reason ? ` (${data.reason})` : ""}`,
    replaced: `replaced the earlier version · ${counts}${took}`,
    resumed: `resumed and finished · ${counts}${took}`,
  }[data.status] || `${counts}${took}`;
  updateRow(row, { status: "done", fraction: 1, detail, valueText: "ready" });
  announce(`${row.name} is ready: ${counts}.`);
}

function jobDone(tracker, data) {
  tracker.over = true;
  if (tracker.source) tracker.source.close();
  const reason = data.status === "failed"
    ? `indexing stopped: ${data.error || "unknown error"}`
    : "the job ended without a result for this file";
  tracker.rows.filter((row) => !row.finished).forEach((row) => failRow(row, reason));
  refreshDocuments();
}

/** Fallback when the event stream is gone: read the job's summary until it is over. */
async function pollJob(tracker) {
  while (!tracker.over) {
    let job;
    try {
      job = await api(`/api/jobs/${enc(tracker.job.job_id)}`);
    } catch (err) {
      tracker.over = true;
      const reason = `lost track of indexing: ${err.message}`;
      tracker.rows.filter((row) => !row.finished).forEach((row) => failRow(row, reason));
      return;
    }
    job.results.slice(tracker.filesSeen).forEach((result) => fileResult(tracker, result));
    if (job.status === "done" || job.status === "failed") {
      jobDone(tracker, { status: job.status, error: job.error });
      return;
    }
    for (const row of tracker.rows) updateRow(row, { status: "indexing", detail: "indexing…" });
    await new Promise((resolve) => { setTimeout(resolve, 1000); });
  }
}

/** Upload rows belong to the collection they went to: only the current collection's are shown. */
function updateUploadsHead() {
  let shown = 0;
  for (const item of $("uploads").children) {
    item.hidden = item.dataset.collection !== state.collection;
    if (!item.hidden) shown += 1;
  }
  $("uploads-head").hidden = shown === 0;
}

function clearFinishedUploads() {
  for (const item of [...$("uploads").children]) {
    const finished = item.dataset.status === "done" || item.dataset.status === "failed";
    if (finished && item.dataset.collection === state.collection) item.remove();
  }
  updateUploadsHead();
  $("choose-files").focus();
}

function wireDropping() {
  const zone = $("dropzone");
  const hasFiles = (event) => Boolean(event.dataTransfer && [...event.dataTransfer.types].includes("Files"));
  let depth = 0;
  window.addEventListener("dragenter", (event) => {
    if (!hasFiles(event)) return;
    depth += 1;
    document.body.classList.add("dragging");
  });
  window.addEventListener("dragleave", (event) => {
    if (!hasFiles(event)) return;
    depth = Math.max(0, depth - 1);
    if (depth === 0) document.body.classList.remove("dragging");
  });
  window.addEventListener("dragover", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault(); // dropping anywhere uploads, instead of the browser opening the file
    event.dataTransfer.dropEffect = "copy";
  });
  window.addEventListener("drop", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth = 0;
    document.body.classList.remove("dragging");
    zone.classList.remove("active");
    startUpload(event.dataTransfer.files);
  });
  zone.addEventListener("dragenter", () => zone.classList.add("active"));
  zone.addEventListener("dragleave", (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove("active");
  });
  $("choose-files").addEventListener("click", () => $("file-input").click());
  $("file-input").addEventListener("change", (event) => {
    startUpload(event.target.files);
    event.target.value = ""; // the same file can be chosen again
  });
}

// ---------------------------------------------------------------------- questions

function resetAnswer() {
  if (state.askController) state.askController.abort();
  state.askController = null;
  setAsking(false);
  $("answer").replaceChildren();
  $("answer").classList.remove("has-answer");
  $("answer-empty").hidden = false;
  $("answer-status").textContent = "";
  $("answer-status").classList.remove("error");
  $("citations").replaceChildren();
  $("citations-block").hidden = true;
  $("evidence").replaceChildren();
  $("evidence-block").hidden = true;
  resetGraph();
}

function setAsking(busy) {
  state.asking = busy;
  $("ask-button").disabled = busy;
  $("ask-button").textContent = busy ? "Asking…" : "Ask";
  $("ask-form").setAttribute("aria-busy", String(busy));
}

function setAnswerStatus(text, error = false) {
  $("answer-status").textContent = text;
  $("answer-status").classList.toggle("error", error);
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  const mode = $("mode").value;
  if (!question) {
    $("question").focus();
    return;
  }
  if (!state.collection) return;
  if (state.docs.size === 0) await loadDocuments(); // an upload may have just finished
  if (state.docs.size === 0) {
    setAnswerStatus("This collection has no documents yet: add some first.", true);
    return;
  }
  if (state.askController) state.askController.abort();
  const controller = new AbortController();
  state.askController = controller;
  const collection = state.collection;
  const started = performance.now();
  setAsking(true);
  $("answer-empty").hidden = true;
  $("answer").replaceChildren();
  $("answer").classList.remove("has-answer");
  $("citations-block").hidden = true;
  $("evidence-block").hidden = true;
  setAnswerStatus("Searching the collection…");
  waitGraph();
  try {
    const answer = await askInThread(collection, question, mode, controller.signal, (evidence) => {
      if (controller !== state.askController) return;
      setAnswerStatus(`Found ${plural(evidence.items.length, "passage")}; writing the answer…`);
    });
    if (controller !== state.askController) return;
    if (state.current) state.turns.push(state.current); // the card's last turn joins the thread above
    state.current = { question, answer };
    renderThread();
    renderAnswer(answer, mode, (performance.now() - started) / 1000);
    $("question").value = "";
    loadConversations();
    // after the answer, so the two never compete for the models; a follow-up's picture is of what it asked
    showGraph(collection, answer.question || question, mode);
  } catch (err) {
    if (err.name === "AbortError" || controller !== state.askController) return;
    resetGraph();
    $("answer-empty").hidden = false;
    setAnswerStatus(`Could not answer: ${err.message}`, true);
    announce(`Could not answer: ${err.message}`);
  } finally {
    if (controller === state.askController) setAsking(false);
  }
}

/** Ask in the collection's open thread (started on the first question), streamed: `onEvidence` hears
 * of the evidence before the answer is written. A thread gone (deleted, or another key's) is replaced by
 * a new one, once; a stream that breaks is asked again without streaming. */
async function askInThread(collection, question, mode, signal, onEvidence) {
  for (let attempt = 0; ; attempt += 1) {
    if (!state.conversation) {
      const made = await api(`/api/collections/${enc(collection)}/conversations`, { method: "POST", signal });
      state.conversation = made.id;
      storageSet("localStorage", CONVERSATION_STORE + collection, made.id);
    }
    const url = `/api/collections/${enc(collection)}/conversations/${enc(state.conversation)}/ask`;
    try {
      let answer = null;
      try {
        answer = await askStream(`${url}/stream`, question, mode, signal, onEvidence);
      } catch (err) {
        // a clear refusal (bad question, no such thread) stands; anything else is asked again, whole
        if (err.name === "AbortError" || (err instanceof ApiError && err.status >= 400 && err.status < 500)) throw err;
      }
      return answer || (await api(url, { method: "POST", json: { question, mode }, signal }));
    } catch (err) {
      if (attempt > 0 || !(err instanceof ApiError && err.status === 404) || !/conversation/.test(err.message)) throw err;
      state.conversation = null;
    }
  }
}

/** POST a question to a `.../ask/stream` URL and read its server-sent events: `evidence`, then `answer`. */
async function askStream(url, question, mode, signal, onEvidence) {
  const response = await api(url, { method: "POST", json: { question, mode }, signal, raw: true });
  if (!(response.headers.get("content-type") || "").includes("text/event-stream")) return null;
  for await (const event of serverEvents(response)) {
    if (event.type === "evidence") onEvidence(event.data);
    else if (event.type === "answer") return event.data;
  }
  return null;
}

async function* serverEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    // normalise line ends; a lone trailing \r waits for the next piece (it may be half of \r\n)
    buffer = (buffer + value).replace(/\r\n|\r(?!$)/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue;
      try {
        yield { type, data: JSON.parse(data.join("\n")) };
      } catch {
        // a malformed event is skipped
      }
    }
  }
}

/** The thread's earlier turns above the answer card, each with its question (and how it was read) and
 * its answer's citations. */
function renderThread() {
  const list = $("thread");
  list.replaceChildren(...state.turns.map((turn) => threadItem(turn)));
  list.hidden = state.turns.length === 0;
  const current = state.current;
  const asked = $("answer-question");
  asked.replaceChildren();
  if (current) asked.append(...questionLine(current.question, current.answer));
  asked.hidden = !current;
  $("new-conversation").hidden = !state.conversation;
}

function questionLine(question, answer) {
  const followup = (answer && answer.meta && answer.meta.followup) || null;
  const read = followup && followup.standalone && followup.standalone !== question ? followup.standalone : "";
  return [
    el("span", { text: question }),
    read ? el("span", { class: "readas turn-readas", "data-testid": "read-as", text: ` — read as: ${read}` }) : "",
  ].filter(Boolean);
}

function threadItem(turn) {
  const answer = turn.answer || {};
  const citations = answer.citations || [];
  return el(
    "li",
    { "data-testid": "turn" },
    el("p", { class: "turn-question" }, ...questionLine(turn.question, answer)),
    el("p", { class: "turn-answer", text: (answer.answer || "").replace(MARKER, "").trim() }),
    el("div", { class: "turn-pages" }, ...citations.map((cite, i) => citationButton(cite, i + 1))),
  );
}

/** A stored turn (dialogue.Turn as the API gives it) as the web app renders turns: its cited pages
 * become citations the page viewer opens. */
function storedTurn(turn) {
  const citations = (turn.pages || []).map(([docId, page]) => {
    const doc = state.docs.get(docId);
    return { doc_id: docId, page, title: doc ? doc.title : docId, section_path: [], modality: "" };
  });
  const followup = turn.standalone ? { standalone: turn.standalone } : null;
  return { question: turn.question, answer: { answer: turn.answer, citations, meta: { followup } } };
}

function forgetThread() {
  state.conversation = null;
  state.turns = [];
  state.current = null;
  renderThread();
}

function newConversation() {
  if (state.collection) storageSet("localStorage", CONVERSATION_STORE + state.collection, "");
  forgetThread();
  resetAnswer();
  loadConversations();
  $("question").focus();
}

/** The thread this tab had open in the collection, read back from the collection (a reload keeps it). */
async function restoreThread(collection) {
  const id = storageGet("localStorage", CONVERSATION_STORE + collection);
  await loadConversations();
  if (id) await openConversation(collection, id);
}

async function openConversation(collection, id) {
  let thread;
  try {
    thread = await api(`/api/collections/${enc(collection)}/conversations/${enc(id)}`);
  } catch {
    storageSet("localStorage", CONVERSATION_STORE + collection, ""); // gone: start afresh
    return;
  }
  if (collection !== state.collection) return;
  resetAnswer();
  state.conversation = thread.id;
  storageSet("localStorage", CONVERSATION_STORE + collection, thread.id);
  const turns = (thread.turns || []).map(storedTurn);
  state.current = turns.pop() || null;
  state.turns = turns;
  renderThread();
  if (state.current) {
    $("answer-empty").hidden = true;
    renderAnswer(state.current.answer, "", 0);
    setAnswerStatus("The conversation as the collection kept it: ask a follow-up.");
  }
}

async function loadConversations() {
  const collection = state.collection;
  if (!collection) return;
  let threads = [];
  try {
    threads = await api(`/api/collections/${enc(collection)}/conversations`);
  } catch {
    threads = [];
  }
  if (collection !== state.collection) return;
  $("conversations").replaceChildren(
    ...threads.map((t) =>
      el(
        "li",
        {},
        el("button", {
          type: "button",
          "data-testid": "conversation",
          text: t.title || "(no question yet)",
          onclick: () => openConversation(collection, t.id),
        }),
      ),
    ),
  );
  $("conversations-block").hidden = threads.length === 0;
}

const MARKER = /\[(\d+(?:\s*,\s*\d+)*)\]/g;

function renderAnswer(answer, mode, took) {
  const citations = answer.citations || [];
  const box = $("answer");
  const paragraphs = (answer.answer || "").split(/\n{2,}/).filter((p) => p.trim());
  box.replaceChildren(...paragraphs.map((text) => el("p", {}, withMarkers(text, citations))));
  if (!paragraphs.length) box.append(el("p", { class: "muted", text: "No answer was written." }));
  if (answer.sufficient === false) {
    box.append(el("p", { class: "warn-note", text: "The evidence found may not be enough to answer this fully." }));
  }
  box.classList.add("has-answer");

  const facts = [
    answer.answerer ? `${answer.answerer} answer` : "",
    `mode ${(answer.evidence && answer.evidence.strategy) || mode}`,
    plural(citations.length, "citation"),
    took ? seconds(took) : "",
  ];
  setAnswerStatus(facts.filter(Boolean).join(" · "));

  $("citations").replaceChildren(...citations.map((cite, index) => el("li", {}, citationButton(cite, index + 1))));
  $("citations-block").hidden = citations.length === 0;
  renderEvidence(answer.evidence);
  announce(`Answer ready, with ${plural(citations.length, "citation")}.`);
}

function withMarkers(text, citations) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    const numbers = match[1].split(",").map((n) => Number(n.trim()));
    if (!numbers.every((n) => n >= 1 && n <= citations.length)) continue;
    parts.push(text.slice(last, match.index));
    for (const n of numbers) {
      const cite = citations[n - 1];
      parts.push(el("button", {
        type: "button",
        class: "marker",
        text: String(n),
        "aria-label": `Citation ${n}: ${cite.title}, ${pageName(cite)}`,
        onclick: (event) => openCitation(cite, n, event.currentTarget),
      }));
    }
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

function pageName(cite) {
  // "slide 3" / "sheet Revenue" name their own unit (as Citation.label in model.py); a PDF's printed
  // page label is shown beside the page number it differs from.
  if (/^(slide|sheet) /.test(cite.page_label || "")) return cite.page_label;
  return cite.page_label && cite.page_label !== String(cite.page)
    ? `page ${cite.page} (printed ${cite.page_label})`
    : `page ${cite.page}`;
}

function citationButton(cite, number) {
  const section = (cite.section_path || []).slice(-1)[0];
  const meta = [pageName(cite), cite.modality, section].filter(Boolean).join(" · ");
  return el(
    "button",
    {
      type: "button",
      class: "citation",
      "data-testid": "citation",
      onclick: (event) => openCitation(cite, number, event.currentTarget),
    },
    el("span", { class: "citation-num", "aria-hidden": "true", text: String(number) }),
    el("span", { class: "visually-hidden", text: `Citation ${number}: ` }),
    el("span", { class: "citation-title", text: cite.title || cite.doc_id }),
    el("span", { class: "citation-meta", text: meta }),
  );
}

function renderEvidence(evidence) {
  const items = (evidence && evidence.items) || [];
  const ranker = evidence ? evidence.strategy : "the mode";
  $("evidence-summary").textContent = `Evidence · ${plural(items.length, "passage")} ranked by ${ranker}`;
  $("evidence").replaceChildren(...items.map((item) => {
    const cite = item.citation;
    return el(
      "li",
      { class: "evidence-item" },
      el(
        "header",
        {},
        el("span", { class: "chip", text: `#${item.rank}` }),
        el("span", { class: "chip chip-kind", text: item.modality }),
        el("button", {
          type: "button",
          class: "btn btn-quiet btn-small",
          text: `${cite.title} · ${pageName(cite)}`,
          "aria-label": `Open evidence ${item.rank}: ${cite.title}, ${pageName(cite)}`,
          onclick: (event) => openCitation(cite, null, event.currentTarget),
        }),
      ),
      el("p", { class: "evidence-text", text: item.text }),
    );
  }));
  $("evidence-block").hidden = items.length === 0;
}

// ---------------------------------------------------------------------- the evidence hypergraph

function resetGraph() {
  const frame = $("graph-frame");
  frame.hidden = true;
  frame.removeAttribute("src");
  $("graph-empty").hidden = false;
  $("graph-loading").hidden = true;
  $("graph-open").removeAttribute("href");
  $("graph-open").hidden = true;
  $("graph-expand").disabled = true;
  setGraphExpanded(false);
}

function waitGraph() {
  $("graph-frame").hidden = true;
  $("graph-frame").removeAttribute("src");
  $("graph-empty").hidden = true;
  $("graph-loading").hidden = false;
  $("graph-expand").disabled = true;
}

function showGraph(collection, question, mode) {
  const url = `/api/collections/${enc(collection)}/graph?query=${enc(question)}&format=html&mode=${enc(mode)}`;
  const frame = $("graph-frame");
  $("graph-empty").hidden = true;
  $("graph-loading").hidden = false;
  frame.hidden = false;
  frame.title = `Evidence hypergraph for: ${question}`;
  frame.src = withKey(url);
  $("graph-open").href = url;
  $("graph-open").hidden = Boolean(state.key); // a link cannot carry the key in a header
  $("graph-expand").disabled = false;
}

function setGraphExpanded(expanded) {
  $("graph-panel").classList.toggle("expanded", expanded);
  $("graph-expand").textContent = expanded ? "Collapse" : "Expand";
}

// ---------------------------------------------------------------------- the page viewer

const viewer = {
  doc: null, // document row (or a stand-in built from the citation)
  cite: null,
  number: null,
  page: 1,
  total: 1,
  pages: [],
  fitPage: false,
  imageUrl: "",
  token: 0,
  opener: null,
};

function pagesOf(collection, docId) {
  const key = `${collection}/${docId}`;
  if (!state.pages.has(key)) {
    const loading = api(`/api/collections/${enc(collection)}/documents/${enc(docId)}/pages`);
    loading.catch(() => state.pages.delete(key));
    state.pages.set(key, loading);
  }
  return state.pages.get(key);
}

function openCitation(cite, number, opener) {
  const doc = state.docs.get(cite.doc_id)
    || { doc_id: cite.doc_id, title: cite.title, kind: "", num_pages: 0 };
  openViewer(doc, cite, number, cite.page, opener);
}

function openDocument(doc, opener) {
  openViewer(doc, null, null, 1, opener);
}

function openViewer(doc, cite, number, page, opener) {
  Object.assign(viewer, { doc, cite, number, page, total: doc.num_pages || page, pages: [], opener });
  $("viewer-title").textContent = doc.title || doc.doc_id;
  const sub = cite
    ? [number ? `Citation ${number}` : "Evidence", pageName(cite), cite.modality, (cite.section_path || []).at(-1)]
    : ["Browsing the document", plural(doc.num_pages || 0, "page")];
  $("viewer-sub").textContent = sub.filter(Boolean).join(" · ");
  renderPassage();
  const dialog = $("viewer");
  if (!dialog.open) dialog.showModal();
  $("viewer-close").focus();
  showPage(page);
}

function closeViewer() {
  const dialog = $("viewer");
  if (dialog.open) dialog.close();
}

function onViewerClosed() {
  if ($("viewer").open) return; // opened again before this (queued) event ran: nothing to clean up
  viewer.token += 1;
  if (viewer.imageUrl) URL.revokeObjectURL(viewer.imageUrl);
  viewer.imageUrl = "";
  $("page-image").removeAttribute("src");
  const back = viewer.opener;
  viewer.opener = null;
  if (back && back.isConnected) back.focus();
}

function setPageMessage(text, error = false) {
  const message = $("page-message");
  message.textContent = text;
  message.classList.toggle("error", error);
  message.hidden = !text;
}

async function showPage(number) {
  const token = ++viewer.token;
  const collection = state.collection;
  const docId = viewer.doc.doc_id;
  viewer.page = number;
  updatePageNav();
  $("highlight").hidden = true;
  setPageMessage("Loading the page…");
  try {
    const pages = await pagesOf(collection, docId);
    if (token !== viewer.token) return;
    viewer.pages = pages;
    viewer.total = Math.max(pages.length, viewer.doc.num_pages || 0, 1);
    updatePageNav();
    renderPassage();
    const info = pages.find((p) => p.number === number) || { number, width: 0, height: 0, chunks: [] };
    const kind = viewer.doc.kind || (info.width > 0 ? "pdf" : "text");
    if (kind !== "pdf") {
      showPageText(info);
      return;
    }
    const response = await api(`/api/collections/${enc(collection)}/documents/${enc(docId)}/pages/${number}/image`, {
      raw: true,
    });
    const blob = await response.blob();
    if (token !== viewer.token) return;
    const image = $("page-image");
    if (viewer.imageUrl) URL.revokeObjectURL(viewer.imageUrl);
    viewer.imageUrl = URL.createObjectURL(blob);
    image.src = viewer.imageUrl;
    await image.decode();
    if (token !== viewer.token) return;
    image.alt = `Page ${number} of ${viewer.doc.title || docId}`;
    $("page-text").hidden = true;
    $("page-frame").hidden = false;
    setPageMessage("");
    layoutPage();
    placeHighlight(info);
  } catch (err) {
    if (token !== viewer.token) return;
    $("page-frame").hidden = true;
    $("page-text").hidden = true;
    setPageMessage(`Could not show page ${number}: ${err.message}`, true);
  }
}

function updatePageNav() {
  $("page-indicator").textContent = `Page ${viewer.page} of ${viewer.total}`;
  $("page-prev").disabled = viewer.page <= 1;
  $("page-next").disabled = viewer.page >= viewer.total;
  $("cited-page").hidden = !viewer.cite || viewer.cite.page === viewer.page;
  const isText = viewer.doc && viewer.doc.kind && viewer.doc.kind !== "pdf";
  $("page-fit").hidden = Boolean(isText);
}

/** Size the page: the stage's width (never past 1.25x the image's pixels), or the whole page in view. */
function layoutPage() {
  const image = $("page-image");
  const stage = $("page-stage");
  if (!image.naturalWidth) return;
  const style = getComputedStyle(stage);
  const innerWidth = stage.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const innerHeight = stage.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
  let width = Math.min(innerWidth, image.naturalWidth * 1.25);
  if (viewer.fitPage) width = Math.min(width, innerHeight * (image.naturalWidth / image.naturalHeight));
  $("page-frame").style.width = `${Math.max(120, Math.floor(width))}px`;
}

function placeHighlight(info) {
  const box = $("highlight");
  const cite = viewer.cite;
  if (!cite || cite.page !== viewer.page || !Array.isArray(cite.bbox) || cite.bbox.length !== 4) {
    box.hidden = true;
    return;
  }
  const image = $("page-image");
  let width = info.width;
  let height = info.height;
  if (!(width > 0 && height > 0)) {
    // no page size from the store: the image was drawn at PAGE_DPI, PDF points are 1/72 inch
    width = (image.naturalWidth * 72) / PAGE_DPI;
    height = (image.naturalHeight * 72) / PAGE_DPI;
  }
  const clamp = (v) => Math.min(100, Math.max(0, v));
  const [x0, y0, x1, y1] = cite.bbox;
  const left = clamp((Math.min(x0, x1) / width) * 100);
  const top = clamp((Math.min(y0, y1) / height) * 100);
  const right = clamp((Math.max(x0, x1) / width) * 100);
  const bottom = clamp((Math.max(y0, y1) / height) * 100);
  box.style.left = `${left}%`;
  box.style.top = `${top}%`;
  box.style.width = `${Math.max(0.4, right - left)}%`;
  box.style.height = `${Math.max(0.4, bottom - top)}%`;
  box.title = cite.label || "cited region";
  box.hidden = false;
  box.scrollIntoView({ block: viewer.fitPage ? "nearest" : "center", inline: "nearest" });
  placeAnswerMarks(box, cite);
}

/** What answers inside the citation's block, as the service lists it (a table row's cells, else the quoted sentence). */
function answerQuotes(cite) {
  return Array.isArray(cite.quotes) ? cite.quotes.filter((q) => typeof q === "string" && q.trim()) : [];
}

const answerRegions = new Map(); // regions URL -> Promise of its boxes, so toggling the fit asks once

/** Mark the lines that answer inside the highlighted block, from the page's regions endpoint (boxes in
 * points); the block stays outlined, lighter. Nothing is marked when they are not found on the page. */
async function placeAnswerMarks(box, cite) {
  let layer = box.querySelector(".highlight-marks");
  if (!layer) {
    layer = el("div", { class: "highlight-marks" });
    box.append(layer);
  }
  layer.replaceChildren();
  box.classList.remove("has-marks");
  const quotes = answerQuotes(cite);
  if (!quotes.length || !viewer.doc) return;
  const token = viewer.token;
  const params = new URLSearchParams({ box: cite.bbox.join(",") });
  for (const quote of quotes.slice(0, 50)) params.append("quote", quote.slice(0, 2000));
  const url = `/api/collections/${enc(state.collection)}/documents/${enc(viewer.doc.doc_id)}/pages/${cite.page}/regions?${params}`;
  if (!answerRegions.has(url)) {
    answerRegions.set(url, api(url).then((found) => found.quotes.flatMap((q) => q.boxes), () => []));
  }
  const boxes = await answerRegions.get(url);
  if (token !== viewer.token || viewer.cite !== cite || !boxes.length) return;
  const [x0, y0, x1, y1] = cite.bbox;
  const left = Math.min(x0, x1);
  const top = Math.min(y0, y1);
  const width = Math.max(1, Math.abs(x1 - x0));
  const height = Math.max(1, Math.abs(y1 - y0));
  const pct = (v) => `${Math.min(100, Math.max(0, v * 100))}%`;
  layer.replaceChildren(...boxes.map(([a0, b0, a1, b1]) => {
    const mark = el("div", { class: "highlight-mark" });
    mark.style.left = pct((a0 - left) / width);
    mark.style.top = pct((b0 - top) / height);
    mark.style.width = pct((a1 - a0) / width);
    mark.style.height = pct((b1 - b0) / height);
    return mark;
  }));
  box.classList.add("has-marks");
  box.title = `${cite.label || "cited region"} · the answering ${quotes.length > 1 ? "cells" : "lines"} marked`;
}

function showPageText(info) {
  $("page-frame").hidden = true;
  const holder = $("page-text");
  const chunks = info.chunks || [];
  const citedId = viewer.cite && viewer.cite.page === viewer.page ? viewer.cite.chunk_id : "";
  holder.replaceChildren(...chunks.map((chunk) => el(
    "p",
    { class: `text-chunk${chunk.chunk_id === citedId ? " cited" : ""}`, "data-chunk-id": chunk.chunk_id },
    sectionLabel(chunk) ? el("span", { class: "text-chunk-path", text: sectionLabel(chunk) }) : null,
    chunk.text,
  )));
  if (!chunks.length) holder.append(el("p", { class: "muted", text: "No text on this page." }));
  holder.hidden = false;
  setPageMessage("");
  const cited = holder.querySelector(".cited");
  if (cited) cited.scrollIntoView({ block: "center" });
  else $("page-stage").scrollTop = 0;
}

/** The chunk's section path, unless its text opens with that heading anyway. */
function sectionLabel(chunk) {
  const path = chunk.section_path || [];
  if (!path.length) return "";
  const firstLine = (chunk.text || "").split("\n", 1)[0].trim();
  return firstLine === path[path.length - 1] && path.length === 1 ? "" : path.join(" › ");
}

function findChunk(chunkId) {
  for (const page of viewer.pages) {
    const chunk = (page.chunks || []).find((c) => c.chunk_id === chunkId);
    if (chunk) return chunk;
  }
  return null;
}

function renderPassage() {
  const passage = $("viewer-passage");
  const meta = $("viewer-meta");
  const cite = viewer.cite;
  $("viewer-side-title").textContent = cite ? "Cited passage" : "Text on this page";
  if (!cite) {
    meta.textContent = `Page ${viewer.page}`;
    const info = viewer.pages.find((p) => p.number === viewer.page);
    const texts = info ? (info.chunks || []).map((c) => c.text) : [];
    passage.className = "passage";
    passage.textContent = texts.join("\n\n") || "";
    return;
  }
  const chunk = findChunk(cite.chunk_id);
  const where = [pageName(cite), cite.modality, (cite.section_path || []).join(" › ")];
  meta.textContent = where.filter(Boolean).join(" · ");
  passage.className = `passage${cite.modality === "table" ? " passage-table" : ""}`;
  if (chunk) passage.textContent = chunk.text;
  else passage.textContent = viewer.pages.length ? "(the cited passage is no longer stored)" : "Loading…";
}

function wireViewer() {
  const dialog = $("viewer");
  dialog.addEventListener("close", onViewerClosed);
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) closeViewer(); // a click on the backdrop
  });
  dialog.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
    if (typing || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "ArrowLeft" && viewer.page > 1) {
      event.preventDefault();
      showPage(viewer.page - 1);
    } else if (event.key === "ArrowRight" && viewer.page < viewer.total) {
      event.preventDefault();
      showPage(viewer.page + 1);
    }
  });
  $("viewer-close").addEventListener("click", closeViewer);
  $("page-prev").addEventListener("click", () => viewer.page > 1 && showPage(viewer.page - 1));
  $("page-next").addEventListener("click", () => viewer.page < viewer.total && showPage(viewer.page + 1));
  $("cited-page").addEventListener("click", () => viewer.cite && showPage(viewer.cite.page));
  $("page-fit").addEventListener("click", () => {
    viewer.fitPage = !viewer.fitPage;
    $("page-fit").setAttribute("aria-pressed", String(viewer.fitPage));
    layoutPage();
    const info = viewer.pages.find((p) => p.number === viewer.page);
    if (info && !$("page-frame").hidden) placeHighlight(info);
  });
  window.addEventListener("resize", () => {
    if (dialog.open && !$("page-frame").hidden) layoutPage();
  });
}

// ---------------------------------------------------------------------- start

function wire() {
  $("collection").addEventListener("change", (event) => {
    selectCollection(event.target.value).catch((err) => showError(err.message));
  });
  $("new-collection").addEventListener("click", () => toggleNewCollection(true));
  $("new-collection-cancel").addEventListener("click", () => toggleNewCollection(false));
  $("new-collection-form").addEventListener("submit", createCollection);
  $("new-collection-form").addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      toggleNewCollection(false);
    }
  });
  $("enter-key").addEventListener("click", () => {
    needKey(new ApiError(401, "this service needs its API key"))
      .then(() => loadCollections())
      .then(hideError)
      .catch(() => {});
  });
  $("forget-key").addEventListener("click", () => {
    setKey("");
    announce("The API key was forgotten.");
  });
  $("banner-close").addEventListener("click", hideError);
  $("clear-uploads").addEventListener("click", clearFinishedUploads);
  $("ask-form").addEventListener("submit", ask);
  $("new-conversation").addEventListener("click", newConversation);
  $("graph-frame").addEventListener("load", () => {
    if ($("graph-frame").getAttribute("src")) $("graph-loading").hidden = true;
  });
  $("graph-expand").addEventListener("click", () => {
    setGraphExpanded(!$("graph-panel").classList.contains("expanded"));
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && $("graph-panel").classList.contains("expanded") && !$("viewer").open) {
      setGraphExpanded(false);
      $("graph-expand").focus();
    }
  });
  wireDropping();
  wireViewer();
}

async function start() {
  wire();
  updateKeyStatus();
  try {
    await loadCollections();
  } catch (err) {
    showError(err.status === 401
      ? "This service needs its API key: use “Enter API key” at the top right to go on."
      : `Could not open the collections: ${err.message}`);
  }
  document.body.dataset.ready = "true";
}

start();

/**
 * The web app (/app): paste a video link, read its transcript, search it, copy a cited excerpt,
 * download it; search the library and build collections. One module over the REST API of the
 * same origin, around the transcript component the MCP viewer uses too (transcript.js). Upload
 * and Ask are modules of their own (app_upload.js, app_ask.js), mounted when they are served.
 *
 * Rules: text from a video or from the server goes in as text, never as HTML; only http(s) links
 * become hrefs; an API key lives in sessionStorage (this tab only) and travels in the
 * Authorization header, never in a URL.
 */
import { errorBody, readEvents } from "./app_sse.js";
import { momentLink, renderTranscript, stamp } from "./transcript.js";

const KEY_ITEM = "vid2context.apiKey";
const SIGN_IN = "/api/v1/auth/github/login";
const MAX_INPUT = 2048;
const $ = (id) => document.getElementById(id);

let current = null; // {input, view, tools}
let selection = null; // {videoId, startSec, endSec, text, first, last}
let formats = null;
let retry = null;
const factsNode = $("video-facts");
const toolsNode = $("tools");

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== null) node.textContent = String(text);
  return node;
}

function safeHref(href) {
  try {
    const url = new URL(String(href), location.href);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

function say(id, text) {
  $(id).textContent = text || "";
}

// --- the API ----------------------------------------------------------------------------------

function storedKey() {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

/** A same-origin fetch with the tab's API key (if any) and the session cookie. */
export async function apiFetch(path, init = {}) {
  if (typeof path !== "string" || !path.startsWith("/") || path.startsWith("//")) {
    throw new TypeError("apiFetch takes a path on this server");
  }
  const headers = new Headers(init.headers || {});
  const key = storedKey();
  if (key && !headers.has("Authorization")) headers.set("Authorization", `Bearer ${key}`);
  const response = await fetch(path, { ...init, headers, credentials: "same-origin" });
  if (response.status === 401) askForAccess(await errorBody(response.clone()));
  return response;
}

async function getJson(path) {
  const response = await apiFetch(path);
  if (!response.ok) throw await errorBody(response);
  return response.json();
}

// --- messages ---------------------------------------------------------------------------------

/** The contract's error body ({error: {...}} or {code, message, hint}) as readable text. */
export function showError(body) {
  const error = (body && body.error) || body || {};
  const notice = $("notice");
  notice.replaceChildren(el("p", { class: "app-error-message" }, error.message || "Something went wrong."));
  if (error.hint) notice.append(el("p", { class: "app-error-hint" }, error.hint));
  if (error.code === "blocked") notice.append(...blockedAdvice());
  if (error.code) notice.append(el("p", { class: "app-muted" }, `Code: ${error.code}`));
  notice.hidden = false;
}

function blockedAdvice() {
  const input = (current && current.input) || $("video").value.trim() || "<the video's link>";
  const what = el("p", {}, "What to do: the video platform refused this server's address. ");
  what.append(
    "Read the video on your own machine and relay it here: ",
    el("code", {}, `vid2context push ${input} --to ${location.origin}`),
    " (add --key with your API key). The transcript is then in this server's library, and this page opens it. ",
  );
  const more = el("a", { href: "/blocked-edge" }, "When YouTube blocks the server");
  const tail = el("p", {}, "Other ways out: ");
  tail.append(more, ".");
  return [what, tail];
}

function clearNotice() {
  $("notice").hidden = true;
  $("notice").replaceChildren();
}

function askForAccess(error) {
  $("access").hidden = false;
  say("access-why", [error.message, error.hint].filter(Boolean).join(" "));
  $("signin-row").hidden = !String(error.hint || "").includes(SIGN_IN);
}

// --- reading a video --------------------------------------------------------------------------

const ORIGINS = {
  "captions-manual": "captions written for the video",
  "captions-auto": "the platform's automatic captions",
  "captions-translated": "the platform's translated captions",
  asr: "speech-to-text",
  sidecar: "a subtitle file beside the video",
  embedded: "subtitles inside the file",
};

/** Load and show `input` (a link or an id); `at` (seconds) jumps there once it is shown. */
export async function openVideo(input, at = null) {
  const value = String(input || "").trim();
  clearNotice();
  if (!value) {
    showError({ code: "bad-request", message: "Paste a video link or id first.", hint: "For example https://www.youtube.com/watch?v=jNQXAC9IVRw, or jNQXAC9IVRw." });
    return;
  }
  if (value.length > MAX_INPUT) {
    showError({
      code: "bad-request",
      message: `That is ${value.length.toLocaleString("en")} characters; a video link or id is at most ${MAX_INPUT.toLocaleString("en")}.`,
      hint: "Paste one video's link or id.",
    });
    return;
  }
  $("video").value = value;
  retry = () => openVideo(value, at);
  say("busy", "Loading the transcript…");
  try {
    const response = await apiFetch(`/api/v1/view?url=${encodeURIComponent(value)}`);
    if (!response.ok) {
      current = current && current.input === value ? current : null;
      showError(await errorBody(response));
      return;
    }
    showVideo(value, await response.json());
    if (at !== null && Number.isFinite(Number(at))) current.tools.jump(Number(at));
  } catch (error) {
    showError({ code: "network", message: `The server could not be reached (${error.message || error}).`, hint: "Check the connection, then press Read again." });
  } finally {
    say("busy", "");
  }
}

function showVideo(input, view) {
  selection = null;
  const tools = renderTranscript($("transcript"), view, { idPrefix: "v", searchLabel: "Search in this video" });
  current = { input, view, tools };
  // The facts and the tools go under the video's title, moved out of the page's own markup.
  $("transcript").querySelector(".v2c-header").append(factsNode, toolsNode);
  const transcriptOrigin = ORIGINS[view.origin] || view.origin || "unknown";
  const tokens = Number(view.totalTokens || 0).toLocaleString("en");
  say("video-facts", `Transcript from ${transcriptOrigin}${view.language ? ` (${view.language})` : ""} · about ${tokens} tokens`);
  const scope = $("excerpt-scope");
  scope.replaceChildren(el("option", { value: "selection" }, "The selected text"));
  (view.chapters || []).forEach((chapter, index) => {
    scope.append(el("option", { value: String(index) }, `${view.sections === "time" ? "Section" : "Chapter"} [${stamp(chapter.startSec)}] ${chapter.title || ""}`));
  });
  say("copy-status", "");
  showDownloads();
  $("reader").hidden = false;
  const address = new URL(location.href);
  address.search = new URLSearchParams({ v: input }).toString();
  history.replaceState(null, "", address.pathname + address.search);
}

// --- citing -----------------------------------------------------------------------------------

function markdownLabel(text) {
  return String(text).replace(/[\\[\]*_`<>]/g, "\\$&").replace(/\s+/g, " ").trim();
}

function cite(seconds) {
  const href = momentLink(current.view.link, seconds);
  return href ? `[${stamp(seconds)}](${href})` : `[${stamp(seconds)}]`;
}

/** The cited Markdown excerpt of segments `first`..`last`; `quote` replaces their text. */
function excerpt(first, last, quote = null) {
  const { view } = current;
  const segments = view.segments.slice(first, last + 1);
  const line = (seconds, text) => `> ${cite(seconds)} ${markdownLabel(text)}`.trimEnd();
  const lines = quote !== null ? [line(segments[0].startSec, quote)] : segments.map((s) => line(s.startSec, s.text));
  const meta = view.metadata || {};
  const end = segments[segments.length - 1].endSec;
  const title = markdownLabel(meta.title || "Untitled video");
  const video = momentLink(view.link, segments[0].startSec);
  const source = [video ? `[${title}](${video})` : title, meta.channel ? markdownLabel(meta.channel) : null, `${stamp(segments[0].startSec)}–${stamp(end)}`];
  return `${lines.join("\n")}\n>\n> — ${source.filter(Boolean).join(", ")}\n`;
}

function segmentIndex(node) {
  const element = node && (node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement);
  const item = element && element.closest(".v2c-segments > li");
  return item ? Array.prototype.indexOf.call(item.parentElement.children, item) : -1;
}

function noteSelection() {
  if (!current) return;
  const picked = document.getSelection();
  if (!picked || picked.isCollapsed || !picked.rangeCount) return;
  const range = picked.getRangeAt(0);
  let first = segmentIndex(range.startContainer);
  let last = segmentIndex(range.endContainer);
  if (first < 0 || last < 0) return;
  if (first > last) [first, last] = [last, first];
  const text = picked.toString().trim();
  if (!text) return;
  const segments = current.view.segments;
  selection = { videoId: current.view.id, startSec: segments[first].startSec, endSec: segments[last].endSec, text, first, last };
}

function chapterRange(index) {
  const { chapters, segments } = current.view;
  const chapter = chapters[index];
  const next = chapters[index + 1];
  const end = next ? next.startSec : Infinity;
  const inside = segments.map((s, i) => [s, i]).filter(([s]) => s.startSec >= chapter.startSec && s.startSec < end);
  return inside.length ? [inside[0][1], inside[inside.length - 1][1]] : null;
}

async function copyExcerpt() {
  if (!current || !current.view.segments.length) return;
  const scope = $("excerpt-scope").value;
  let text = null;
  if (scope === "selection") {
    if (!selection || selection.videoId !== current.view.id) {
      say("copy-status", "Select some of the transcript first, or choose a chapter.");
      return;
    }
    const single = selection.first === selection.last;
    text = excerpt(selection.first, selection.last, single ? selection.text : null);
  } else {
    const range = chapterRange(Number(scope));
    if (!range) {
      say("copy-status", "That chapter has no transcript lines.");
      return;
    }
    text = excerpt(range[0], range[1]);
  }
  try {
    await navigator.clipboard.writeText(text);
    say("copy-status", "Copied the cited excerpt as Markdown.");
  } catch (error) {
    say("copy-status", `The browser refused the clipboard (${error.message || error}).`);
  }
}

// --- downloads --------------------------------------------------------------------------------

function fileStem() {
  const title = String((current.view.metadata && current.view.metadata.title) || current.view.id || "video");
  return title.replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-+|-+$/g, "").slice(0, 80) || "video";
}

async function download(path, name) {
  say("copy-status", `Preparing ${name}…`);
  const response = await apiFetch(path);
  if (!response.ok) {
    showError(await errorBody(response));
    say("copy-status", "");
    return;
  }
  const url = URL.createObjectURL(await response.blob());
  const link = el("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  say("copy-status", `Downloaded ${name}.`);
}

async function showDownloads() {
  const box = $("downloads");
  if (formats === null) {
    try {
      formats = (await getJson("/api/v1/formats")).formats || [];
    } catch (error) {
      showError(error);
      formats = [];
    }
  }
  const url = encodeURIComponent(current.input);
  const buttons = formats.map((format) => {
    const button = el("button", { type: "button", "data-format": format.id, title: format.description || "" }, `Download ${String(format.id).toUpperCase()}`);
    button.addEventListener("click", () => download(`/api/v1/transcript?url=${url}&format=${encodeURIComponent(format.id)}`, `${fileStem()}.${format.extension || "txt"}`));
    return button;
  });
  const bundle = el("button", { type: "button", "data-format": "bundle" }, "Download bundle (zip)");
  bundle.addEventListener("click", () => download(`/api/v1/bundle?url=${url}`, `${fileStem()}.zip`));
  box.replaceChildren(...buttons, bundle);
}

// --- the library ------------------------------------------------------------------------------

function openButton(label, input, at = null) {
  const button = el("button", { type: "button", class: "app-link" }, label);
  button.addEventListener("click", () => openVideo(input, at).then(() => $("reader").scrollIntoView({ block: "start" })));
  return button;
}

async function loadLibrary() {
  try {
    const [saved, listed] = await Promise.all([getJson("/api/v1/library?limit=50"), getJson("/api/v1/collections")]);
    $("saved").replaceChildren(
      ...(saved.items || []).map((video) => {
        const item = el("li");
        item.append(openButton(video.title || video.id, video.id));
        const facts = [video.channel, video.durationSec ? stamp(video.durationSec) : null].filter(Boolean);
        if (facts.length) item.append(el("span", { class: "app-muted" }, ` ${facts.join(" · ")}`));
        return item;
      }),
    );
    if (!(saved.items || []).length) $("saved").replaceChildren(el("li", { class: "app-muted" }, "Nothing saved yet: every video you read is saved here."));
    const collections = listed.collections || [];
    $("collections").replaceChildren(...collections.map((c) => el("li", {}, `${c.name}${c.videoCount !== undefined ? ` (${c.videoCount} videos)` : ""}`)));
    const scope = $("library-scope");
    const chosen = scope.value;
    scope.replaceChildren(el("option", { value: "" }, "All saved videos"), ...collections.map((c) => el("option", { value: c.id }, c.name)));
    scope.value = collections.some((c) => c.id === chosen) ? chosen : "";
  } catch (error) {
    if (error && error.code !== "unauthorized") showError(error);
  }
}

/** `**bold**` snippet text as text nodes with <mark>s. */
function snippetNode(snippet) {
  const node = el("span", { class: "app-snippet" });
  String(snippet || "").split("**").forEach((part, index) => node.append(index % 2 ? el("mark", {}, part) : document.createTextNode(part)));
  return node;
}

async function searchLibrary(query) {
  const wanted = String(query || "").trim();
  $("hits").replaceChildren();
  if (!wanted) {
    say("search-status", "Type what to look for.");
    return;
  }
  const params = new URLSearchParams({ q: wanted.slice(0, 500), limit: "20" });
  if ($("library-scope").value) params.set("collectionId", $("library-scope").value);
  say("search-status", "Searching…");
  try {
    const found = await getJson(`/api/v1/search?${params}`);
    const hits = found.hits || [];
    const meta = found.meta || {};
    const note = meta.vector && meta.vector !== "ok" ? ` (keyword search only: ${meta.vectorReason || meta.vector})` : "";
    say("search-status", `${hits.length} ${hits.length === 1 ? "hit" : "hits"}${note}`);
    $("hits").replaceChildren(
      ...hits.map((hit) => {
        const item = el("li", { class: "app-hit" });
        const head = el("p", { class: "app-hit-head" });
        const href = safeHref(hit.url);
        head.append(href ? el("a", { href, target: "_blank", rel: "noopener noreferrer", class: "v2c-stamp" }, `[${stamp(hit.startSec)}]`) : el("span", { class: "v2c-stamp" }, `[${stamp(hit.startSec)}]`), " ");
        head.append(openButton(hit.title || hit.videoId, hit.videoId, hit.startSec));
        if (hit.chapterTitle) head.append(el("span", { class: "app-muted" }, ` · ${hit.chapterTitle}`));
        item.append(head, snippetNode(hit.snippet || hit.text));
        return item;
      }),
    );
  } catch (error) {
    say("search-status", "");
    showError(error);
  }
}

// --- collections and their jobs ---------------------------------------------------------------

async function followJob(job) {
  $("job").hidden = false;
  $("job-items").replaceChildren();
  const bar = $("job-progress");
  let total = 0;
  say("job-status", "Queued…");
  const response = await apiFetch(`/api/v1/jobs/${encodeURIComponent(job.id)}/events`, { headers: { Accept: "text/event-stream" } });
  if (!response.ok) throw await errorBody(response);
  const over = new AbortController(); // the stream ends with done or error
  const onEvent = (event, data) => {
    if (over.signal.aborted) return;
    if (event === "progress") {
      total = Math.max(total, Number(data.total) || 0);
      bar.max = Math.max(1, total);
      bar.value = Number(data.done) || 0;
      say("job-status", `${data.done} of ${data.total ?? "?"} videos${data.message ? `: ${data.message}` : ""}`);
    } else if (event === "item") {
      const line = data.outcome === "ok" ? `Added ${data.title || data.id}` : `${data.outcome === "skipped" ? "Skipped" : "Failed"} ${data.title || data.id}${data.error ? `: ${data.error.message}` : ""}`;
      $("job-items").append(el("li", { class: `app-item-${data.outcome}` }, line));
      total = Math.max(total, $("job-items").children.length);
    } else if (event === "done") {
      const summary = (data.result && data.result.summary) || {};
      bar.max = Math.max(1, total);
      bar.value = bar.max;
      say("job-status", `Done: ${(summary.added || []).length} added, ${(summary.failed || []).length} failed.`);
      over.abort();
    } else if (event === "error") {
      say("job-status", "The job failed.");
      showError(data);
      over.abort();
    }
  };
  await readEvents(response, onEvent, over.signal);
  await loadLibrary();
}

async function createCollection(name, source, limit) {
  clearNotice();
  retry = () => createCollection(name, source, limit);
  try {
    const made = await apiFetch("/api/v1/collections", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name, sources: [source] }),
    });
    if (!made.ok) throw await errorBody(made);
    const collection = await made.json();
    const queued = await apiFetch(`/api/v1/collections/${encodeURIComponent(collection.id)}/refresh`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ limit }),
    });
    if (!queued.ok) throw await errorBody(queued);
    await loadLibrary();
    await followJob(await queued.json());
  } catch (error) {
    showError(error);
  }
}

// --- the modules of Upload and Ask ------------------------------------------------------------

const ctx = {
  apiFetch,
  /** The headers apiFetch adds, for XMLHttpRequest's upload progress (fetch reports none). */
  apiHeaders: () => {
    const key = storedKey();
    return key ? { Authorization: `Bearer ${key}` } : {};
  },
  openVideo: (idOrUrl) => {
    openVideo(idOrUrl);
  },
  scope: () => ({
    videos: current ? [current.view.id] : [],
    collection: $("library-scope").value || null,
    selection: selection && current && selection.videoId === current.view.id ? { videoId: selection.videoId, startSec: selection.startSec, endSec: selection.endSec } : null,
  }),
  momentUrl: (videoId, sec) => `/app?${new URLSearchParams({ v: String(videoId), t: String(Math.max(0, Math.floor(Number(sec) || 0))) })}`,
  showError,
};

async function mountOptional(sectionId, file, name) {
  let loaded = null;
  try {
    loaded = await import(file);
  } catch {
    return; // not served here: its section stays hidden
  }
  if (typeof loaded[name] !== "function") return;
  const section = $(sectionId);
  section.hidden = false;
  loaded[name](section, ctx);
}

// --- start ------------------------------------------------------------------------------------

$("open-form").addEventListener("submit", (event) => {
  event.preventDefault();
  openVideo($("video").value);
});
$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const key = $("api-key").value.trim();
  if (!key) return;
  try {
    sessionStorage.setItem(KEY_ITEM, key);
  } catch {
    say("access-why", "This browser keeps no session storage, so the key cannot be kept for the tab.");
    return;
  }
  $("api-key").value = "";
  $("access").hidden = true;
  clearNotice();
  loadLibrary();
  if (retry) retry();
});
$("copy-excerpt").addEventListener("click", copyExcerpt);
document.addEventListener("selectionchange", noteSelection);
$("library-search").addEventListener("submit", (event) => {
  event.preventDefault();
  searchLibrary($("library-query").value);
});
$("collection-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const limit = Math.min(500, Math.max(1, Math.floor(Number($("collection-limit").value) || 50)));
  createCollection($("collection-name").value.trim(), $("collection-source").value.trim(), limit);
});

mountOptional("upload", "./app_upload.js", "mountUpload");
mountOptional("ask", "./app_ask.js", "mountAsk");
loadLibrary();
const asked = new URLSearchParams(location.search);
if (asked.get("v")) openVideo(asked.get("v"), asked.has("t") ? Number(asked.get("t")) : null);

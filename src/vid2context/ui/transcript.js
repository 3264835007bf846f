/**
 * The transcript component: one video's metadata, chapters and timed segments as a page with
 * chapter jumps, a search box that marks and lists its matches, and [m:ss] stamps that open the
 * video at that moment. Plain DOM, no dependencies and no build step, so the MCP Apps viewer
 * (viewer.js) and the web app load this one module and stay one piece of code.
 *
 * Input is the open_transcript_viewer structuredContent: {metadata, chapters, segments, link},
 * where link is the moment link with "<seconds>" for the whole seconds (null: no link).
 * Every string from the video is untrusted: it goes in as text (textContent, text nodes),
 * never as HTML, and only http(s) links become hrefs.
 */

const SECONDS = "<seconds>";
const MAX_LISTED = 200;

/** "m:ss", or "h:mm:ss" from an hour on, as the text results write their [m:ss]. */
export function stamp(seconds) {
  const total = Math.max(0, Math.floor(Number(seconds) || 0));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** The link that opens the video at `seconds`, or null when there is none or it is not http(s). */
export function momentLink(pattern, seconds) {
  if (typeof pattern !== "string" || !pattern.includes(SECONDS)) return null;
  const href = pattern.split(SECONDS).join(String(Math.max(0, Math.floor(Number(seconds) || 0))));
  try {
    const protocol = new URL(href).protocol;
    return protocol === "https:" || protocol === "http:" ? href : null;
  } catch {
    return null;
  }
}

function el(doc, tag, attrs = {}, text = null) {
  const node = doc.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== null) node.textContent = text;
  return node;
}

function stampNode(doc, link, seconds) {
  const label = `[${stamp(seconds)}]`;
  const href = momentLink(link, seconds);
  if (!href) return el(doc, "span", { class: "v2c-stamp" }, label);
  return el(
    doc,
    "a",
    {
      class: "v2c-stamp",
      href,
      target: "_blank",
      rel: "noopener noreferrer",
      "aria-label": `Open the video at ${stamp(seconds)}`,
    },
    label,
  );
}

/** `text` as text nodes with each match of `pattern` in a <mark>; the number of matches. */
function fillMarked(doc, node, text, pattern) {
  node.replaceChildren();
  let last = 0;
  let count = 0;
  pattern.lastIndex = 0;
  for (let found = pattern.exec(text); found; found = pattern.exec(text)) {
    if (found[0] === "") {
      pattern.lastIndex += 1;
      continue;
    }
    node.append(doc.createTextNode(text.slice(last, found.index)), el(doc, "mark", {}, found[0]));
    last = found.index + found[0].length;
    count += 1;
  }
  node.append(doc.createTextNode(text.slice(last)));
  return count;
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The index of the first segment starting at or after `seconds` (the last one past the end). */
function segmentAt(segments, seconds) {
  let lo = 0;
  let hi = segments.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (Number(segments[mid].startSec) < seconds) lo = mid + 1;
    else hi = mid;
  }
  return Math.min(lo, segments.length - 1);
}

/**
 * Render `view` into `root` (its children are replaced). Returns {search(query), jump(seconds)}:
 * what the search box and the chapter buttons do, for a host page that drives them itself.
 * `options.idPrefix` keeps ids unique when a page holds several transcripts; `options.searchLabel`
 * names the search box (the web app's "Search in this video").
 */
export function renderTranscript(root, view, options = {}) {
  const doc = root.ownerDocument;
  const prefix = options.idPrefix || "v2c";
  const meta = (view && view.metadata) || {};
  const chapters = Array.isArray(view && view.chapters) ? view.chapters : [];
  const segments = Array.isArray(view && view.segments) ? view.segments : [];
  const link = (view && view.link) || null;

  const article = el(doc, "article", { class: "v2c-transcript" });
  const header = el(doc, "header", { class: "v2c-header" });
  header.append(el(doc, "h1", { class: "v2c-title" }, String(meta.title || "Untitled video")));
  const facts = [meta.channel, meta.durationSec ? stamp(meta.durationSec) : null].filter(Boolean);
  const about = el(doc, "p", { class: "v2c-facts" }, facts.map(String).join(" · "));
  const videoHref = momentLink(link, 0);
  if (videoHref) {
    if (facts.length) about.append(doc.createTextNode(" · "));
    about.append(el(doc, "a", { href: videoHref, target: "_blank", rel: "noopener noreferrer" }, "Open the video"));
  }
  header.append(about);

  const nav = el(doc, "nav", { class: "v2c-chapters", "aria-labelledby": `${prefix}-chapters-title` });
  nav.append(el(doc, "h2", { id: `${prefix}-chapters-title` }, "Chapters"));
  const chapterList = el(doc, "ol");
  const chapterButtons = chapters.map((chapter) => {
    const button = el(doc, "button", { type: "button", class: "v2c-chapter", "data-start": String(chapter.startSec) });
    button.append(el(doc, "span", { class: "v2c-stamp" }, `[${stamp(chapter.startSec)}]`));
    button.append(doc.createTextNode(" "), el(doc, "span", {}, String(chapter.title || "")));
    button.addEventListener("click", () => {
      chapterButtons.forEach((other) => other.removeAttribute("aria-current"));
      button.setAttribute("aria-current", "true");
      jump(Number(chapter.startSec));
    });
    const item = el(doc, "li");
    item.append(button);
    chapterList.append(item);
    return button;
  });
  nav.append(chapters.length ? chapterList : el(doc, "p", {}, "No chapters."));

  const main = el(doc, "section", { class: "v2c-main", "aria-label": "Transcript" });
  const form = el(doc, "form", { role: "search", class: "v2c-search" });
  form.append(el(doc, "label", { for: `${prefix}-query` }, options.searchLabel || "Search the transcript"));
  const input = el(doc, "input", { id: `${prefix}-query`, type: "search", autocomplete: "off" });
  const status = el(doc, "p", { class: "v2c-status", role: "status", "aria-live": "polite" });
  form.append(input, status);
  form.addEventListener("submit", (event) => event.preventDefault());
  const matches = el(doc, "ol", { class: "v2c-matches", "aria-label": "Matches" });
  matches.hidden = true;

  const list = el(doc, "ol", { class: "v2c-segments" });
  const texts = segments.map((segment, index) => {
    const item = el(doc, "li", { id: `${prefix}-seg-${index}`, tabindex: "-1", "data-start": String(segment.startSec) });
    item.append(stampNode(doc, link, segment.startSec), doc.createTextNode(" "));
    if (segment.speaker) item.append(el(doc, "span", { class: "v2c-speaker" }, `${segment.speaker}: `));
    const text = el(doc, "span", { class: "v2c-text" }, String(segment.text || ""));
    item.append(text);
    list.append(item);
    return text;
  });
  main.append(form, matches, segments.length ? list : el(doc, "p", {}, "This video has no transcript."));

  const body = el(doc, "div", { class: "v2c-body" });
  body.append(nav, main);
  article.append(header, body);
  root.replaceChildren(article);

  function jump(seconds) {
    if (!segments.length) return;
    const item = list.children[segmentAt(segments, seconds)];
    item.scrollIntoView({ block: "start" });
    item.focus({ preventScroll: true });
  }

  let marked = [];
  function search(query) {
    for (const index of marked) texts[index].textContent = String(segments[index].text || "");
    marked = [];
    matches.replaceChildren();
    const wanted = String(query || "").trim();
    matches.hidden = !wanted;
    if (!wanted) {
      status.textContent = "";
      return 0;
    }
    const pattern = new RegExp(escapeRegExp(wanted), "giu");
    let total = 0;
    segments.forEach((segment, index) => {
      const text = String(segment.text || "");
      pattern.lastIndex = 0;
      if (!pattern.test(text)) return;
      total += fillMarked(doc, texts[index], text, pattern);
      marked.push(index);
      if (marked.length > MAX_LISTED) return;
      const button = el(doc, "button", { type: "button", class: "v2c-match" });
      button.append(el(doc, "span", { class: "v2c-stamp" }, `[${stamp(segment.startSec)}]`), doc.createTextNode(" "));
      const snippet = el(doc, "span");
      fillMarked(doc, snippet, text, pattern);
      button.append(snippet);
      button.addEventListener("click", () => jump(Number(segment.startSec)));
      const item = el(doc, "li");
      item.append(button);
      matches.append(item);
    });
    const where = marked.length === 1 ? "1 segment" : `${marked.length} segments`;
    const more = marked.length > MAX_LISTED ? `; the first ${MAX_LISTED} are listed` : "";
    status.textContent = total ? `${total} ${total === 1 ? "match" : "matches"} in ${where}${more}` : "No matches";
    return total;
  }
  input.addEventListener("input", () => search(input.value));

  return { search, jump };
}

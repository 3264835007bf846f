/**
 * The web app's Ask part: a question over what the page shows (ctx.scope(): the open video, a
 * selection in it, or a collection), answered by POST /api/v1/chat and read as it streams (meta,
 * reasoning*, delta+, then done or error).
 *
 * It shows itself only when the server has a language-model rung set up: GET /api/v1/health lists
 * providers of kind "llm" with `enabled`. While the answer streams it is plain text; at `done` its
 * [n] become links to the moments the checked citations name (ctx.momentUrl). A number the model
 * cited that matches no source is removed by the server and listed in `done.unverified`: it is
 * shown as plain text with a marker, never as a link. /chat takes no time range, so a selection
 * is asked about as its video, with the range named in the question. Every text from the server
 * or a video goes in as text, never HTML.
 */

import { errorBody, readEvents } from "./app_sse.js";
import { stamp } from "./transcript.js";

const CITE = /\[(\d{1,4}(?:, ?\d{1,4})*)\]/g;

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== null) node.textContent = text;
  return node;
}

/** Whether the server answers questions: a language-model rung is enabled in its health. */
export async function askAvailable(ctx) {
  try {
    const response = await ctx.apiFetch("/api/v1/health", {});
    if (!response.ok) return false;
    const health = await response.json();
    return (health.providers || []).some((p) => p.kind === "llm" && p.enabled);
  } catch {
    return false;
  }
}

/** A moment link only when it is http(s) (or same-origin relative): anything else stays text. */
function safeHref(href) {
  try {
    const protocol = new URL(href, location.href).protocol;
    return protocol === "https:" || protocol === "http:" ? href : null;
  } catch {
    return null;
  }
}

/** The answer's text with each checked [n] a link to its moment; other numbers stay text. */
function renderAnswer(target, text, citations, ctx) {
  const byNumber = new Map(citations.map((c) => [c.n, c]));
  target.replaceChildren();
  let last = 0;
  for (const match of text.matchAll(CITE)) {
    target.append(document.createTextNode(text.slice(last, match.index)));
    const numbers = match[1].split(",").map((n) => Number(n.trim()));
    target.append("[");
    numbers.forEach((n, index) => {
      if (index) target.append(", ");
      const citation = byNumber.get(n);
      const href = citation ? safeHref(ctx.momentUrl(citation.videoId, citation.startSec)) : null;
      if (!href) {
        target.append(String(n));
        return;
      }
      const link = el("a", { href, class: "v2c-cite", target: "_blank", rel: "noopener noreferrer" }, String(n));
      link.setAttribute("aria-label", `Source ${n}: ${citation.title || citation.videoId} at ${stamp(citation.startSec)}`);
      target.append(link);
    });
    target.append("]");
    last = match.index + match[0].length;
  }
  target.append(document.createTextNode(text.slice(last)));
}

function scopeOf(ctx) {
  const scope = ctx.scope() || {};
  const selection = scope.selection || null;
  const videos = selection ? [selection.videoId] : (scope.videos || []).filter(Boolean);
  const collection = scope.collection || null;
  let label = "";
  if (selection) label = `the part from ${stamp(selection.startSec)} to ${stamp(selection.endSec)} of ${selection.videoId}`;
  else if (videos.length && collection) label = `${videos.length} video(s) and collection ${collection}`;
  else if (videos.length) label = videos.length === 1 ? videos[0] : `${videos.length} videos`;
  else if (collection) label = `collection ${collection}`;
  return { videos, collection, selection, label, key: JSON.stringify([videos, collection, selection]) };
}

/** Mount the Ask part into `root` (a <section> with its heading); resolves to whether it shows. */
export function mountAsk(root, ctx) {
  root.hidden = true;
  root.classList.add("v2c-ask");
  const id = `v2c-ask-${Math.random().toString(36).slice(2, 8)}`;
  const form = el("form", { class: "v2c-ask-form" });
  const label = el("label", { for: `${id}-q` }, "Question");
  const question = el("textarea", { id: `${id}-q`, rows: "3", maxlength: "4000", required: "" });
  const over = el("p", { class: "v2c-scope", id: `${id}-scope` });
  question.setAttribute("aria-describedby", over.id);
  const askButton = el("button", { type: "submit" }, "Ask");
  const stop = el("button", { type: "button", class: "v2c-stop" }, "Stop");
  stop.disabled = true;
  const buttons = el("div", { class: "v2c-buttons" });
  buttons.append(askButton, stop);
  form.append(label, question, over, buttons);
  const status = el("p", { class: "v2c-status", role: "status", "aria-live": "polite" });
  const answer = el("div", { class: "v2c-answer", "aria-live": "polite" });
  const unverified = el("p", { class: "v2c-unverified-note" });
  unverified.hidden = true;
  const sourcesHeading = el("h3", {}, "Sources");
  const sources = el("ol", { class: "v2c-sources" });
  sourcesHeading.hidden = sources.hidden = true;
  root.append(form, status, answer, unverified, sourcesHeading, sources);

  let history = [];
  let historyKey = null;
  let running = null;

  const showScope = () => {
    const scope = scopeOf(ctx);
    over.textContent = scope.label ? `Asked over ${scope.label}.` : "Open a video or a collection to ask about it.";
  };
  question.addEventListener("focus", showScope);
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });

  function showSources(citations) {
    sources.replaceChildren();
    for (const c of citations) {
      const item = el("li", { value: String(c.n) });
      const href = safeHref(ctx.momentUrl(c.videoId, c.startSec));
      const where = `[${stamp(c.startSec)}] ${c.title || c.videoId}`;
      item.append(href ? el("a", { href, target: "_blank", rel: "noopener noreferrer" }, where) : where);
      if (c.quote) item.append(el("q", {}, c.quote));
      sources.append(item);
    }
    sourcesHeading.hidden = sources.hidden = !citations.length;
  }

  function showUnverified(numbers) {
    unverified.replaceChildren();
    unverified.hidden = !numbers.length;
    if (!numbers.length) return;
    unverified.append(el("span", { class: "v2c-unverified", "aria-hidden": "true" }, "⚠"), " Unverified: ");
    numbers.forEach((n, index) => {
      if (index) unverified.append(", ");
      unverified.append(el("span", { class: "v2c-unverified" }, `[${n}]`));
    });
    unverified.append(numbers.length === 1 ? " matched no source and was removed from the answer." : " matched no source and were removed from the answer.");
  }

  async function ask(text) {
    const scope = scopeOf(ctx);
    if (!scope.videos.length && !scope.collection) {
      ctx.showError({
        code: "bad-request",
        message: "There is nothing to ask about yet.",
        hint: "Open a video (or a collection) first, then ask your question.",
      });
      return;
    }
    if (scope.key !== historyKey) {
      history = [];
      historyKey = scope.key;
    }
    const asked = scope.selection
      ? `${text}\n\n(About the part from ${stamp(scope.selection.startSec)} to ${stamp(scope.selection.endSec)}.)`
      : text;
    const context = {};
    if (scope.videos.length) context.inputs = scope.videos;
    if (scope.collection) context.collectionId = scope.collection;
    const control = new AbortController();
    running = control;
    askButton.disabled = true;
    stop.disabled = false;
    answer.replaceChildren();
    answer.setAttribute("aria-busy", "true");
    showSources([]);
    showUnverified([]);
    status.textContent = `Asking over ${scope.label}…`;
    let streamed = "";
    let finished = null;
    try {
      const response = await ctx.apiFetch("/api/v1/chat", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ messages: [...history, { role: "user", content: asked }], context }),
        signal: control.signal,
      });
      if (!response.ok) {
        ctx.showError(await errorBody(response));
        status.textContent = "";
        return;
      }
      await readEvents(
        response,
        (name, data) => {
          if (name === "meta") status.textContent = `Answering with ${data.model || data.rung} from ${data.sources?.length ?? 0} passages…`;
          else if (name === "delta") {
            streamed += data.text || "";
            answer.textContent = streamed;
          } else if (name === "done") finished = data;
          else if (name === "error") {
            ctx.showError(data);
            status.textContent = "The answer failed.";
          }
        },
        control.signal,
      );
      if (control.signal.aborted) status.textContent = "Stopped.";
      else if (finished) {
        renderAnswer(answer, finished.text, finished.citations || [], ctx);
        showSources(finished.citations || []);
        showUnverified(finished.unverified || []);
        status.textContent = `Answered by ${finished.model || finished.rung}.`;
        history = [...history, { role: "user", content: asked }, { role: "assistant", content: finished.text }];
      }
    } catch (error) {
      if (error?.name === "AbortError" || control.signal.aborted) {
        status.textContent = "Stopped.";
      } else {
        ctx.showError({ code: "internal", message: "The answer could not be read.", hint: "Check the connection and ask again." });
        status.textContent = "";
      }
    } finally {
      running = null;
      answer.removeAttribute("aria-busy");
      askButton.disabled = false;
      stop.disabled = true;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (text && !running) ask(text);
  });
  stop.addEventListener("click", () => {
    running?.abort();
    question.focus();
  });

  const ready = askAvailable(ctx).then((available) => {
    root.hidden = !available;
    if (available) showScope();
    return available;
  });
  return { ready };
}

/**
 * The MCP Apps glue (SEP-1865, spec 2026-01-26) around the transcript component: this page runs
 * in the host's sandboxed iframe and speaks JSON-RPC 2.0 with the host over postMessage. It sends
 * ui/initialize, then ui/notifications/initialized; the host answers the tool call's result in
 * ui/notifications/tool-result, whose structuredContent is what renderTranscript takes. Links go
 * through ui/open-link when the host offers it (an iframe may not navigate), and the host's theme
 * variables (hostContext.styles.variables, at start and on host-context-changed) become CSS
 * custom properties, which transcript.css reads. Nothing else: the page asks the server for
 * nothing, so it needs no network access.
 */
import { renderTranscript } from "./transcript.js";

const PROTOCOL_VERSION = "2026-01-26";
const root = document.getElementById("viewer");
const pending = new Map();
let nextId = 1;
let opensLinks = false;

function send(message) {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}

function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function say(text) {
  const note = document.createElement("p");
  note.className = "v2c-message";
  note.textContent = text;
  root.replaceChildren(note);
}

function applyHostContext(context) {
  const variables = (context && context.styles && context.styles.variables) || {};
  for (const [name, value] of Object.entries(variables)) {
    if (name.startsWith("--") && typeof value === "string") document.documentElement.style.setProperty(name, value);
  }
  if (context && (context.theme === "light" || context.theme === "dark")) {
    document.documentElement.style.colorScheme = context.theme;
  }
}

function show(result) {
  const view = result && result.structuredContent;
  if (view && Array.isArray(view.segments)) {
    renderTranscript(root, view);
  } else if (view && view.status === "processing") {
    say(`Still fetching the transcript (${view.message || view.stage}). Ask for the viewer again in a moment.`);
  } else {
    const text = result && Array.isArray(result.content) && result.content[0] && result.content[0].text;
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    say(body && body.message ? `${body.message} ${body.hint || ""}`.trim() : "The tool gave no transcript.");
  }
  const { width, height } = document.documentElement.getBoundingClientRect();
  send({ method: "ui/notifications/size-changed", params: { width, height } });
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.method === undefined && pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) reject(message.error);
    else resolve(message.result);
  } else if (message.method === "ui/notifications/tool-result") {
    show(message.params);
  } else if (message.method === "ui/notifications/host-context-changed") {
    applyHostContext(message.params);
  } else if (message.id !== undefined && (message.method === "ping" || message.method === "ui/resource-teardown")) {
    send({ id: message.id, result: {} });
  }
});

root.addEventListener("click", (event) => {
  const anchor = event.target instanceof Element ? event.target.closest("a[href]") : null;
  if (!anchor || !opensLinks) return;
  event.preventDefault();
  request("ui/open-link", { url: anchor.href }).catch(() => window.open(anchor.href, "_blank", "noopener"));
});

request("ui/initialize", {
  appInfo: { name: "vid2context transcript viewer", version: "1" },
  appCapabilities: {},
  protocolVersion: PROTOCOL_VERSION,
}).then((answer) => {
  opensLinks = Boolean(answer && answer.hostCapabilities && answer.hostCapabilities.openLinks);
  applyHostContext(answer && answer.hostContext);
  send({ method: "ui/notifications/initialized", params: {} });
});

/**
 * Server-sent events read from a fetch Response, for the web app's Ask (POST /chat) and Upload
 * (GET /jobs/{id}/events) parts. EventSource cannot send the API key header nor a POST body, so
 * the stream is read with the Response's reader and cut into events here, as the SSE spec does:
 * blocks end at a blank line, `event:` names one, `data:` lines join with "\n", comment lines
 * (": keep-alive", ": heartbeat") are skipped. Each event's data is one line of JSON on our routes.
 * errorBody reads a failed response's error, here because every part that reads a stream reads
 * errors too (app.js imports it as well).
 */

/**
 * Call onEvent(name, data) for every event of `response`'s body until it ends or `signal` aborts.
 * Data that is not JSON is passed as its text. Resolves when the stream is over.
 */
export async function readEvents(response, onEvent, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const abort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", abort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end = buffer.indexOf("\n\n");
      while (end !== -1) {
        dispatch(buffer.slice(0, end), onEvent);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
      }
    }
    if (buffer.trim()) dispatch(buffer, onEvent);
  } finally {
    signal?.removeEventListener("abort", abort);
  }
}

function dispatch(block, onEvent) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return;
  const text = data.join("\n");
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: hand over the text
  }
  onEvent(name, parsed);
}

/**
 * The contract's error {code, message, hint} from a failed Response (or a stand-in): the one
 * reader of error bodies for every part of the page. The body is {error: {...}}, or the error
 * itself; one that is neither (a proxy's HTML page, an empty body) still gives a readable message
 * with the HTTP status and a next step.
 */
export async function errorBody(response) {
  try {
    const body = await response.json();
    const error = body && typeof body === "object" ? (typeof body.error === "object" && body.error) || body : null;
    if (error && typeof error.message === "string" && error.message) return error;
  } catch {
    // not JSON: described below
  }
  return {
    code: response.status === 413 ? "too-large" : "internal",
    message: `The server answered ${response.status} ${response.statusText || ""}`.trim() + ".",
    hint: "Try again; if it keeps failing, check the server's log.",
  };
}

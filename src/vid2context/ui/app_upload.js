/**
 * The web app's Upload part: a local file, dropped or chosen, reduced in the browser to compressed
 * mono audio, uploaded (POST /api/v1/uploads) and transcribed (a `context` job, followed over its
 * SSE), then opened with ctx.openVideo("upload:<sha256>").
 *
 * Why reduce here: speech-to-text services take about 25 MB a request and the server's upload cap
 * is 100 MB by default, while a video's soundtrack, decoded and re-encoded as 32 kbit/s mono Opus,
 * is about 14 MB an hour. Where the browser has WebCodecs' AudioEncoder with Opus (it needs a secure
 * context: https, or http on localhost), the file is decoded with decodeAudioData at 16 kHz (what
 * Whisper listens at), mixed to mono, encoded, and framed as an Ogg Opus file (app_ogg.js). Where
 * it has not, where decoding fails, where the file is over REDUCE_MAX_BYTES or its length over
 * REDUCE_MAX_SEC (decoding holds the whole soundtrack as 32-bit samples), or when the reduced file
 * would not be smaller, the file is uploaded as it is and the server's ffmpeg does the work.
 *
 * Upload progress comes from XMLHttpRequest's upload events when the page's ctx offers
 * apiHeaders() (the headers its apiFetch adds); otherwise the upload goes through ctx.apiFetch and
 * the bar shows no fraction (fetch reports none over HTTP/1.1). Filenames and every server text go
 * in as text, never HTML.
 */

import { GRANULE_RATE, muxOggOpus } from "./app_ogg.js";
import { errorBody, readEvents } from "./app_sse.js";

export const REDUCE_RATE = 16000;
export const REDUCE_BITRATE = 32000;
/** Larger files are uploaded as they are: the browser would hold the file and its decoded sound at once. */
export const REDUCE_MAX_BYTES = 1024 * 1024 * 1024;
/** Longer media are uploaded as they are: decoding 90 minutes of 48 kHz stereo holds about 2 GB. */
export const REDUCE_MAX_SEC = 90 * 60;
const MEDIA_EXTENSIONS = new Set([
  "mp4", "m4v", "mov", "webm", "mkv", "avi", "mpeg", "mpg", "ogv", "3gp",
  "mp3", "m4a", "aac", "wav", "flac", "ogg", "oga", "opus", "weba",
]);
const PIECE = REDUCE_RATE / 2;

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== null) node.textContent = text;
  return node;
}

function size(bytes) {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} kB`;
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

function extension(name) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
}

function stem(name) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(0, dot) : name;
}

/** Whether `file` says it is audio or video, by its type or, when that is empty, its extension. */
export function isMedia(file) {
  const type = (file.type || "").toLowerCase();
  if (type.startsWith("audio/") || type.startsWith("video/")) return true;
  return (!type || type === "application/octet-stream") && MEDIA_EXTENSIONS.has(extension(file.name));
}

/** Whether this browser can encode Opus with WebCodecs at our settings. */
export async function canReduce() {
  if (typeof AudioEncoder === "undefined" || typeof AudioData === "undefined") return false;
  if (typeof OfflineAudioContext === "undefined") return false;
  try {
    const { supported } = await AudioEncoder.isConfigSupported(encoderConfig());
    return Boolean(supported);
  } catch {
    return false;
  }
}

function encoderConfig() {
  return { codec: "opus", sampleRate: REDUCE_RATE, numberOfChannels: 1, bitrate: REDUCE_BITRATE };
}

/** The media's length in seconds from its metadata, or null when the browser cannot tell. */
function mediaSeconds(file) {
  return new Promise((resolve) => {
    const media = document.createElement(file.type.startsWith("audio/") ? "audio" : "video");
    const url = URL.createObjectURL(file);
    const finish = (value) => {
      clearTimeout(timer);
      media.removeAttribute("src");
      URL.revokeObjectURL(url);
      resolve(Number.isFinite(value) ? value : null);
    };
    const timer = setTimeout(() => finish(null), 10000);
    media.preload = "metadata";
    media.onloadedmetadata = () => finish(media.duration);
    media.onerror = () => finish(null);
    media.src = url;
  });
}

function mono(buffer) {
  if (buffer.numberOfChannels === 1) return buffer.getChannelData(0);
  const out = new Float32Array(buffer.length);
  for (let c = 0; c < buffer.numberOfChannels; c++) {
    const channel = buffer.getChannelData(c);
    for (let i = 0; i < out.length; i++) out[i] += channel[i];
  }
  const scale = 1 / buffer.numberOfChannels;
  for (let i = 0; i < out.length; i++) out[i] *= scale;
  return out;
}

/**
 * `file` as an Ogg Opus Blob of its sound, mono at 16 kHz and 32 kbit/s; onProgress(fraction).
 * Throws when the browser cannot decode the file or the encoder fails, and AbortError when `signal`
 * aborts.
 */
export async function reduceToOpus(file, onProgress = () => {}, signal = null) {
  const decoding = new OfflineAudioContext(1, 1, REDUCE_RATE);
  const decoded = await decoding.decodeAudioData(await file.arrayBuffer());
  const pcm = mono(decoded);
  const packets = [];
  let head = null;
  let failure = null;
  const encoder = new AudioEncoder({
    output(chunk, metadata) {
      const data = new Uint8Array(chunk.byteLength);
      chunk.copyTo(data);
      const micros = chunk.duration ?? 20000;
      packets.push({ data, samples: Math.round((micros * GRANULE_RATE) / 1e6) });
      const description = metadata?.decoderConfig?.description;
      if (description && !head) {
        head = ArrayBuffer.isView(description)
          ? new Uint8Array(description.buffer, description.byteOffset, description.byteLength).slice()
          : new Uint8Array(description).slice();
      }
    },
    error(error) {
      failure = error;
    },
  });
  encoder.configure(encoderConfig());
  for (let at = 0; at < pcm.length && !failure; at += PIECE) {
    if (signal?.aborted) failure = new DOMException("Canceled.", "AbortError");
    if (failure) break;
    const piece = pcm.subarray(at, at + PIECE);
    const data = new AudioData({
      format: "f32-planar",
      sampleRate: REDUCE_RATE,
      numberOfFrames: piece.length,
      numberOfChannels: 1,
      timestamp: Math.round((at * 1e6) / REDUCE_RATE),
      data: piece,
    });
    encoder.encode(data);
    data.close();
    if (encoder.encodeQueueSize > 16) {
      await new Promise((resolve) => encoder.addEventListener("dequeue", resolve, { once: true }));
    }
    onProgress(Math.min(1, (at + PIECE) / pcm.length));
  }
  if (!failure) await encoder.flush().catch((error) => (failure = error));
  if (encoder.state !== "closed") encoder.close();
  if (failure) throw failure;
  if (!packets.length) throw new Error("the file has no sound to encode");
  const totalSamples = Math.round((pcm.length * GRANULE_RATE) / REDUCE_RATE);
  return muxOggOpus(packets, { channels: 1, inputRate: REDUCE_RATE, head, totalSamples });
}

/** POST /api/v1/uploads with XMLHttpRequest, for its upload progress events. */
function sendWithProgress(form, headers, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/uploads");
    xhr.withCredentials = true;
    for (const [name, value] of Object.entries(headers || {})) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : null);
    xhr.onload = () =>
      resolve(new Response(xhr.status === 204 ? null : xhr.responseText, {
        status: xhr.status,
        statusText: xhr.statusText,
        headers: { "content-type": xhr.getResponseHeader("content-type") || "application/json" },
      }));
    xhr.onerror = () => reject(new TypeError("The upload could not reach the server."));
    xhr.onabort = () => reject(new DOMException("The upload was canceled.", "AbortError"));
    signal.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}

/** Mount the Upload part into `root` (a <section> with its heading); see the module comment. */
export function mountUpload(root, ctx) {
  const id = `v2c-up-${Math.random().toString(36).slice(2, 8)}`;
  const zone = el("div", { class: "v2c-drop" });
  zone.append(el("p", {}, "Drop a video or audio file here, or choose one."));
  const label = el("label", { for: `${id}-file` }, "Video or audio file");
  const input = el("input", { id: `${id}-file`, type: "file", accept: "video/*,audio/*" });
  const reduceBox = el("input", { id: `${id}-reduce`, type: "checkbox" });
  reduceBox.checked = true;
  const reduceLabel = el("label", { for: `${id}-reduce` }, "Reduce to mono audio in this browser before uploading");
  const cancel = el("button", { type: "button", class: "v2c-cancel" }, "Cancel");
  cancel.hidden = true;
  zone.append(el("div", { class: "v2c-field" }), el("div", { class: "v2c-field v2c-check" }));
  zone.children[1].append(label, input);
  zone.children[2].append(reduceBox, reduceLabel);
  const status = el("p", { class: "v2c-status", role: "status", "aria-live": "polite" });
  const bar = el("progress", { class: "v2c-progress", max: "1", "aria-label": "Progress" });
  bar.hidden = true;
  const summary = el("p", { class: "v2c-summary" });
  root.append(zone, cancel, status, bar, summary);
  root.classList.add("v2c-upload");

  let running = null;
  const say = (text, fraction = undefined) => {
    status.textContent = text;
    if (fraction === undefined) return;
    bar.hidden = fraction === false;
    if (fraction === null) bar.removeAttribute("value");
    else if (fraction !== false) bar.value = fraction;
  };

  async function reduce(file, signal) {
    if (!reduceBox.checked) return { blob: file, why: "reduction turned off" };
    if (!(await canReduce())) return { blob: file, why: "this browser cannot encode Opus (WebCodecs)" };
    if (file.size > REDUCE_MAX_BYTES) return { blob: file, why: `over ${size(REDUCE_MAX_BYTES)}` };
    const seconds = await mediaSeconds(file);
    if (seconds !== null && seconds > REDUCE_MAX_SEC) return { blob: file, why: `longer than ${REDUCE_MAX_SEC / 60} minutes` };
    say(`Reducing ${file.name} to audio in the browser…`, 0);
    try {
      const blob = await reduceToOpus(
        file,
        (fraction) => say(`Reducing ${file.name} to audio in the browser…`, fraction),
        signal,
      );
      if (signal.aborted) throw new DOMException("Canceled.", "AbortError");
      if (blob.size >= file.size) return { blob: file, why: "the audio would not be smaller" };
      return { blob, name: `${stem(file.name)}.opus`, reduced: true };
    } catch (error) {
      if (error?.name === "AbortError") throw error;
      return { blob: file, why: "the browser could not decode it" };
    }
  }

  async function upload(blob, name, signal) {
    const form = new FormData();
    form.append("file", blob, name);
    const total = blob.size;
    const headers = typeof ctx.apiHeaders === "function" ? ctx.apiHeaders() : null;
    if (headers) {
      return sendWithProgress(form, headers, (loaded, of) => say(`Uploading ${size(loaded)} of ${size(of ?? total)}…`, of ? loaded / of : null), signal);
    }
    say(`Uploading ${size(total)}…`, null);
    return ctx.apiFetch("/api/v1/uploads", { method: "POST", body: form, signal });
  }

  async function transcribe(reference, signal) {
    say("Transcribing…", null);
    const submitted = await ctx.apiFetch("/api/v1/jobs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "context", input: reference }),
      signal,
    });
    if (!submitted.ok) throw await errorBody(submitted);
    const job = await submitted.json();
    const events = await ctx.apiFetch(`/api/v1/jobs/${encodeURIComponent(job.id)}/events`, { signal });
    if (!events.ok) throw await errorBody(events);
    let result = null;
    let failure = null;
    await readEvents(
      events,
      (name, data) => {
        if (name === "progress") {
          const fraction = data.total && data.done ? data.done / data.total : null;
          say(`Transcribing: ${data.message || "working"}…`, fraction);
        } else if (name === "done") result = data.result;
        else if (name === "error") failure = data;
      },
      signal,
    );
    if (failure) throw failure;
    if (!result) throw { code: "internal", message: "The transcription stream ended without a result.", hint: "Try the upload again." };
    return result;
  }

  async function handle(file) {
    if (running) return;
    summary.textContent = "";
    if (!isMedia(file)) {
      say("", false);
      ctx.showError({
        code: "bad-request",
        message: `${file.name} is not an audio or video file.`,
        hint: "Choose a video or audio file (mp4, webm, mov, mp3, m4a, wav, ...).",
      });
      return;
    }
    const control = new AbortController();
    running = control;
    cancel.hidden = false;
    input.disabled = true;
    try {
      const reduced = await reduce(file, control.signal);
      const name = reduced.name ?? file.name;
      const uploaded = await upload(reduced.blob, name, control.signal);
      if (!uploaded.ok) throw await errorBody(uploaded);
      const info = await uploaded.json();
      const how = reduced.reduced
        ? `reduced in the browser to ${size(info.bytes)} of mono Opus audio`
        : `uploaded as it is (${reduced.why})`;
      summary.textContent = `${file.name}: ${size(file.size)}, ${how}.`;
      const context = await transcribe(info.input, control.signal);
      say(`Transcribed ${file.name}.`, false);
      ctx.openVideo(context?.id || info.input);
    } catch (error) {
      if (error?.name === "AbortError") say("Canceled.", false);
      else {
        say(`${file.name} could not be read.`, false);
        ctx.showError(error && typeof error.message === "string" && error.code ? error : {
          code: "internal",
          message: error?.message ? String(error.message) : "The upload failed.",
          hint: "Check the connection and try again.",
        });
      }
    } finally {
      running = null;
      cancel.hidden = true;
      input.disabled = false;
      input.value = "";
    }
  }

  input.addEventListener("change", () => input.files?.[0] && handle(input.files[0]));
  cancel.addEventListener("click", () => running?.abort());
  for (const name of ["dragenter", "dragover"]) {
    zone.addEventListener(name, (event) => {
      event.preventDefault();
      zone.classList.add("v2c-over");
    });
  }
  zone.addEventListener("dragleave", () => zone.classList.remove("v2c-over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("v2c-over");
    const file = event.dataTransfer?.files?.[0];
    if (file) handle(file);
  });
  return { handle };
}

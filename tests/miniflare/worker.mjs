// The test worker: exposes the DB (D1), KV and BUCKET (R2) bindings over HTTP JSON so Python tests can
// drive real D1, KV and R2 semantics (Miniflare's workerd) with the call shapes a Python Worker uses.
//
// Every route is POST /<binding>/<op> with a JSON body; the answer is {"value": ...} or, when the
// binding threw, HTTP 500 with {"error": {"name", "message"}} (the Python side raises it again).
// Bytes travel as base64. This file is test infrastructure only: it is never deployed.
//
// D1 limits that Miniflare does not enforce are checked here with the production messages, so a
// backend that would break on Cloudflare breaks in the tests too (see LIMITS).

import { Buffer } from "node:buffer";

const LIMITS = {
  // https://developers.cloudflare.com/d1/platform/limits/
  maxBoundParameters: 100,
  maxStatementBytes: 100_000,
  maxValueBytes: 2_000_000,
};

const encoder = new TextEncoder();

class D1LimitError extends Error {
  constructor(message) {
    super(`D1_ERROR: ${message}`);
    this.name = "Error";
  }
}

function checkLimits(sql, params) {
  const sqlBytes = encoder.encode(sql).length;
  if (sqlBytes > LIMITS.maxStatementBytes) {
    throw new D1LimitError(`statement too long (${sqlBytes} bytes, limit ${LIMITS.maxStatementBytes}): SQLITE_TOOBIG`);
  }
  if (params.length > LIMITS.maxBoundParameters) {
    throw new D1LimitError(
      `too many SQL variables (${params.length}, limit ${LIMITS.maxBoundParameters}): SQLITE_ERROR`,
    );
  }
  for (const value of params) {
    if (typeof value === "string" && encoder.encode(value).length > LIMITS.maxValueBytes) {
      throw new D1LimitError("string or blob too big: SQLITE_TOOBIG");
    }
  }
}

function statement(db, { sql, params = [] }) {
  checkLimits(sql, params);
  const prepared = db.prepare(sql);
  return params.length ? prepared.bind(...params) : prepared;
}

function toBase64(buffer) {
  return Buffer.from(buffer).toString("base64");
}

function fromBase64(text) {
  const bytes = Buffer.from(text, "base64");
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function r2Meta(object) {
  if (object === null) return null;
  return {
    key: object.key,
    size: object.size,
    etag: object.etag,
    uploaded: object.uploaded.toISOString(),
    httpMetadata: object.httpMetadata ?? {},
    customMetadata: object.customMetadata ?? {},
  };
}

const routes = {
  // --- D1 ----------------------------------------------------------------------------------------
  "d1/statement": async (env, body) => {
    const stmt = statement(env.DB, body);
    switch (body.method) {
      case "all":
        return stmt.all();
      case "run":
        return stmt.run();
      case "first":
        return body.column == null ? stmt.first() : stmt.first(body.column);
      case "raw":
        return stmt.raw({ columnNames: Boolean(body.columnNames) });
      default:
        throw new TypeError(`unknown statement method ${body.method}`);
    }
  },
  "d1/batch": async (env, body) => env.DB.batch(body.statements.map((s) => statement(env.DB, s))),
  "d1/exec": async (env, body) => env.DB.exec(body.sql),

  // --- KV ----------------------------------------------------------------------------------------
  "kv/get": async (env, body) => env.KV.get(body.key, body.options ?? {}),
  "kv/getWithMetadata": async (env, body) => env.KV.getWithMetadata(body.key, body.options ?? {}),
  "kv/put": async (env, body) => {
    await env.KV.put(body.key, body.value, body.options ?? {});
    return null;
  },
  "kv/delete": async (env, body) => {
    await env.KV.delete(body.key);
    return null;
  },
  "kv/list": async (env, body) => env.KV.list(body.options ?? {}),

  // --- R2 ----------------------------------------------------------------------------------------
  "r2/put": async (env, body) => {
    const data = body.base64 == null ? body.text : fromBase64(body.base64);
    return r2Meta(await env.BUCKET.put(body.key, data, body.options ?? {}));
  },
  "r2/get": async (env, body) => {
    const object = await env.BUCKET.get(body.key);
    if (object === null) return null;
    return { ...r2Meta(object), base64: toBase64(await object.arrayBuffer()) };
  },
  "r2/head": async (env, body) => r2Meta(await env.BUCKET.head(body.key)),
  "r2/delete": async (env, body) => {
    await env.BUCKET.delete(body.keys);
    return null;
  },
  "r2/list": async (env, body) => {
    const listed = await env.BUCKET.list(body.options ?? {});
    return {
      objects: listed.objects.map(r2Meta),
      truncated: listed.truncated,
      cursor: listed.truncated ? listed.cursor : undefined,
      delimitedPrefixes: listed.delimitedPrefixes,
    };
  },

  // --- Queues ------------------------------------------------------------------------------------
  "queue/send": async (env, body) => {
    await env.JOBS.send(body.body, body.options ?? {});
    return null;
  },
  "queue/sendBatch": async (env, body) => {
    await env.JOBS.sendBatch(body.messages);
    return null;
  },

  // --- harness -----------------------------------------------------------------------------------
  "admin/reset": async (env) => {
    consumer = null;
    await Promise.all([resetD1(env.DB), resetKV(env.KV), resetR2(env.BUCKET)]);
    return null;
  },
  "admin/ping": async () => "pong",
  // Where queue batches and cron events go: the test's Python consumer (tests/queue_bridge.py).
  "admin/consumer": async (env, body) => {
    consumer = body.url ?? null;
    return null;
  },
};

// --- harness reset: forget everything, as a fresh deployment would have nothing ---------------------

async function resetD1(db) {
  const schema = await db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
    .all();
  const isVirtual = (o) => o.type === "table" && /CREATE\s+VIRTUAL/i.test(o.sql ?? "");
  const rank = (o) => (isVirtual(o) ? 0 : { trigger: 1, view: 2, table: 3 }[o.type] ?? 4);
  const drops = schema.results
    .filter((o) => o.type !== "index") // indexes go with their tables
    .sort((a, b) => rank(a) - rank(b))
    .map((o) => db.prepare(`DROP ${o.type.toUpperCase()} IF EXISTS "${o.name}"`));
  // Virtual tables first: dropping one takes its shadow tables, whose own DROP is then a no-op.
  // Foreign keys are checked at the end (as D1 advises for schema changes), when all is gone.
  if (drops.length) await db.batch([db.prepare("PRAGMA defer_foreign_keys = ON"), ...drops]);
}

async function resetKV(kv) {
  let cursor;
  do {
    const page = await kv.list({ cursor });
    await Promise.all(page.keys.map((k) => kv.delete(k.name)));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
}

async function resetR2(bucket) {
  let cursor;
  do {
    const page = await bucket.list({ cursor });
    if (page.objects.length) await bucket.delete(page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}

let consumer = null;

// A batch as the Python Worker's queue() sees it, posted to the consumer, which answers one
// decision per message ({id, ack, delaySeconds}). If the consumer cannot be reached or fails (an
// isolate died), every message is retried, as the runtime does when queue() throws, once the
// test has named the next consumer.
async function forwardBatch(batch) {
  if (consumer === null) {
    batch.retryAll({ delaySeconds: 1 });
    return;
  }
  const messages = batch.messages.map((m) => ({ id: m.id, body: m.body, attempts: m.attempts }));
  let decisions;
  try {
    const response = await fetch(`${consumer}/queue`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queue: batch.queue, messages }),
    });
    if (response.status !== 200) throw new Error(`consumer answered ${response.status}`);
    decisions = (await response.json()).decisions;
  } catch (error) {
    // The isolate died with the batch: its messages are retried (an attempt each). Cloudflare
    // would start another isolate at once; here the test names it, so wait for that first
    // rather than spend the retries on a consumer that is gone.
    console.error(`queue: consumer failed: ${error}`);
    const dead = consumer;
    for (let waited = 0; consumer === dead && waited < 30_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    batch.retryAll();
    return;
  }
  const byId = new Map(decisions.map((d) => [d.id, d]));
  for (const message of batch.messages) {
    const decision = byId.get(message.id);
    if (decision === undefined) message.retry();
    else if (decision.ack) message.ack();
    else message.retry({ delaySeconds: decision.delaySeconds ?? 0 });
  }
}

export default {
  async queue(batch) {
    await forwardBatch(batch);
  },

  async scheduled(controller) {
    if (consumer === null) throw new Error("no consumer for the cron event");
    const response = await fetch(`${consumer}/scheduled`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ cron: controller.cron, scheduledTime: controller.scheduledTime }),
    });
    if (response.status !== 200) throw new Error(`consumer answered ${response.status}`);
  },

  async fetch(request, env) {
    const route = new URL(request.url).pathname.replace(/^\/+/, "");
    const handler = routes[route];
    if (request.method !== "POST" || handler === undefined) {
      return Response.json({ error: { name: "NotFound", message: `no route ${route}` } }, { status: 404 });
    }
    try {
      const body = await request.json();
      const value = await handler(env, body);
      return Response.json({ value: value === undefined ? null : value });
    } catch (error) {
      const message = String(error?.message ?? error);
      const cause = error?.cause?.message;
      return Response.json(
        { error: { name: error?.name ?? "Error", message, cause: cause ?? null } },
        { status: 500 },
      );
    }
  },
};

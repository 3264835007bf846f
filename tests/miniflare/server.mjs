// Starts Miniflare with the D1 (DB), KV and R2 (BUCKET) bindings behind worker.mjs on 127.0.0.1.
//
//   node tests/miniflare/server.mjs [--port N] [--persist DIR]
//
// Prints exactly one line, `READY <port>`, on stdout once requests are answered; logs go to stderr.
// Without --persist every binding lives in memory and vanishes on exit. Stops cleanly on SIGTERM,
// SIGINT or when stdin closes (so a parent that dies never leaves it running).

import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Log, LogLevel, Miniflare } from "miniflare";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    persist: { type: "string" },
  },
});

const persist = values.persist ?? false;

const mf = new Miniflare({
  modules: true,
  scriptPath: fileURLToPath(new URL("./worker.mjs", import.meta.url)),
  compatibilityDate: "2026-04-01",
  compatibilityFlags: ["nodejs_compat"],
  d1Databases: ["DB"],
  kvNamespaces: ["KV"],
  r2Buckets: ["BUCKET"],
  // Real Queues (workerd's): JOBS sends to vid2context-jobs, whose consumer is this worker; after
  // maxRetries a message goes to the dead-letter queue, consumed here too. worker.mjs forwards
  // each batch to the Python consumer the test names (POST /admin/consumer).
  queueProducers: { JOBS: "vid2context-jobs" },
  queueConsumers: {
    "vid2context-jobs": {
      maxBatchSize: 5,
      maxBatchTimeout: 1,
      maxRetries: 3,
      deadLetterQueue: "vid2context-jobs-dlq",
    },
    "vid2context-jobs-dlq": { maxBatchSize: 5, maxBatchTimeout: 1 },
  },
  d1Persist: persist,
  kvPersist: persist,
  r2Persist: persist,
  host: "127.0.0.1",
  port: Number(values.port),
  cf: false, // no download of the Request.cf placeholder (offline)
  log: new Log(LogLevel.WARN),
});

let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  try {
    await mf.dispose();
  } catch (error) {
    console.error(`miniflare: dispose failed: ${error}`);
    code = code || 1;
  }
  process.exit(code);
}

process.on("SIGTERM", () => stop(0));
process.on("SIGINT", () => stop(0));
process.stdin.on("end", () => stop(0));

// Control lines on stdin: `SCHEDULED <count> <cron>` fires <count> overlapping Cron events at the
// worker through Miniflare (as the Cron Trigger would), then prints `SCHEDULED <outcomes>`.
createInterface({ input: process.stdin }).on("line", async (line) => {
  const [command, count, ...cron] = line.trim().split(/\s+/);
  if (command !== "SCHEDULED") return;
  const worker = await mf.getWorker();
  const runs = Array.from({ length: Number(count) || 1 }, () =>
    worker.scheduled({ cron: cron.join(" "), scheduledTime: new Date() }),
  );
  const outcomes = await Promise.allSettled(runs);
  const shown = outcomes.map((o) => (o.status === "fulfilled" ? o.value.outcome : "error")).join(",");
  process.stdout.write(`SCHEDULED ${shown}\n`);
});
process.stdin.on("error", () => stop(0));
process.stdin.resume();

try {
  const url = await mf.ready;
  process.stdout.write(`READY ${url.port}\n`);
} catch (error) {
  console.error(`miniflare: failed to start: ${error?.stack ?? error}`);
  await stop(1);
}

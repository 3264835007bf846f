-- Durable jobs on the Worker (Cloudflare Queues) and the watch-list claims of the scheduler.
--
-- On the Worker a job is a row here, not an asyncio task: each queue message is one unit of it
-- (planning the work, one video, finishing), so any isolate can run the next unit and answer
-- GET /jobs/:id from these rows (`jobs_queued.py`, `storage/cloudflare_queue.py`). The local
-- runtime keeps its in-process queue and leaves these tables empty.
CREATE TABLE queued_jobs (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  input TEXT NOT NULL,                  -- JSON: the checked input
  options TEXT NOT NULL,                -- JSON: the checked options
  status TEXT NOT NULL DEFAULT 'queued',
  progress TEXT,                        -- JSON `JobProgress` of a job run as one unit
  plan TEXT,                            -- JSON: what planning found besides the units
  result TEXT,                          -- JSON
  error TEXT,                           -- JSON `JobError`
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- One row per unit of a planned job; `state` goes from `todo` to `done` or `failed` once, by a
-- conditional update, so a redelivered message finds its unit done and skips it.
CREATE TABLE job_units (
  job_id TEXT NOT NULL,
  unit TEXT NOT NULL,
  payload TEXT NOT NULL DEFAULT '{}',   -- JSON: what the unit works on
  state TEXT NOT NULL DEFAULT 'todo' CHECK (state IN ('todo', 'done', 'failed')),
  result TEXT,                          -- JSON: its item event and what finishing needs
  PRIMARY KEY (job_id, unit)
);

-- The job's numbered events, for the SSE replay from any isolate.
CREATE TABLE job_events (
  job_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  data TEXT NOT NULL,                   -- JSON
  PRIMARY KEY (job_id, seq)
);

-- Which due time of a watched collection has been claimed by a scheduled run: a claim is an
-- upsert that only changes a row whose due time is older (or whose claim went stale), so of two
-- overlapping cron events exactly one sees `changes = 1` and queues the refresh.
CREATE TABLE watch_claims (
  collection_id TEXT PRIMARY KEY,
  due_at TEXT NOT NULL,
  claimed_at TEXT NOT NULL
);

-- MCP long runs on the Worker's queue (`mcp/queued.py`, `storage/cloudflare_runs.py`).
--
-- A tools/call that goes on past its wait is a row here and a message {"run": id} on JOBS:
-- whichever isolate the queue hands the message to calls the same tool again from `tool` and
-- `arguments`, as `caller`, and writes each progress step and the reply here; any isolate answers
-- get_job, or the same call made again, from the row. The local runtime leaves this table empty.
CREATE TABLE mcp_runs (
  id TEXT PRIMARY KEY,
  key TEXT NOT NULL,                    -- digest of [caller, tool, what identifies the call]
  caller TEXT NOT NULL,                 -- digest of the run's owner (`mcp/owner.py`), never a credential
  tool TEXT NOT NULL,
  arguments TEXT NOT NULL,              -- JSON: the call's arguments, as they passed the tool's checks
  meter TEXT,                           -- JSON [account, address]: hosted mode's quotas count the run
  status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
  step TEXT,                            -- JSON {stage, fraction, message, done, total}
  reply TEXT,                           -- JSON CallToolResult: the reply, or the last transient failure
  created_at REAL NOT NULL,             -- seconds since the epoch
  updated_at REAL NOT NULL
);

-- One run going per call: a second identical call attaches to it (the insert finds it taken).
CREATE UNIQUE INDEX mcp_runs_going ON mcp_runs (key) WHERE status IN ('queued', 'running');
CREATE INDEX mcp_runs_by_key ON mcp_runs (key, created_at);

-- Webhooks (`integrations/webhooks.py`): where events are sent, and how delivery has gone.
--
-- `secret` is the signing secret as `integrations/webhook_secrets.py` keeps it: sealed with
-- AES-GCM under VID2CONTEXT_WEBHOOK_KEY when that is set (`v1:`), else as it is (`plain:`);
-- signing needs the secret itself, so it cannot be hashed like an API key. `owner` is the name
-- of the key that created the hook (`open` without keys): each owner sees and counts its own.
-- `failures` counts failed delivery attempts in a row; at the limit `state` becomes `disabled`.
CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,                 -- JSON: the event names subscribed to
  secret TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
  failures INTEGER NOT NULL DEFAULT 0,
  last_delivery_at TEXT,
  last_status INTEGER,                  -- the receiver's HTTP status; NULL when none answered
  last_error TEXT,                      -- why the last attempt failed, in words (never the secret)
  created_at TEXT NOT NULL
);

CREATE INDEX webhooks_owner ON webhooks (owner);

"""Small local stand-ins for the chat platforms' reply APIs, over real HTTP on 127.0.0.1: one server,
each platform under its own path, answering as each documents it.

- **Telegram Bot API** (``VID2CONTEXT_TELEGRAM_ORIGIN=origin``): ``POST /bot<token>/sendMessage``
  with ``chat_id`` and ``text`` (1 to 4,096 characters after entity parsing; more is ``400 Bad
  Request: message is too long``). A wrong token is ``401 {"ok": false, "error_code": 401,
  "description": "Unauthorized"}``; HTML that does not parse is ``400 Bad Request: can't parse
  entities``. A rate limit is ``429`` with ``parameters.retry_after``.
- **Discord** (``VID2CONTEXT_DISCORD_ORIGIN=origin + "/discord"``): ``PATCH
  /discord/webhooks/<application id>/<interaction token>/messages/@original`` with ``content`` (at
  most 2,000 characters: more is ``400 {"code": 50035, "message": "Invalid Form Body"}``); an
  unknown token is ``404 {"code": 10015, "message": "Unknown Webhook"}``. A rate limit is ``429``
  with ``retry_after`` (seconds, a float) and ``Retry-After``.
- **Slack** (``VID2CONTEXT_SLACK_ORIGIN=origin + "/slack"``): ``POST /slack/chat.postMessage``
  with ``Authorization: Bearer <bot token>``; refusals are ``200 {"ok": false, "error":
  "invalid_auth" | "channel_not_found" | "msg_too_long"}`` (over 40,000 characters), a rate limit
  ``429`` with ``Retry-After``. A slash command's ``response_url`` is ``POST
  /hooks/commands/...`` (``VID2CONTEXT_SLACK_HOOKS_ORIGIN=origin + "/hooks"``), answered ``200
  ok``.

``limit_next(n, retry_after)`` answers the next ``n`` replies 429. ``sent`` records every message
taken, as ``(platform, path, body)``; ``wait_for(n)`` waits until that many came.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from .standin_http import QuietHandler, StandinServer, reply

TELEGRAM_TOKEN = "123456:telegram-test-token-abcdefghijklmnop"
SLACK_TOKEN = "xoxb-test-0123456789-slack-bot-token"
DISCORD_TOKEN = "interaction-token-abc123"
DISCORD_APP = "1100000000000000001"


class _Handler(QuietHandler):
    server: FakeChat  # type: ignore[assignment]

    def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        kind = "text/plain" if isinstance(body, bytes) else "application/json"
        reply(self, status, data, {"Content-Type": kind, **(headers or {})})

    def do_POST(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path
        platform = (
            "telegram" if path.startswith("/bot") else "discord" if path.startswith("/discord/") else "slack"
        )
        with self.server.lock:
            limited = self.server._limited > 0
            if limited:
                self.server._limited -= 1
            self.server.attempts.append((platform, path))
        if limited:
            wait = self.server.retry_after
            if platform == "telegram":
                return self._answer(
                    429,
                    {
                        "ok": False,
                        "error_code": 429,
                        "description": f"Too Many Requests: retry after {wait}",
                        "parameters": {"retry_after": wait},
                    },
                )
            if platform == "discord":
                return self._answer(
                    429,
                    {"message": "You are being rate limited.", "retry_after": float(wait), "global": False},
                    {"Retry-After": str(wait)},
                )
            return self._answer(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)})
        refusal = getattr(self, f"_{platform}")(path, body)
        if refusal is not None:
            return refusal
        with self.server.lock:
            self.server.sent.append((platform, path, body))
        if path.startswith("/hooks/"):
            return self._answer(200, b"ok")
        if platform == "telegram":
            return self._answer(
                200, {"ok": True, "result": {"message_id": len(self.server.sent), "text": body["text"]}}
            )
        if platform == "discord":
            return self._answer(200, {"id": "1", "content": body["content"]})
        return self._answer(200, {"ok": True, "channel": body.get("channel"), "ts": "1700000000.000100"})

    def _telegram(self, path: str, body: dict[str, Any]) -> None:
        if path != f"/bot{self.server.telegram_token}/sendMessage":
            return self._answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        text = body.get("text") or ""
        if not text.strip():
            return self._answer(
                400, {"ok": False, "error_code": 400, "description": "Bad Request: message text is empty"}
            )
        if len(_visible(text)) > 4096:
            return self._answer(
                400, {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"}
            )
        if not _balanced(text):
            return self._answer(
                400, {"ok": False, "error_code": 400, "description": "Bad Request: can't parse entities"}
            )
        return None

    def _discord(self, path: str, body: dict[str, Any]) -> None:
        if path != f"/discord/webhooks/{DISCORD_APP}/{DISCORD_TOKEN}/messages/@original":
            return self._answer(404, {"code": 10015, "message": "Unknown Webhook"})
        if len(body.get("content") or "") > 2000:
            return self._answer(
                400,
                {
                    "code": 50035,
                    "message": "Invalid Form Body",
                    "errors": {
                        "content": {
                            "_errors": [
                                {
                                    "code": "BASE_TYPE_MAX_LENGTH",
                                    "message": "Must be 2000 or fewer in length.",
                                }
                            ]
                        }
                    },
                },
            )
        return None

    def _slack(self, path: str, body: dict[str, Any]) -> None:
        if path.startswith("/hooks/commands/"):
            return None
        if path != "/slack/chat.postMessage":
            return self._answer(404, {"ok": False, "error": "unknown_method"})
        if self.headers.get("Authorization") != f"Bearer {self.server.slack_token}":
            return self._answer(200, {"ok": False, "error": "invalid_auth"})
        if not body.get("channel"):
            return self._answer(200, {"ok": False, "error": "channel_not_found"})
        if len(body.get("text") or "") > 40_000:
            return self._answer(200, {"ok": False, "error": "msg_too_long"})
        return None


def _visible(text: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", text)


def _balanced(text: str) -> bool:
    """Whether the HTML has only the tags Telegram parses, each closed (what ``parse_mode: HTML``
    requires); ``<`` as text must be ``&lt;``."""
    import re

    stack: list[str] = []
    for match in re.finditer(r"<(/?)([a-zA-Z]*)[^>]*>|<", text):
        closing, tag = match.group(1), match.group(2)
        if not tag or tag not in {"a", "b", "i", "u", "s", "code", "pre"}:
            return False
        if closing:
            if not stack or stack.pop() != tag:
                return False
        else:
            stack.append(tag)
    return not stack


class FakeChat(StandinServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.lock = threading.Lock()
        self.telegram_token, self.slack_token = TELEGRAM_TOKEN, SLACK_TOKEN
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.attempts: list[tuple[str, str]] = []
        self._limited = 0
        self.retry_after = 1

    def limit_next(self, count: int, retry_after: int = 1) -> None:
        with self.lock:
            self._limited, self.retry_after = count, retry_after

    async def wait_for(self, count: int, timeout: float = 60.0) -> list[tuple[str, str, dict[str, Any]]]:
        """The messages once ``count`` came (the replies are posted by a background job)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.sent) >= count:
                    return list(self.sent)
            await asyncio.sleep(0.05)
        raise AssertionError(f"{len(self.sent)} messages came, not {count}: attempts {self.attempts}")

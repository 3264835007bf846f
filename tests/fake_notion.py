"""A small local stand-in for Notion's API (pages and block children), over real HTTP on 127.0.0.1.

It answers as Notion's reference documents ("Create a page", "Append block children", "Request
limits", "Status codes"):

- Every request needs ``Authorization: Bearer <token>`` (``401 unauthorized`` otherwise) and a
  ``Notion-Version`` header (``400 missing_version``).
- ``POST /v1/pages`` with ``{parent: {page_id}, properties: {title: {title: [...]}}, children?}``:
  the parent must be a page shared with the integration (``404 object_not_found``); under a page
  only the ``title`` property is allowed (``400 validation_error``). Answers the page object
  (``object: "page", id, url``).
- ``PATCH /v1/blocks/{id}/children`` with ``{children}``: appends to a page or block the
  integration can see (``404 object_not_found``). Answers ``{object: "list", results}``.
- Limits, each a ``400 validation_error`` naming the path as Notion does: at most 100 blocks in
  any ``children`` array, 100 elements in a rich-text array, 2,000 characters in ``text.content``
  and in a link's ``url``, 1,000 block elements and 500 KB in one request.
- Rate limit: a token bucket of ``rate`` requests a second (Notion's average of three) with a
  ``burst``; beyond it ``429 rate_limited`` with ``Retry-After`` in seconds. ``limit_next(n)``
  answers the next ``n`` requests 429 whatever the bucket says.
- Malformed JSON is ``400 invalid_json``; ``fail_next`` scripts other statuses (``500
  internal_server_error``, ``503 service_unavailable``).

Errors have Notion's shape: ``{"object": "error", "status", "code", "message"}``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .standin_http import QuietHandler, StandinServer, reply

TOKEN = "ntn_test_0123456789abcdefghijklmnopqrstuvwxyzABCD"
PARENT = "1f2e3d4c-5b6a-4978-8877-665544332211"
MAX_BODY = 500 * 1024
_CODES = {500: "internal_server_error", 502: "bad_gateway", 503: "service_unavailable"}


@dataclass
class Seen:
    """Requests as Notion received them: method, path, headers and the decoded body."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _check_rich(texts: Any, where: str) -> None:
    if not isinstance(texts, list):
        raise _Refused(400, "validation_error", f"body failed validation: {where} should be an array.")
    if len(texts) > 100:
        raise _Refused(
            400,
            "validation_error",
            f"body failed validation: {where}.length should be ≤ `100`, instead was `{len(texts)}`.",
        )
    for i, item in enumerate(texts):
        text = (item or {}).get("text") or {}
        content = text.get("content", "")
        if len(content) > 2000:
            raise _Refused(
                400,
                "validation_error",
                f"body failed validation: {where}[{i}].text.content.length should be ≤ `2000`, instead was "
                f"`{len(content)}`.",
            )
        link = text.get("link") or {}
        if len(link.get("url", "")) > 2000:
            raise _Refused(
                400, "validation_error", f"body failed validation: {where}[{i}].text.link.url is too long."
            )


def _check_blocks(blocks: Any, where: str) -> int:
    """The number of block elements in ``blocks``, checked against Notion's limits."""
    if not isinstance(blocks, list):
        raise _Refused(400, "validation_error", f"body failed validation: {where} should be an array.")
    if len(blocks) > 100:
        raise _Refused(
            400,
            "validation_error",
            f"body failed validation: {where}.length should be ≤ `100`, instead was `{len(blocks)}`.",
        )
    count = 0
    for i, block in enumerate(blocks):
        kind = (block or {}).get("type")
        if not isinstance(kind, str) or kind not in block:
            raise _Refused(
                400, "validation_error", f"body failed validation: {where}[{i}] has no {kind!r} value."
            )
        inner = block[kind]
        count += 1
        if "rich_text" in inner:
            _check_rich(inner["rich_text"], f"{where}[{i}].{kind}.rich_text")
        if "children" in inner:
            count += _check_blocks(inner["children"], f"{where}[{i}].{kind}.children")
    return count


class _Handler(QuietHandler):
    server: FakeNotion  # type: ignore[assignment]

    def _answer(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        reply(self, status, data, {"Content-Type": "application/json; charset=utf-8", **(headers or {})})

    def _error(self, refused: _Refused, headers: dict[str, str] | None = None) -> None:
        with self.server.lock:
            self.server.seen.refused.append(refused.status)
        body = {"object": "error", "status": refused.status, "code": refused.code, "message": refused.message}
        self._answer(refused.status, body, headers)

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        server = self.server
        with server.lock:
            server.seen.times.append(time.monotonic())
            wait = server.take()
            scripted = server.fail_next.pop(0) if server.fail_next else None
        try:
            if self.headers.get("Authorization") != f"Bearer {server.token}":
                raise _Refused(401, "unauthorized", "API token is invalid.")
            if not self.headers.get("Notion-Version"):
                raise _Refused(400, "missing_version", "Notion-Version header failed validation.")
            if wait is not None:
                self._error(
                    _Refused(429, "rate_limited", "You have been rate limited."), {"Retry-After": str(wait)}
                )
                return
            if scripted is not None:
                raise _Refused(scripted, _CODES.get(scripted, "internal_server_error"), "Scripted failure.")
            if len(raw) > MAX_BODY:
                raise _Refused(400, "validation_error", "Request body too large.")
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                raise _Refused(400, "invalid_json", "Error parsing JSON body.") from None
            with server.lock:
                server.seen.requests.append(
                    {"method": method, "path": self.path, "headers": dict(self.headers), "body": body}
                )
            if method == "POST" and self.path == "/v1/pages":
                self._answer(200, self._create(body))
            elif (
                method == "PATCH" and self.path.startswith("/v1/blocks/") and self.path.endswith("/children")
            ):
                self._answer(200, self._append(self.path.split("/")[3], body))
            else:
                raise _Refused(400, "invalid_request_url", "Invalid request URL.")
        except _Refused as refused:
            self._error(refused)

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        parent = (body.get("parent") or {}).get("page_id")
        properties = body.get("properties") or {}
        if set(properties) - {"title"}:
            raise _Refused(
                400,
                "validation_error",
                "Invalid property identifier: a page whose parent is a page can only have a title property.",
            )
        title = ((properties.get("title") or {}).get("title")) or []
        _check_rich(title, "body.properties.title.title")
        count = _check_blocks(body.get("children", []), "body.children")
        if count > 1000:
            raise _Refused(
                400, "validation_error", "body failed validation: too many block elements (1000 at most)."
            )
        with self.server.lock:
            if parent not in self.server.pages:
                raise _Refused(
                    404,
                    "object_not_found",
                    f"Could not find page with ID: {parent}. Make sure the relevant pages and databases are shared "
                    "with your integration.",
                )
            page_id = str(uuid.uuid4())
            name = "".join(t.get("text", {}).get("content", "") for t in title)
            slug = "-".join("".join(c if c.isalnum() else " " for c in name).split())[:60]
            url = f"https://www.notion.so/{slug + '-' if slug else ''}{page_id.replace('-', '')}"
            self.server.pages[page_id] = {
                "title": name,
                "parent": parent,
                "blocks": list(body.get("children", [])),
            }
        return {"object": "page", "id": page_id, "url": url, "parent": {"type": "page_id", "page_id": parent}}

    def _append(self, block_id: str, body: dict[str, Any]) -> dict[str, Any]:
        children = body.get("children")
        count = _check_blocks(children, "body.children")
        if count > 1000:
            raise _Refused(
                400, "validation_error", "body failed validation: too many block elements (1000 at most)."
            )
        with self.server.lock:
            page = self.server.pages.get(block_id)
            if page is None:
                raise _Refused(404, "object_not_found", f"Could not find block with ID: {block_id}.")
            page["blocks"].extend(children)
        return {"object": "list", "results": children}


class FakeNotion(StandinServer):
    """Start with ``with FakeNotion() as notion``; ``notion.origin`` is its address."""

    def __init__(
        self, *, token: str = TOKEN, rate: float = 3.0, burst: int = 10, retry_after: int = 1
    ) -> None:
        super().__init__(_Handler)
        self.token = token
        self.lock = threading.Lock()
        self.seen = Seen()
        self.pages: dict[str, dict[str, Any]] = {PARENT: {"title": "Videos", "parent": None, "blocks": []}}
        self.fail_next: list[int] = []
        self.rate, self.burst, self.retry_after = rate, burst, retry_after
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._limited = 0

    def limit_next(self, count: int) -> None:
        with self.lock:
            self._limited += count

    def take(self) -> int | None:
        """Spend one request from the bucket (under ``lock``); the ``Retry-After`` when it is empty."""
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._limited:
            self._limited -= 1
            return self.retry_after
        if self._tokens < 1:
            return self.retry_after
        self._tokens -= 1
        return None

    def blocks_of(self, page_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.pages[page_id]["blocks"])

    def created(self) -> list[tuple[str, dict[str, Any]]]:
        """The pages made through the API, in order: ``(id, page)``."""
        with self.lock:
            return [(key, page) for key, page in self.pages.items() if page["parent"] is not None]

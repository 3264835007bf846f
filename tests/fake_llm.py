"""A small local stand-in for hosted chat-model APIs, over real HTTP on 127.0.0.1.

It answers the three wire protocols the language-model rungs speak, as their services document
them:

- OpenAI's chat completions, ``POST /v1/chat/completions`` (an OpenAI-compatible base URL is
  ``fake.url + "/v1"``), and Groq's copy of it at ``POST /openai/v1/chat/completions`` (what the
  groq SDK calls with ``GROQ_BASE_URL=fake.url``): ``{"model", "messages", "max_tokens"?,
  "temperature"?, "stop"?, "stream"?, "stream_options"?}``. A whole answer is ``{"id", "object":
  "chat.completion", "model", "choices": [{"index": 0, "message": {"role": "assistant",
  "content"}, "finish_reason"}], "usage"}``. A stream is server-sent events of
  ``chat.completion.chunk``: a first chunk with the role, one chunk per word, one with
  ``finish_reason`` (Groq's carries ``x_groq.usage``), a chunk with empty ``choices`` and the
  ``usage`` when ``stream_options.include_usage`` asks for it, then ``data: [DONE]``. With
  ``reasoning`` set the model "thinks" first: in ``reasoning_content`` (OpenAI-compatible
  servers such as vLLM) or ``reasoning`` (Groq). Errors are ``{"error": {"message", "type",
  "code"}}``.
- Workers AI's REST API, ``POST /client/v4/accounts/<account>/ai/run/@cf/meta/llama-3.3-70b-
  instruct-fp8-fast`` (``CLOUDFLARE_BASE_URL=fake.url + "/client/v4"``): ``{"messages",
  "max_tokens"?, "temperature"?, "stream"?}``; a whole answer is ``{"result": {"response",
  "usage"}, "success": true, "errors": [], "messages": []}``, a stream ``data: {"response":
  "word "}`` per word, ``data: {"response": "", "usage": {...}}``, ``data: [DONE]``. Errors are
  Cloudflare's envelope. ``tests/cloudflare_bindings.WorkersAi`` (the ``AI`` binding's stand-in)
  posts here too.

The OpenAI-compatible path also takes a message's ``content`` as OpenAI's content parts (text and
``image_url`` data URLs), as vision models do; ``images_of(request)`` decodes the images sent.

Like the real services it refuses a wrong key with 401 (each in its own words), an unknown model
with 404 (OpenAI, Groq) or 400 (Workers AI), and honours ``max_tokens``: an answer longer than that
many words is cut there with ``finish_reason: "length"`` (a word is a token here, and usage counts
words). ``fail_next`` scripts 429 (with ``Retry-After``) or 5xx answers, ``refuse`` (a rule: a request in,
a status or ``None`` out) answers that status to the requests it picks; ``break_next`` makes the
next stream stop after its first word, without a finish or ``[DONE]``, as a dropped connection does.
``hold_streams()`` holds every stream after its first word until ``release`` is set: ``held`` is
set while one waits, and ``hung_up`` when its client closed the connection meanwhile (what a
client that aborts the upstream call looks like from the server's side).

What it answers is ``reply(request)``: by default ``echo`` (``You said: <the last user message>``);
a test sets its own (``translator`` below reads our numbered-line prompts; ``timed_lines`` the
``[m:ss] text`` transcripts key moments and overviews send, for ``json_reply`` to answer from). Answers stream one
word per chunk, so a test can see that a stream came in pieces without timing anything.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .standin_http import HandledStandin, StandinServer, reply

__all__ = [
    "GROQ_MODEL",
    "WORKERS_AI_MODEL",
    "FakeLlm",
    "Request",
    "echo",
    "images_of",
    "json_reply",
    "numbered",
    "source_numbers",
    "system_of",
    "timed_lines",
    "translator",
]

GROQ_MODEL = "llama-3.3-70b-versatile"
WORKERS_AI_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
_NUMBERED = re.compile(r"^\[(\d+)\] (.*)$")
_SOURCE = re.compile(r"^\[(\d+)\] .* @ \d+:\d\d", re.MULTILINE)
_TIMED = re.compile(r"^\[(\d+(?::\d\d){1,2})\] (.*)$")


@dataclass
class Request:
    path: str
    auth: str | None
    body: Any = None
    status: int = 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return messages if isinstance(messages, list) else []

    @property
    def last_user(self) -> str:
        users = [
            m.get("content", "") for m in self.messages if isinstance(m, dict) and m.get("role") == "user"
        ]
        return users[-1] if users else ""

    @property
    def streamed(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


Reply = Callable[[Request], str]


def _parts_ok(content: Any) -> bool:
    """OpenAI's content parts, as vision models take them: ``{"type": "text", "text"}`` and
    ``{"type": "image_url", "image_url": {"url": "data:image/...;base64,..."}}``."""
    if not isinstance(content, list) or not content:
        return False
    for part in content:
        if not isinstance(part, dict):
            return False
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            continue
        image = part.get("image_url")
        if (
            part.get("type") == "image_url"
            and isinstance(image, dict)
            and str(image.get("url", "")).startswith("data:image/")
        ):
            continue
        return False
    return True


def images_of(request: Request) -> list[bytes]:
    """The images a request's messages carry as data URLs, decoded."""
    import base64

    found = []
    for message in request.messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                found.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return found


def echo(request: Request) -> str:
    return "You said: " + request.last_user


def numbered(request: Request) -> list[tuple[int, str]]:
    """The ``[n] text`` lines of the first user message (the lines to translate)."""
    users = [
        m.get("content", "") for m in request.messages if isinstance(m, dict) and m.get("role") == "user"
    ]
    first = users[0] if users else ""
    return [(int(m.group(1)), m.group(2)) for line in first.splitlines() if (m := _NUMBERED.match(line))]


def source_numbers(request: Request) -> list[int]:
    """The numbers of the ``[n] Title @ m:ss–m:ss`` source blocks of the system message."""
    system = "\n".join(
        str(m.get("content", ""))
        for m in request.messages
        if isinstance(m, dict) and m.get("role") == "system"
    )
    return [int(match.group(1)) for match in _SOURCE.finditer(system)]


def translator(tag: str = "de") -> Reply:
    """A model that "translates" each numbered line by marking it: ``[n] <tag>: text``."""

    def reply(request: Request) -> str:
        return "\n".join(f"[{n}] {tag}: {text}" for n, text in numbered(request))

    return reply


def timed_lines(request: Request) -> list[tuple[str, str]]:
    """The ``[m:ss] text`` lines of the first user message: (the time as written, the text)."""
    users = [
        m.get("content", "") for m in request.messages if isinstance(m, dict) and m.get("role") == "user"
    ]
    first = users[0] if users else ""
    return [(m.group(1), m.group(2)) for line in first.splitlines() if (m := _TIMED.match(line))]


def system_of(request: Request) -> str:
    return "\n".join(
        str(m.get("content", ""))
        for m in request.messages
        if isinstance(m, dict) and m.get("role") == "system"
    )


def json_reply(answer: Callable[[Request], Any]) -> Reply:
    """A model that answers ``answer(request)`` as JSON text (a list of moments, say)."""

    def reply(request: Request) -> str:
        return json.dumps(answer(request))

    return reply


@dataclass
class _Script:
    failures: list[tuple[int, int | None]] = field(default_factory=list)
    breaks: int = 0


class _QuietServer(StandinServer):
    """A client that hangs up mid-stream is an outcome here (``hung_up``), not a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLlm(HandledStandin):
    """The server; use as a context manager (``with FakeLlm(key="k") as fake: fake.url``)."""

    _server_class = _QuietServer

    def __init__(
        self,
        *,
        key: str | None = None,
        reply: Reply = echo,
        reasoning: str = "",
        models: set[str] | None = None,
    ) -> None:
        self.key = key
        self.reply = reply
        self.reasoning = reasoning
        self.models = models
        """Models the OpenAI-compatible path serves (``None``: any); Groq serves ``GROQ_MODEL``,
        Workers AI ``WORKERS_AI_MODEL``."""
        self.refuse: Callable[[Request], int | None] | None = None
        """A test's rule: the status to answer a request with instead of an answer, or ``None``."""
        self.requests: list[Request] = []
        self._script = _Script()
        self._lock = threading.Lock()
        self._holding = False
        self.held = threading.Event()
        """Set while a held stream waits for ``release``."""
        self.release = threading.Event()
        self.hung_up = threading.Event()
        """Set when the client of a held stream closed its connection."""

    # -- scripting ----------------------------------------------------------------------------

    def fail_next(self, status: int, *, count: int = 1, retry_after: int | None = None) -> None:
        """The next ``count`` requests get ``status`` (with ``Retry-After`` when given)."""
        with self._lock:
            self._script.failures.extend([(status, retry_after)] * count)

    def break_next(self, count: int = 1) -> None:
        """The next ``count`` streams stop after their first word, with no finish and no [DONE]."""
        with self._lock:
            self._script.breaks += count

    def hold_streams(self) -> None:
        """Every stream from now on stops after its first word until ``release`` is set."""
        with self._lock:
            self._holding = True

    @property
    def answered(self) -> list[Request]:
        return [r for r in self.requests if r.status == 200]

    # -- answering ----------------------------------------------------------------------------

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        raw = http.rfile.read(int(http.headers.get("Content-Length") or 0))
        record = Request(path=http.path, auth=http.headers.get("Authorization"))
        with self._lock:
            self.requests.append(record)
        kind = self._kind(http.path)
        refusal = self._refusal(kind, raw, record)
        if refusal is not None:
            status, body, headers = refusal
            record.status = status
            self._send(http, status, "application/json", body, headers)
            return
        record.status = 200
        text, finish, usage = self._answer(record)
        if not record.streamed:
            self._send(http, 200, "application/json", self._whole(kind, record, text, finish, usage), {})
            return
        with self._lock:
            broken = self._script.breaks > 0
            self._script.breaks -= 1 if broken else 0
        self._stream(http, self._events(kind, record, text, finish, usage, broken=broken), hold=self._holding)

    @staticmethod
    def _kind(path: str) -> str:
        if "/ai/run/" in path:
            return "workers-ai"
        if path.endswith("/openai/v1/chat/completions"):
            return "groq"
        if path.endswith("/v1/chat/completions"):
            return "openai"
        return "none"

    def _refusal(self, kind: str, raw: bytes, record: Request) -> tuple[int, bytes, dict[str, str]] | None:
        if kind == "none":
            return 404, b'{"error": {"message": "no such route"}}', {}
        if self.key is not None and record.auth != f"Bearer {self.key}":
            if kind == "workers-ai":
                return _cf_error(401, 10000, "Authentication error")
            if kind == "groq":
                return _openai_error(401, "Invalid API Key", "invalid_api_key")
            return _openai_error(401, "Incorrect API key provided.", "invalid_api_key")
        try:
            record.body = json.loads(raw)
        except ValueError:
            return (
                _cf_error(400, 5006, "Invalid JSON")
                if kind == "workers-ai"
                else _openai_error(400, "bad JSON")
            )
        body = record.body if isinstance(record.body, dict) else {}
        if kind == "workers-ai":
            if not record.path.endswith("/ai/run/" + WORKERS_AI_MODEL):
                return _cf_error(400, 5007, "No such model")
        else:
            model = body.get("model")
            served = {GROQ_MODEL} if kind == "groq" else self.models
            if not isinstance(model, str) or (served is not None and model not in served):
                return _openai_error(404, f"The model `{model}` does not exist.", "model_not_found")
        if not record.messages or not all(
            isinstance(m, dict)
            and m.get("role") in ("system", "user", "assistant")
            and (isinstance(m.get("content"), str) or (kind == "openai" and _parts_ok(m.get("content"))))
            for m in record.messages
        ):
            if kind == "workers-ai":
                return _cf_error(400, 5006, "Type mismatch of '/messages'")
            return _openai_error(400, "'messages' must be a non-empty list of messages.")
        with self._lock:
            failure = self._script.failures.pop(0) if self._script.failures else None
        if failure is None and self.refuse is not None and (status := self.refuse(record)) is not None:
            failure = (status, None)
        if failure is not None:
            status, retry_after = failure
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
            if kind == "workers-ai":
                status, data, _ = _cf_error(status, 3040 if status == 429 else 3001, f"scripted {status}")
                return status, data, headers
            return (
                status,
                json.dumps({"error": {"message": f"scripted {status}", "type": "server_error"}}).encode(),
                headers,
            )
        return None

    def _answer(self, record: Request) -> tuple[str, str, dict[str, int]]:
        text = self.reply(record)
        words = re.findall(r"\S+\s*", text)
        limit = record.body.get("max_tokens")
        finish = "stop"
        if isinstance(limit, int) and len(words) > limit:
            text, finish = "".join(words[:limit]), "length"
        prompt = sum(len(str(m.get("content", "")).split()) for m in record.messages)
        completion = len(text.split())
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return text, finish, usage

    def _whole(self, kind: str, record: Request, text: str, finish: str, usage: dict[str, int]) -> bytes:
        if kind == "workers-ai":
            result = {"response": text, "tool_calls": [], "usage": usage}
            return json.dumps({"result": result, "success": True, "errors": [], "messages": []}).encode()
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.reasoning:
            message["reasoning" if kind == "groq" else "reasoning_content"] = self.reasoning
        answer = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1,
            "model": record.body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return json.dumps(answer).encode()

    def _events(
        self, kind: str, record: Request, text: str, finish: str, usage: dict[str, int], *, broken: bool
    ) -> list[str]:
        pieces = re.findall(r"\S+\s*", text) or [""]
        if kind == "workers-ai":
            events = [json.dumps({"response": piece, "p": "abcdef"}) for piece in pieces]
            if broken:
                return events[:1]
            return [*events, json.dumps({"response": "", "usage": usage}), "[DONE]"]

        def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
            body = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": record.body["model"],
                "choices": [choice],
                **extra,
            }
            return json.dumps(body)

        thinking = "reasoning" if kind == "groq" else "reasoning_content"
        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({thinking: piece}) for piece in re.findall(r"\S+\s*", self.reasoning)]
        events += [chunk({"content": piece}) for piece in pieces]
        if broken:
            return events[:2]
        events.append(
            chunk({}, finish, **({"x_groq": {"id": "req_fake", "usage": usage}} if kind == "groq" else {}))
        )
        options = record.body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            events.append(
                json.dumps(
                    {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1,
                     "model": record.body["model"], "choices": [], "usage": usage}
                )
            )  # fmt: skip
        return [*events, "[DONE]"]

    @staticmethod
    def _send(
        http: BaseHTTPRequestHandler, status: int, mime: str, data: bytes, headers: dict[str, str]
    ) -> None:
        reply(http, status, data, {"Content-Type": mime, **headers})

    def _wait_for_release(self, http: BaseHTTPRequestHandler) -> bool:
        """Wait until released (``True``) or the client hangs up (``False``)."""
        self.held.set()
        connection = http.connection
        while not self.release.wait(0.02):
            readable, _, _ = select.select([connection], [], [], 0)
            if readable:
                try:
                    closed = connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    closed = True
                if closed:
                    self.hung_up.set()
                    return False
        return True

    def _stream(self, http: BaseHTTPRequestHandler, events: list[str], *, hold: bool = False) -> None:
        """Each event as its own HTTP chunk, as a streaming server flushes them."""
        http.send_response(200)
        http.send_header("Content-Type", "text/event-stream")
        http.send_header("Cache-Control", "no-cache")
        http.send_header("Transfer-Encoding", "chunked")
        http.end_headers()
        for index, event in enumerate(events):
            if hold and index == 2 and not self._wait_for_release(http):
                return
            data = f"data: {event}\n\n".encode()
            try:
                http.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                http.wfile.flush()
            except OSError:
                self.hung_up.set()
                return
        http.wfile.write(b"0\r\n\r\n")


def _cf_error(status: int, code: int, message: str) -> tuple[int, bytes, dict[str, str]]:
    body = {"result": None, "success": False, "errors": [{"code": code, "message": message}], "messages": []}
    return status, json.dumps(body).encode(), {}


def _openai_error(status: int, message: str, code: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return status, json.dumps({"error": error}).encode(), {}

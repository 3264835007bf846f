"""A small local stand-in for hosted embedding APIs, over real HTTP on 127.0.0.1.

It answers the two wire protocols the hosted rungs speak, as their services document them:

- Workers AI's REST API, ``POST /client/v4/accounts/<account>/ai/run/@cf/baai/bge-small-en-v1.5``
  with ``{"text": string | string[], "pooling"?: "mean" | "cls"}`` (``mean`` when left out, as on
  Cloudflare) and at most 100 texts, answering ``{"result": {"shape": [n, 384], "data": [...],
  "pooling": ...}, "success": true, "errors": [], "messages": []}``; errors as Cloudflare's
  envelope, ``{"success": false, "errors": [{"code", "message"}]}``. ``tests/cloudflare_bindings
  .WorkersAi`` (the ``AI`` binding's stand-in) posts here too.
- Workers AI's cross-encoder, ``POST .../ai/run/@cf/baai/bge-reranker-base`` with ``{"query":
  string, "contexts": [{"text": string}], "top_k"?: integer}`` (``query`` and ``contexts``
  required, as its schema in ``@cloudflare/workers-types`` says), answering ``{"result":
  {"response": [{"id", "score"}]}, "success": true}``: ``id`` the index of a context, best first,
  at most ``top_k`` of them. Its scores are not a model's: the share of the query's words (of three
  letters or more) a context holds, in [0, 1].
- An OpenAI-compatible ``POST /v1/embeddings`` with ``{"model", "input": string | string[]}``,
  answering ``{"object": "list", "data": [{"object": "embedding", "embedding": [...], "index": i}],
  "model", "usage"}``; errors as ``{"error": {"message", "type"}}``.

Like the real services it refuses a wrong key with 401; ``max_body`` makes it answer 413 to a
larger request body, as a server (or the proxy in front of it) with a body limit does;
``fail_next`` scripts 429 (with ``Retry-After``) or 5xx answers, ``garble_next`` a 200 that is not
JSON; ``reverse`` returns OpenAI rows in reverse order (the API does not promise their order).

Its vectors (``vector``) are not a model's: each word of a text adds ±1 to one of ``dim``
coordinates picked by a hash of the word (and of the pooling, so ``cls`` and ``mean`` vectors
differ as they do on Cloudflare), scaled by 3 so that a client must normalise them itself. Texts
that share words point the same way; that is all a test may rely on.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .standin_http import HandledStandin, reply

__all__ = ["FakeEmbeddings", "Request", "vector"]

WORKERS_AI_MODEL = "@cf/baai/bge-small-en-v1.5"
RERANK_MODEL = "@cf/baai/bge-reranker-base"
WORKERS_AI_MAX_TEXTS = 100


def vector(text: str, dim: int, *, salt: str = "") -> list[float]:
    """The stand-in's vector for ``text`` (see the module docstring)."""
    values = [0.0] * dim
    words = re.findall(r"[a-z0-9]+", text.lower()) or [""]
    for word in words:
        digest = hashlib.sha256(f"{salt}|{word}".encode()).digest()
        index = int.from_bytes(digest[:4], "big") % dim
        values[index] += 3.0 if digest[4] & 1 else -3.0
    if not any(values):
        values[0] = 3.0
    return values


@dataclass
class Request:
    path: str
    auth: str | None
    body: Any = None
    texts: list[str] = field(default_factory=list)
    status: int = 0


class FakeEmbeddings(HandledStandin):
    """The server; use as a context manager (``with FakeEmbeddings() as fake: fake.url``)."""

    def __init__(
        self, *, key: str | None = None, dim: int = 384, max_body: int | None = None, reverse: bool = False
    ) -> None:
        self.key = key
        self.dim = dim
        self.max_body = max_body
        self.reverse = reverse
        self.requests: list[Request] = []
        self._failures: list[tuple[int, int | None]] = []
        self._garbled = 0
        self._lock = threading.Lock()

    # -- scripting ----------------------------------------------------------------------------

    def fail_next(self, status: int, *, count: int = 1, retry_after: int | None = None) -> None:
        """The next ``count`` requests get ``status`` (with ``Retry-After`` when given)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * count)

    def garble_next(self, count: int = 1) -> None:
        """The next ``count`` requests get a 200 whose body is not JSON."""
        with self._lock:
            self._garbled += count

    @property
    def answered(self) -> list[Request]:
        return [r for r in self.requests if r.status == 200]

    # -- answering ----------------------------------------------------------------------------

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        length = int(http.headers.get("Content-Length") or 0)
        raw = http.rfile.read(length)
        record = Request(path=http.path, auth=http.headers.get("Authorization"))
        with self._lock:
            self.requests.append(record)
        status, data, headers = self._answer(http.path, raw, record)
        record.status = status
        reply(http, status, data, {"Content-Type": "application/json", **headers})

    def _answer(self, path: str, raw: bytes, record: Request) -> tuple[int, bytes, dict[str, str]]:
        workers_ai = "/ai/run/" in path
        reranking = path.endswith("/ai/run/" + RERANK_MODEL)
        if workers_ai:
            if not path.endswith("/ai/run/" + WORKERS_AI_MODEL) and not reranking:
                return self._cf_error(400, 5007, "No such model")
        elif not path.endswith("/v1/embeddings"):
            return 404, b'{"error": {"message": "no such route"}}', {}
        if self.key is not None and record.auth != f"Bearer {self.key}":
            if workers_ai:
                return self._cf_error(401, 10000, "Authentication error")
            return self._openai_error(401, "Incorrect API key provided.")
        if self.max_body is not None and len(raw) > self.max_body:
            return 413, b"<html><body>413 Request Entity Too Large</body></html>", {}
        try:
            record.body = json.loads(raw)
        except ValueError:
            return (
                self._cf_error(400, 5006, "Invalid JSON")
                if workers_ai
                else self._openai_error(400, "bad JSON")
            )
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
            garbled = self._garbled > 0
            self._garbled -= 1 if garbled else 0
        if failure is not None:
            status, retry_after = failure
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
            return status, json.dumps({"error": {"message": f"scripted {status}"}}).encode(), headers
        if garbled:
            return 200, b"<html>upstream connect error</html>", {}
        if reranking:
            return self._rerank(record)
        return self._workers_ai(record) if workers_ai else self._openai(record)

    def _rerank(self, record: Request) -> tuple[int, bytes, dict[str, str]]:
        body = record.body if isinstance(record.body, dict) else {}
        query, contexts = body.get("query"), body.get("contexts")
        if not isinstance(query, str) or not isinstance(contexts, list) or not contexts:
            return self._cf_error(400, 5006, "required properties '/query', '/contexts'")
        if not all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in contexts):
            return self._cf_error(400, 5006, "Type mismatch of '/contexts/0/text'")
        top_k = body.get("top_k", len(contexts))
        if not isinstance(top_k, int) or top_k < 1:
            return self._cf_error(400, 5006, "'/top_k' must be >= 1")
        record.texts = [c["text"] for c in contexts]
        wanted = {w for w in re.findall(r"[a-z0-9]+", query.lower()) if len(w) >= 3}
        scored = []
        for i, context in enumerate(contexts):
            words = set(re.findall(r"[a-z0-9]+", context["text"].lower()))
            scored.append((len(wanted & words) / len(wanted) if wanted else 0.0, i))
        scored.sort(key=lambda item: (-item[0], item[1]))
        response = [{"id": i, "score": score} for score, i in scored[:top_k]]
        return 200, json.dumps({"result": {"response": response}, "success": True, "errors": []}).encode(), {}

    def _workers_ai(self, record: Request) -> tuple[int, bytes, dict[str, str]]:
        body = record.body if isinstance(record.body, dict) else {}
        text = body.get("text")
        texts = [text] if isinstance(text, str) else text
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return self._cf_error(400, 5006, "Type mismatch of '/text'")
        if len(texts) > WORKERS_AI_MAX_TEXTS:
            return self._cf_error(400, 5006, f"'/text' must NOT have more than {WORKERS_AI_MAX_TEXTS} items")
        pooling = body.get("pooling", "mean")
        if pooling not in ("mean", "cls"):
            return self._cf_error(400, 5006, "'/pooling' must be equal to one of the allowed values")
        record.texts = texts
        data = [vector(t, self.dim, salt=pooling) for t in texts]
        result = {"shape": [len(data), self.dim], "data": data, "pooling": pooling}
        return 200, json.dumps({"result": result, "success": True, "errors": [], "messages": []}).encode(), {}

    def _openai(self, record: Request) -> tuple[int, bytes, dict[str, str]]:
        body = record.body if isinstance(record.body, dict) else {}
        given = body.get("input")
        texts = [given] if isinstance(given, str) else given
        if not isinstance(body.get("model"), str) or not isinstance(texts, list) or not texts:
            return self._openai_error(400, "'input' and 'model' are required.")
        if not all(isinstance(t, str) and t for t in texts):
            return self._openai_error(400, "'$.input' is invalid.")
        record.texts = texts
        rows = [
            {"object": "embedding", "embedding": vector(t, self.dim, salt="server"), "index": i}
            for i, t in enumerate(texts)
        ]
        if self.reverse:
            rows.reverse()
        words = sum(len(t.split()) for t in texts)
        answer = {
            "object": "list",
            "data": rows,
            "model": body["model"],
            "usage": {"prompt_tokens": words, "total_tokens": words},
        }
        return 200, json.dumps(answer).encode(), {}

    @staticmethod
    def _cf_error(status: int, code: int, message: str) -> tuple[int, bytes, dict[str, str]]:
        body = {
            "result": None,
            "success": False,
            "errors": [{"code": code, "message": message}],
            "messages": [],
        }
        return status, json.dumps(body).encode(), {}

    @staticmethod
    def _openai_error(status: int, message: str) -> tuple[int, bytes, dict[str, str]]:
        return (
            status,
            json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode(),
            {},
        )

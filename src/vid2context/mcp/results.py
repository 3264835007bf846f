"""What a tool answers: text, JSON or an error, always as a tool result, never a protocol error.

Tools return a ``Reply``; it becomes the MCP ``CallToolResult`` only when it is sent, so a reply
kept by a long run (``runs.py``) and sent again gets fresh fence ids each time.

- ``TextReply``: our own lines and fenced video text, joined into one text block.
- ``JsonReply``: an object as compact JSON text, and as ``structuredContent`` for the tools
  the contract marks structured. When the object holds text from a video (titles, descriptions,
  comments) the JSON block sits between two fence blocks, so the JSON block still parses alone.
- ``ErrorReply``: ``isError`` with the contract's body ``{"error", "message", "hint", "attempts"}``,
  or, for the tools whose contract nests it (``ask``), ``{"error": {code, message, hint}, "attempts"}``.

Output schemas come from the msgspec Structs (``output_schema``), made portable and small by
``schemas.portable_output``: every structured tool whose work can outlast the wait may also answer
``processing``, so its schema admits that shape too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from mcp_types import CallToolResult, TextContent

from ..errors import VidError
from ..tokens import estimate_tokens
from .fences import begin_line, end_line, fence, new_id
from .schemas import portable_output

__all__ = [
    "ErrorReply",
    "JsonReply",
    "Processing",
    "Reply",
    "TextReply",
    "Untrusted",
    "error_payload",
    "json_text",
    "output_schema",
]

_ENCODER = msgspec.json.Encoder()


def json_text(data: Any) -> str:
    """``data`` (Structs, dicts, lists) as compact JSON, camelCase as on the REST API: an agent
    pays for every character, and indentation was a third of an outline's."""
    return _ENCODER.encode(data).decode()


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


class Processing(msgspec.Struct, kw_only=True):
    """The answer while long work goes on: not an error; call ``get_job`` or repeat the call."""

    status: Literal["processing"] = "processing"
    job_id: str
    retry_after_seconds: int
    stage: str
    fraction: float | None = None
    message: str


@dataclass(frozen=True, slots=True)
class Untrusted:
    """Text from a video, fenced when sent; ``label`` (ours) says what it is."""

    label: str
    text: str


class Reply:
    def to_result(self) -> CallToolResult:  # pragma: no cover - every reply overrides it
        raise NotImplementedError


@dataclass
class TextReply(Reply):
    parts: list[str | Untrusted]

    def text(self) -> str:
        """The text as sent, with fresh fence ids (always of the same length)."""
        lines = [fence(part.text, part.label) if isinstance(part, Untrusted) else part for part in self.parts]
        return "\n".join(lines)

    def tokens(self) -> int:
        """What the text as sent costs, by ``estimate_tokens``."""
        return estimate_tokens(self.text())

    def to_result(self) -> CallToolResult:
        return CallToolResult(content=[_text(self.text())])


@dataclass
class JsonReply(Reply):
    data: Any
    """A Struct or plain data; sent as JSON text and, when ``structured``, as structuredContent."""
    structured: bool = False
    untrusted: str | None = None
    """The fence label when the object holds text from a video."""
    _builtins: Any = field(default=None, init=False, repr=False)
    _json: str | None = field(default=None, init=False, repr=False)

    def to_result(self) -> CallToolResult:
        if self._json is None:
            self._builtins = msgspec.to_builtins(self.data)
            self._json = json_text(self._builtins)
        blocks = [_text(self._json)]
        if self.untrusted:
            fence_id = new_id(self._json)
            blocks = [_text(begin_line(fence_id, self.untrusted)), *blocks, _text(end_line(fence_id))]
        return CallToolResult(content=blocks, structured_content=self._builtins if self.structured else None)


def error_payload(error: VidError, *, nested: bool = False) -> dict[str, Any]:
    """The contract's MCP error body: ``{"error": code, "message", "hint", "attempts"}``; ``nested``:
    ``{"error": {"code", "message", "hint"}, "attempts"}``, as the contract gives it for ``ask``."""
    if nested:
        inner = {"code": error.code.value, "message": error.message, "hint": error.hint_for("mcp")}
        return {"error": inner, "attempts": msgspec.to_builtins(error.attempts)}
    return {
        "error": error.code.value,
        "message": error.message,
        "hint": error.hint_for("mcp"),
        "attempts": msgspec.to_builtins(error.attempts),
    }


@dataclass
class ErrorReply(Reply):
    error: VidError
    nested: bool = False

    def to_result(self) -> CallToolResult:
        body = error_payload(self.error, nested=self.nested)
        return CallToolResult(content=[_text(json_text(body))], is_error=True)


def output_schema(*shapes: type, processing: bool = True) -> dict[str, Any]:
    """The ``outputSchema`` for a structured tool: any of ``shapes``, or ``Processing`` for a tool
    whose work can outlast the wait.

    The root is an object (the protocol requires it): one shape, or an ``anyOf`` of them.
    """
    types = [*shapes, Processing] if processing else list(shapes)
    schemas, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    return portable_output({"type": "object", "anyOf": list(schemas), "$defs": components})

"""The common query parameters, read once and the same way by every route.

Handlers take their query values as plain strings and pass them through these functions, so a bad
value is always a ``bad-request`` naming the parameter with a hint showing a good one, never a
framework validation page. An empty value (``lang=``) means "not given", except where the contract
gives it a meaning of its own (``timestamps=`` is false).

JSON bodies are decoded strictly by ``decode_body`` and their errors named field by field
(``BODY_ERRORS``). (A request's ``Ctx`` comes from ``middleware.request_ctx``.)
"""

from __future__ import annotations

import re
from typing import Annotated, TypeVar, overload

import msgspec
from litestar import Request, Response
from litestar.exceptions import ValidationException
from litestar.params import QueryParameter

from ..errors import ErrorCode, VidError
from ..formats import Formatter, get_formatter
from ..models import Mode
from ..pipeline import MODES
from ..runtime import Runtime
from .errors import error_response

__all__ = [
    "BODY_ERRORS",
    "MAX_LANG_CHARS",
    "FormatQuery",
    "IncludeQuery",
    "LangQuery",
    "LimitQuery",
    "ModeQuery",
    "RefreshQuery",
    "TimestampsQuery",
    "UrlQuery",
    "decode_body",
    "parse_bool",
    "parse_format",
    "parse_formats",
    "parse_int",
    "parse_lang",
    "parse_mode",
    "parse_optional_bool",
    "require_url",
    "runtime_of",
]

MAX_LANG_CHARS = 35
_LANG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
_DIGITS = re.compile(r"[0-9]{1,12}")
_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"0", "false", "no", ""})
_URL_HINT = (
    "Pass url= with a video URL, a YouTube id (jNQXAC9IVRw) or upload:<sha256>, URL-encoded, "
    "e.g. ?url=https%3A%2F%2Fwww.youtube.com%2Fwatch%3Fv%3DjNQXAC9IVRw."
)
_MAX_FORMATS = 16

T = TypeVar("T")

# Query parameters as plain strings (checked by the functions below, so every bad value gets our
# error body), described once for the OpenAPI document.
UrlQuery = Annotated[
    str | None,
    QueryParameter(description="A video URL, a YouTube id, upload:<sha256> or another input; URL-encoded."),
]
IncludeQuery = Annotated[
    str | None,
    QueryParameter(
        description="Layers beside the transcript, comma-separated: on_screen reads the picture (slides, "
        "code, text on screen) into visual as mode=video does, whatever the mode (local runtime)."
    ),
]
ModeQuery = Annotated[str | None, QueryParameter(description="auto (default), captions, stt or video.")]
LangQuery = Annotated[
    str | None, QueryParameter(description="Preferred transcript language, BCP-47 (en, de, pt-BR).")
]
FormatQuery = Annotated[
    str | None, QueryParameter(description="A formatter id from GET /api/v1/formats; default text.")
]
TimestampsQuery = Annotated[
    str | None,
    QueryParameter(description="1, true or yes to prefix lines with [m:ss] where the format allows."),
]
RefreshQuery = Annotated[
    str | None, QueryParameter(description="1 to ignore the library copy and fetch again.")
]
LimitQuery = Annotated[str | None, QueryParameter(description="How many to return, a whole number.")]


def _shown(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def runtime_of(request: Request) -> Runtime:
    """The runtime ``create_app`` put in the app state."""
    return request.app.state.runtime


def require_url(url: str | None, name: str = "url") -> str:
    """The input; missing or blank is a ``bad-request`` saying what to pass.

    The input itself (length, control characters, public-mode guards) is checked by
    ``inputs.parse_input`` when the core resolves it, so every surface refuses the same inputs.
    """
    if url is None or not url.strip():
        raise _bad(f"The {name} parameter is required.", _URL_HINT)
    return url


def parse_mode(value: str | None) -> Mode:
    """``auto`` (the default), ``captions``, ``stt`` or ``video``."""
    if value is None or value == "":
        return "auto"
    mode = value.strip().lower()
    if mode not in MODES:
        raise _bad(f"Unknown mode {_shown(value, 20)}.", "Give mode as one of: " + ", ".join(MODES) + ".")
    return mode  # type: ignore[return-value]


def parse_lang(value: str | None) -> str | None:
    """A BCP-47-like language tag (``en``, ``de``, ``pt-BR``, ``zh-Hans``); ``_`` reads as ``-``."""
    if value is None or value == "":
        return None
    tag = value.strip().replace("_", "-")
    if len(tag) > MAX_LANG_CHARS or not _LANG.fullmatch(tag):
        raise _bad(
            f"lang {_shown(value)} is not a language tag.",
            f"Give a BCP-47 tag of at most {MAX_LANG_CHARS} characters: en, de, pt-BR, zh-Hans.",
        )
    return tag


def parse_format(value: str | None, default: str = "text") -> Formatter:
    """The formatter for ``format=``; an unknown id is a ``bad-request`` listing the known ones."""
    if value is None or value == "":
        return get_formatter(default)
    return get_formatter(value)


def parse_formats(value: str | list[str] | None) -> list[Formatter]:
    """Formatter ids, comma-separated (GET) or a list (POST), each known, without repeats."""
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else list(value)
    ids = [part.strip() for part in parts if isinstance(part, str) and part.strip()]
    if len(parts) > _MAX_FORMATS * 4 or len(ids) > _MAX_FORMATS:
        raise _bad("Too many formats.", "Give each formatter id once (GET /api/v1/formats lists them).")
    chosen: dict[str, Formatter] = {}
    for format_id in ids:
        formatter = get_formatter(format_id)
        chosen.setdefault(formatter.id, formatter)
    return list(chosen.values())


def parse_bool(name: str, value: str | None) -> bool:
    """``1``, ``true``, ``yes`` are true; ``0``, ``false``, ``no`` and empty are false."""
    if value is None:
        return False
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _bad(f"{name} must be 1 or 0, not {_shown(value, 20)}.", f"Give {name} as 1 (or true, yes) or 0.")


def parse_optional_bool(name: str, value: str | None) -> bool | None:
    """``parse_bool`` where "not given" means something of its own (``speakers``): a missing or
    empty value is ``None``."""
    if value is None or not value.strip():
        return None
    return parse_bool(name, value)


@overload
def parse_int(name: str, value: str | None, *, low: int, high: int, default: int) -> int: ...
@overload
def parse_int(name: str, value: str | None, *, low: int, high: int, default: None) -> int | None: ...
def parse_int(name: str, value: str | None, *, low: int, high: int, default: int | None) -> int | None:
    """A whole number from ``low`` to ``high``; ``default`` when the parameter is not given."""
    if value is None or value == "":
        return default
    text = value.strip()
    number = int(text) if _DIGITS.fullmatch(text) else None
    if number is None or not low <= number <= high:
        raise _bad(
            f"{name} must be a whole number from {low} to {high}, not {_shown(value, 20)}.",
            f"Give {name} from {low} to {high}.",
        )
    return number


# --- request bodies ----------------------------------------------------------------------------


def _body_error(_: Request, exc: ValidationException) -> Response[dict]:
    """A body that does not decode into the route's Struct: name the field and what was wrong.

    Litestar reports these as a generic "Validation failed"; its ``extra`` carries msgspec's own
    precise messages, which name only the field and the expected type, never our internals.
    """
    problems: list[str] = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if not isinstance(item, dict):
            continue
        message = str(item.get("message", ""))[:160]
        key = str(item.get("key", ""))[:60]
        if key == "data" and message.strip("'\"") == "data":
            problems.append("the body is missing or empty: send a JSON object")
        elif key and key != "data":
            problems.append(f"`{key}`: {message}")
        else:
            problems.append(message)
    hint = "; ".join(problems[:3]) or "Send a JSON object with the fields the route documents."
    error = _bad("The request body is not valid.", hint[:300])
    return error_response(error)


BODY_ERRORS = {ValidationException: _body_error}
"""``exception_handlers`` for routes with a JSON body: field-precise ``bad-request`` hints."""


async def decode_body(request: Request, shape: type[T]) -> T:
    """The body decoded strictly into ``shape``: ``"100"`` is not a number, ``1`` is not ``true``.

    Litestar has already decoded the body leniently for the route's ``data`` (which is how the
    OpenAPI document learns the shape); this second, strict pass is the one the handler uses.
    """
    try:
        return msgspec.json.decode(await request.body(), type=shape, strict=True)
    except msgspec.ValidationError as exc:
        raise _bad("The request body is not valid.", str(exc)[:300]) from None
    except msgspec.DecodeError as exc:
        raise _bad("The request body is not valid JSON.", str(exc)[:300]) from None

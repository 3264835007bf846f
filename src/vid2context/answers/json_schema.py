"""JSON Schemas a caller gives ``extract``: checked before any work, and answers checked against them.

Why our own validator: ``jsonschema`` is in the lock (the MCP SDK depends on it) but is left out of
the Worker's upload with ``referencing`` and ``rpds`` (wrangler.toml ``[python_modules] exclude``,
to stay under the 10 MiB limit), so extraction there could not use it. This module validates the
part of JSON Schema (2020-12 semantics) that describes data to extract, in plain Python, the same
on every runtime, and refuses the rest as ``bad-request`` naming the keyword, rather than ignoring
a rule the caller relies on.

Supported keywords::

    type (one name or a list)  enum  const
    properties  required  additionalProperties (true, false or a schema)  minProperties  maxProperties
    items (one schema)  minItems  maxItems  uniqueItems
    minLength  maxLength
    minimum  maximum  exclusiveMinimum  exclusiveMaximum  multipleOf
    allOf  anyOf  oneOf  not
    $ref (local: "#", "#/$defs/name", any JSON pointer into the schema)  $defs  definitions
    annotations, not checked: $schema $id $comment title description default examples deprecated
                              readOnly writeOnly format contentMediaType contentEncoding

Refused before anything is read or asked (``bad-request``; ``too-large`` for size):

- a schema that is not a JSON object, or whose top-level ``type`` is not ``object``;
- one larger than ``MAX_SCHEMA_BYTES`` once encoded, or nested deeper than ``MAX_DEPTH``;
- any ``$ref`` that is not local (``https://...``, ``other.json#...``): never fetched;
  a local one that points at nothing;
- any other keyword (``pattern``, ``if``/``then``, ``prefixItems``, ``patternProperties`` ...), and
  a keyword whose value is not of its kind (``"type": "nope"``, ``"required": "a"``).

``problems(validator, data)`` lists at most ``MAX_PROBLEMS`` mismatches as ``"/json/pointer: reason"``
lines, short and without the values, ready to send back to the model in a re-ask or to the caller in
an error. Pure and portable.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import ErrorCode, VidError

__all__ = [
    "MAX_DEPTH",
    "MAX_PROBLEMS",
    "MAX_SCHEMA_BYTES",
    "SUPPORTED",
    "Validator",
    "check_schema",
    "pointer",
    "problems",
]

MAX_SCHEMA_BYTES = 32 * 1024
"""An extraction schema larger than this is not one a model can be asked to fill reliably."""
MAX_DEPTH = 16
MAX_PROBLEMS = 8
_HINT = "Give schema as a JSON Schema object with type object, local $refs only (#/$defs/...)."
_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
_ANNOTATIONS = frozenset(
    {
        "$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated",
        "readOnly", "writeOnly", "format", "contentMediaType", "contentEncoding",
    }
)  # fmt: skip
_COUNTS = frozenset({"minProperties", "maxProperties", "minItems", "maxItems", "minLength", "maxLength"})
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_LISTS = frozenset({"allOf", "anyOf", "oneOf"})
_MAPS = frozenset({"properties", "$defs", "definitions"})
_ONE = frozenset({"items", "not", "additionalProperties"})
SUPPORTED = frozenset(
    {"type", "enum", "const", "required", "uniqueItems", "$ref"} | _COUNTS | _BOUNDS | _LISTS | _MAPS | _ONE
)
"""Keywords that are checked; with ``_ANNOTATIONS``, all that a schema may hold."""


def _bad(message: str, hint: str = _HINT) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def pointer(path: Any) -> str:
    """A JSON pointer (``/items/0/name``) for a path of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _resolve(root: dict[str, Any], ref: str) -> Any:
    """What a local ``$ref`` points at, or ``None``."""
    node: Any = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, (dict, bool)) else None


# --- checking the schema ----------------------------------------------------------------------------


def _check_node(node: Any, root: dict[str, Any], path: str, depth: int) -> None:
    where = path or "/"
    if isinstance(node, bool):
        return
    if not isinstance(node, dict):
        raise _bad(
            f"schema has something that is not a schema at {where} (a schema is an object or a boolean)."
        )
    if depth > MAX_DEPTH:
        raise _bad(f"schema is nested deeper than {MAX_DEPTH} levels (at {where[:120]}).")
    for key, value in node.items():
        at = f"{path}/{key}"
        if key in _ANNOTATIONS:
            continue
        if key not in SUPPORTED:
            raise _bad(
                f"schema uses {str(key)[:40]!r} (at {where[:120]}), which is not supported here.",
                "Leave it out (say the rule in a description instead); the keywords checked are: "
                + ", ".join(sorted(SUPPORTED))
                + ".",
            )
        _check_keyword(key, value, root, at, depth)


def _check_keyword(key: str, value: Any, root: dict[str, Any], at: str, depth: int) -> None:
    def wrong(kind: str) -> VidError:
        return _bad(f"schema is not a valid JSON Schema: {key} must be {kind} (at {at[:120]}).")

    if key == "type":
        names = value if isinstance(value, list) else [value]
        if not names or not all(isinstance(n, str) and n in _TYPES for n in names):
            raise wrong("one of " + ", ".join(_TYPES) + ", or a list of them")
    elif key == "enum":
        if not isinstance(value, list) or not value:
            raise wrong("a non-empty array")
    elif key == "required":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong("an array of property names")
    elif key == "uniqueItems":
        if not isinstance(value, bool):
            raise wrong("true or false")
    elif key in _COUNTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise wrong("a whole number, 0 or more")
    elif key in _BOUNDS:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (key == "multipleOf" and value <= 0)
        ):
            raise wrong("a number" + (" above 0" if key == "multipleOf" else ""))
    elif key in _LISTS:
        if not isinstance(value, list) or not value:
            raise wrong("a non-empty array of schemas")
        for index, item in enumerate(value):
            _check_node(item, root, f"{at}/{index}", depth + 1)
    elif key in _MAPS:
        if not isinstance(value, dict):
            raise wrong("an object of schemas")
        for name, item in value.items():
            _check_node(item, root, f"{at}/{name}", depth + 1)
    elif key in _ONE:
        _check_node(value, root, at, depth + 1)
    elif key == "$ref":
        if not isinstance(value, str) or not value.startswith("#"):
            raise _bad(
                f"schema has a $ref that is not local ({str(value)[:80]!r} at {at[:120]}); references are "
                "never fetched.",
                "Put the referenced schema under $defs and point to it as #/$defs/<name>.",
            )
        if value != "#" and not value.startswith("#/") or _resolve(root, value) is None:
            raise _bad(
                f"schema has a $ref that points at nothing ({value[:80]!r} at {at[:120]}).",
                "Give the $ref as a pointer to a schema of this document, such as #/$defs/<name>.",
            )


@dataclass(frozen=True)
class Validator:
    """A checked schema, ready to validate answers (``problems``)."""

    schema: dict[str, Any]


def check_schema(schema: Any) -> Validator:
    """A validator for ``schema``, or the ``VidError`` that says what is wrong with it (docstring)."""
    if not isinstance(schema, dict):
        kind = "an array" if isinstance(schema, list) else type(schema).__name__
        raise _bad(f"schema must be a JSON object, not {kind}.")
    size = len(msgspec.json.encode(schema))
    if size > MAX_SCHEMA_BYTES:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"The schema is {size:,} bytes; at most {MAX_SCHEMA_BYTES:,} are accepted.",
            hint="Give a smaller schema: only the fields wanted, with short descriptions.",
        )
    _check_node(schema, schema, "", 0)
    if schema.get("type") != "object":
        raise _bad('schema must describe one object: give "type": "object" at the top, with its properties.')
    return Validator(schema)


# --- validating data --------------------------------------------------------------------------------


def _is(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return name == "number" or isinstance(value, int) or float(value).is_integer()


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are equal, true and 1 are not."""
    return msgspec.json.encode(_normal(a)) == msgspec.json.encode(_normal(b))


def _normal(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(value[k]) for k in sorted(value)}
    return value


class _Walk:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.seen: set[tuple[str, str]] = set()

    def errors(self, schema: Any, data: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
        if schema is True:
            return
        if schema is False:
            yield path, "is not allowed here"
            return
        ref = schema.get("$ref")
        if ref is not None:
            key = (ref, pointer(path))
            if key not in self.seen:  # a reference that comes back to the same place adds nothing
                self.seen.add(key)
                yield from self.errors(_resolve(self.root, ref), data, path)
                self.seen.discard(key)
        if "type" in schema:
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_is(data, name) for name in names):
                yield path, "must be of type " + " or ".join(names)
                return
        if "enum" in schema and not any(_same(data, option) for option in schema["enum"]):
            yield path, "must be one of " + ", ".join(json_short(v) for v in schema["enum"])[:160]
        if "const" in schema and not _same(data, schema["const"]):
            yield path, "must be exactly " + json_short(schema["const"])
        yield from self._combined(schema, data, path)
        if isinstance(data, dict):
            yield from self._object(schema, data, path)
        elif isinstance(data, list):
            yield from self._array(schema, data, path)
        elif isinstance(data, str):
            if len(data) < schema.get("minLength", 0):
                yield path, f"must be at least {schema['minLength']} characters"
            if "maxLength" in schema and len(data) > schema["maxLength"]:
                yield path, f"must be at most {schema['maxLength']} characters"
        elif _is(data, "number"):
            yield from self._number(schema, data, path)

    def _combined(
        self, schema: dict[str, Any], data: Any, path: tuple[Any, ...]
    ) -> Iterator[tuple[tuple[Any, ...], str]]:
        for sub in schema.get("allOf", []):
            yield from self.errors(sub, data, path)
        if "anyOf" in schema and not any(self.valid(sub, data, path) for sub in schema["anyOf"]):
            yield path, "matches none of the anyOf schemas"
        if "oneOf" in schema:
            matched = sum(1 for sub in schema["oneOf"] if self.valid(sub, data, path))
            if matched != 1:
                yield path, f"must match exactly one of the oneOf schemas (it matches {matched})"
        if "not" in schema and self.valid(schema["not"], data, path):
            yield path, "must not match the not schema"

    def _object(
        self, schema: dict[str, Any], data: dict[str, Any], path: tuple[Any, ...]
    ) -> Iterator[tuple[tuple[Any, ...], str]]:
        for name in schema.get("required", []):
            if name not in data:
                yield path, f"{name!r} is a required property"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name, value in data.items():
            if name in properties:
                yield from self.errors(properties[name], value, (*path, name))
            elif extra is False:
                yield path, f"{str(name)[:40]!r} is not allowed (additionalProperties is false)"
            elif extra is not True:
                yield from self.errors(extra, value, (*path, name))
        if len(data) < schema.get("minProperties", 0):
            yield path, f"must have at least {schema['minProperties']} properties"
        if "maxProperties" in schema and len(data) > schema["maxProperties"]:
            yield path, f"must have at most {schema['maxProperties']} properties"

    def _array(
        self, schema: dict[str, Any], data: list[Any], path: tuple[Any, ...]
    ) -> Iterator[tuple[tuple[Any, ...], str]]:
        if "items" in schema:
            for index, value in enumerate(data):
                yield from self.errors(schema["items"], value, (*path, index))
        if len(data) < schema.get("minItems", 0):
            yield path, f"must have at least {schema['minItems']} items"
        if "maxItems" in schema and len(data) > schema["maxItems"]:
            yield path, f"must have at most {schema['maxItems']} items"
        if schema.get("uniqueItems") and len({msgspec.json.encode(_normal(v)) for v in data}) < len(data):
            yield path, "must have no repeated items"

    def _number(
        self, schema: dict[str, Any], data: float, path: tuple[Any, ...]
    ) -> Iterator[tuple[tuple[Any, ...], str]]:
        if "minimum" in schema and data < schema["minimum"]:
            yield path, f"must be at least {schema['minimum']}"
        if "maximum" in schema and data > schema["maximum"]:
            yield path, f"must be at most {schema['maximum']}"
        if "exclusiveMinimum" in schema and data <= schema["exclusiveMinimum"]:
            yield path, f"must be above {schema['exclusiveMinimum']}"
        if "exclusiveMaximum" in schema and data >= schema["exclusiveMaximum"]:
            yield path, f"must be below {schema['exclusiveMaximum']}"
        if "multipleOf" in schema:
            ratio = data / schema["multipleOf"]
            if not math.isfinite(ratio) or abs(ratio - round(ratio)) > 1e-9:
                yield path, f"must be a multiple of {schema['multipleOf']}"

    def valid(self, schema: Any, data: Any, path: tuple[Any, ...]) -> bool:
        return next(iter(self.errors(schema, data, path)), None) is None


def json_short(value: Any) -> str:
    return msgspec.json.encode(value).decode()[:60]


def problems(validator: Validator, data: Any) -> list[str]:
    """Why ``data`` does not match, at most ``MAX_PROBLEMS`` lines; empty when it matches."""
    found = list(_Walk(validator.schema).errors(validator.schema, data, ()))
    lines = [f"{pointer(path) or '/'}: {reason}" for path, reason in found[:MAX_PROBLEMS]]
    if len(found) > MAX_PROBLEMS:
        lines.append(f"... and {len(found) - MAX_PROBLEMS} more")
    return lines

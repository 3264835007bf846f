"""Tool schemas every client can read, and no larger than a client needs.

Both kinds of schema pass through here, once, when the tools are declared: inputs as pydantic
writes them (``toolkit.define``), outputs as msgspec writes them (``results.output_schema``).

- **One type per schema.** ``"type": ["string", "null"]`` is valid JSON Schema, but clients whose
  dialect allows one type per schema (Gemini's function calling, for one) refuse the tool, so a
  type list becomes an ``anyOf`` of single types, and an ``enum`` of strings says ``"type":
  "string"``.
- **Nothing a validator ignores.** ``title`` (pydantic's ``"Url"``, msgspec's Struct names) is
  dropped everywhere, and so is ``"default": null``. Output schemas also lose ``description``,
  ``default`` and ``examples``: the tool's description says what the result means, the schema only
  has to check it. Input fields keep their descriptions, which the model reads to fill them.
- **Nullable, the short way.** An optional input is left out, never sent as ``null``, so its
  schema is its one real type (``null`` is still accepted). An output field that is a string,
  number or boolean or ``null`` is left out of ``properties`` (a property not listed is not
  checked): such a field holds no structure to validate, and it cost more than anything else.
  Nullable objects and arrays keep ``anyOf: [..., {"type": "null"}]``.
- **Fewer references.** A ``$defs`` entry used once is written in place of its ``$ref`` (smaller,
  and one thing fewer for a client to resolve); entries used more often, or recursively, stay.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["portable_input", "portable_output"]

_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")
"""Keywords whose value maps names to schemas: the names are not keywords."""
_OUTPUT_ONLY_DROPS = ("description", "default", "examples")


def portable_input(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema with one type per schema, no titles, optional fields without ``null``."""
    return _inline(_nullable(_walk(schema, drops=()), output=False))


def portable_output(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema with one type per schema, validation keywords only, nullable scalars
    unlisted, single-use references written in place; a root ``anyOf`` of one object is that
    object."""
    trimmed = _inline(_nullable(_walk(schema, drops=_OUTPUT_ONLY_DROPS), output=True))
    options = trimmed.get("anyOf")
    if isinstance(options, list) and len(options) == 1 and set(trimmed) <= {"type", "anyOf", "$defs"}:
        only = options[0]
        if isinstance(only, dict) and only.get("type") == "object":
            merged = dict(only)
            if "$defs" in trimmed:
                merged["$defs"] = trimmed["$defs"]
            trimmed = merged
    return trimmed


def _walk(schema: Any, *, drops: tuple[str, ...]) -> Any:
    if isinstance(schema, list):
        return [_walk(item, drops=drops) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: _walk(sub, drops=drops) for name, sub in value.items()}
        elif key == "title" or key in drops or (key == "default" and value is None):
            continue
        elif key in ("enum", "const", "required"):
            out[key] = value
        else:
            out[key] = _walk(value, drops=drops)
    kinds = out.get("type")
    if isinstance(kinds, list):
        del out["type"]
        alternatives = [{"type": kind} for kind in kinds]
        if len(alternatives) == 1:
            out["type"] = kinds[0]
        elif "anyOf" in out:  # both: the value must be one of the types and match the anyOf
            out["allOf"] = [*out.get("allOf", []), {"anyOf": alternatives}]
        else:
            out["anyOf"] = alternatives
    enum = out.get("enum")
    if "type" not in out and isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        out["type"] = "string"
    return out


_SCALARS = frozenset({"string", "number", "integer", "boolean"})
_NULL = {"type": "null"}


def _without_null(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` minus its ``null`` alternative, or ``None`` when it has none."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or _NULL not in options:
        return None
    rest = [option for option in options if option != _NULL]
    if len(rest) == 1 and isinstance(rest[0], dict) and not set(rest[0]) & set(schema):
        return {**{k: v for k, v in schema.items() if k != "anyOf"}, **rest[0]}
    return {**schema, "anyOf": rest}


def _is_nullable_scalar(schema: Any) -> bool:
    options = schema.get("anyOf") if isinstance(schema, dict) else None
    return (
        isinstance(options, list)
        and _NULL in options
        and all(
            option == _NULL or (isinstance(option, dict) and option.get("type") in _SCALARS)
            for option in options
        )
    )


def _nullable(schema: Any, *, output: bool) -> Any:
    """Optional inputs as their one type; nullable scalar outputs unlisted (see the module docstring)."""
    if isinstance(schema, list):
        return [_nullable(item, output=output) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: _nullable(value, output=output) if key not in _MAPS else value for key, value in schema.items()
    }
    for key in _MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _nullable(sub, output=output) for name, sub in out[key].items()}
    properties = out.get("properties")
    if isinstance(properties, dict):
        required = out.get("required", [])
        for name, sub in list(properties.items()):
            if output and _is_nullable_scalar(sub):
                del properties[name]
                required = [field for field in required if field != name]
            elif not output and name not in required and isinstance(sub, dict):
                plain = _without_null(sub)
                if plain is not None:
                    properties[name] = plain
        if required:
            out["required"] = required
        else:
            out.pop("required", None)
    return out


def _refs(schema: Any, counts: dict[str, int]) -> None:
    if isinstance(schema, list):
        for item in schema:
            _refs(item, counts)
    elif isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            counts[name] = counts.get(name, 0) + 1
        for value in schema.values():
            _refs(value, counts)


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """``$defs`` entries referenced once (and not from themselves) written where they are used."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict) or not defs:
        return schema
    counts: dict[str, int] = {}
    _refs(schema, counts)
    once = {
        name for name in defs if counts.get(name) == 1 and f'"#/$defs/{name}"' not in json.dumps(defs[name])
    }

    def place(node: Any, inside: tuple[str, ...] = ()) -> Any:
        if isinstance(node, list):
            return [place(item, inside) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
        if name in once and len(node) == 1:
            if name in inside:  # pragma: no cover - our shapes are not recursive
                raise ValueError(f"recursive schema through {name}")
            return place(defs[name], (*inside, name))
        return {key: place(value, inside) for key, value in node.items() if key != "$defs"}

    out = place(schema)
    kept = {name: place(sub) for name, sub in defs.items() if name not in once}
    if kept:
        out["$defs"] = kept
    return out

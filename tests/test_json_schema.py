"""The extraction schemas' validator (``answers/json_schema.py``): what it refuses, and that it
agrees with ``jsonschema`` (installed here through the MCP SDK, but not on the Worker) on every
case of the supported keywords below."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from vid2context.answers.json_schema import MAX_PROBLEMS, SUPPORTED, check_schema, problems
from vid2context.answers.templates import EXTRACT_TEMPLATES
from vid2context.errors import ErrorCode, VidError

TREE = {
    "type": "object",
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }
    },
    "properties": {"root": {"$ref": "#/$defs/node"}},
}
CASES: list[tuple[dict[str, Any], Any]] = [
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1}),
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1.0}),
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1.5}),
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": True}),
    ({"type": "object", "properties": {"n": {"type": "number"}}}, {"n": "1"}),
    ({"type": "object", "properties": {"s": {"type": ["string", "null"]}}}, {"s": None}),
    ({"type": "object", "required": ["a"]}, {}),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}),
    ({"type": "object", "additionalProperties": {"type": "string"}}, {"b": 2}),
    ({"type": "object", "properties": {"e": {"enum": ["x", 1]}}}, {"e": 1.0}),
    ({"type": "object", "properties": {"e": {"enum": ["x", 1]}}}, {"e": True}),
    ({"type": "object", "properties": {"c": {"const": {"a": [1, 2]}}}}, {"c": {"a": [1, 2]}}),
    ({"type": "object", "properties": {"l": {"type": "array", "minItems": 2}}}, {"l": [1]}),
    ({"type": "object", "properties": {"l": {"type": "array", "maxItems": 1}}}, {"l": [1, 2]}),
    ({"type": "object", "properties": {"l": {"uniqueItems": True}}}, {"l": [1, 1.0]}),
    ({"type": "object", "properties": {"l": {"uniqueItems": True}}}, {"l": [1, True]}),
    ({"type": "object", "properties": {"s": {"minLength": 2, "maxLength": 3}}}, {"s": "a"}),
    ({"type": "object", "properties": {"s": {"minLength": 2, "maxLength": 3}}}, {"s": "abcd"}),
    ({"type": "object", "properties": {"s": {"minLength": 2}}}, {"s": 5}),
    ({"type": "object", "properties": {"x": {"minimum": 0, "exclusiveMaximum": 10}}}, {"x": 10}),
    ({"type": "object", "properties": {"x": {"exclusiveMinimum": 0, "maximum": 10}}}, {"x": 0}),
    ({"type": "object", "properties": {"x": {"multipleOf": 0.5}}}, {"x": 2.5}),
    ({"type": "object", "properties": {"x": {"multipleOf": 3}}}, {"x": 7}),
    ({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"minimum": 5}]}}}, {"x": 3}),
    ({"type": "object", "properties": {"x": {"oneOf": [{"type": "integer"}, {"minimum": 5}]}}}, {"x": 7}),
    ({"type": "object", "properties": {"x": {"allOf": [{"type": "integer"}, {"minimum": 5}]}}}, {"x": 7}),
    ({"type": "object", "properties": {"x": {"not": {"type": "string"}}}}, {"x": "s"}),
    ({"type": "object", "minProperties": 1, "maxProperties": 1}, {"a": 1, "b": 2}),
    ({"type": "object", "properties": {"x": False}}, {"x": 1}),
    (TREE, {"root": {"kids": [{"kids": []}, {"kids": [{"kids": [1]}]}]}}),
    (TREE, {"root": {"kids": [{"kids": []}]}}),
    ({"type": "object", "$ref": "#/$defs/a", "$defs": {"a": {"required": ["z"]}}}, {"y": 1}),
    *((template.schema, {}) for template in EXTRACT_TEMPLATES.values()),
]


@pytest.mark.parametrize(("schema", "data"), CASES)
def test_agrees_with_jsonschema(schema: dict[str, Any], data: Any) -> None:
    ours = problems(check_schema(schema), data)
    theirs = list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    assert (ours == []) == (theirs == []), (ours, [e.message for e in theirs])


def test_problems_name_the_place_not_the_value() -> None:
    schema = EXTRACT_TEMPLATES["products"].schema
    found = problems(check_schema(schema), {"products": [{"name": "secret words", "price": 499}], "x": 1})
    assert "/products/0: 'pros' is a required property" in found
    assert "/products/0/price: must be of type string or null" in found
    assert "/: 'x' is not allowed (additionalProperties is false)" in found
    assert not any("secret words" in line or "499" in line for line in found)
    many = problems(check_schema({"type": "object", "required": [f"f{i}" for i in range(20)]}), {})
    assert len(many) == MAX_PROBLEMS + 1 and many[-1] == f"... and {20 - MAX_PROBLEMS} more"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ([], "not an array"),
        ("object", "not str"),
        (True, "not bool"),
        ({"type": "array"}, '"type": "object"'),
        ({"properties": {}}, '"type": "object"'),
        ({"type": "object", "properties": {"a": {"type": "nope"}}}, "type must be one of"),
        ({"type": "object", "required": "a"}, "required must be an array"),
        ({"type": "object", "properties": {"a": {"minLength": -1}}}, "minLength must be a whole number"),
        ({"type": "object", "properties": {"a": {"multipleOf": 0}}}, "multipleOf must be a number above 0"),
        ({"type": "object", "properties": {"a": 5}}, "not a schema at /properties/a"),
        ({"type": "object", "properties": {"a": {"pattern": "(a+)+$"}}}, "'pattern'"),
        ({"type": "object", "if": {}, "then": {}}, "'if'"),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://schemas.example.com/a.json"}}},
            "not local",
        ),
        ({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}, "not local"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "points at nothing"),
        ({"type": "object", "$dynamicRef": "#meta"}, "'$dynamicRef'"),
    ],
)
def test_refused_schemas_say_why(schema: Any, says: str) -> None:
    with pytest.raises(VidError) as caught:
        check_schema(schema)
    assert caught.value.code is ErrorCode.BAD_REQUEST and says in caught.value.message and caught.value.hint


def test_too_large_and_too_deep() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(VidError) as caught:
        check_schema(deep)
    assert caught.value.code is ErrorCode.BAD_REQUEST and "deeper than 16" in caught.value.message
    with pytest.raises(VidError) as caught:
        check_schema({"type": "object", "description": "x" * 40_000})
    assert caught.value.code is ErrorCode.TOO_LARGE and caught.value.hint


def test_the_supported_keywords_are_the_documented_ones() -> None:
    from pathlib import Path

    page = (Path(__file__).parents[1] / "site" / "_src" / "rest-api.md").read_text()
    assert all(f"`{keyword}`" in page for keyword in SUPPORTED), sorted(
        k for k in SUPPORTED if f"`{k}`" not in page
    )

"""Schemathesis against the real app, in process, from the app's own OpenAPI document.

Every operation the document lists is called with generated inputs (valid and not), YouTube
answering from the recorded fixtures through pytest-httpx, and each answer must: not be a 5xx
other than the contract's answer for an outside failure (never ``internal``),
match its documented schema and content type, have a documented status, and use a status the
contract's table knows. The document is read from the app at test time, so routes added later
are fuzzed without touching this file. Bounded (a few examples per operation) and deterministic
(derandomized): it fails the same way twice, and a fresh app per operation keeps them apart.
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from vid2context.api import create_app
from vid2context.api.openapi import finish
from vid2context.errors import STATUS_BY_CODE
from vid2context.runtime import build_runtime
from vid2context.settings import Settings, load_settings

from .youtube_replay import httpx_callback

MAX_EXAMPLES = 8

# Statuses the contract knows: its error table, plus 405 for a method a route does not take.
CONTRACT_ERROR_STATUSES = frozenset(STATUS_BY_CODE.values()) | {405}


@schemathesis.check
def status_in_contract(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> None:
    """An error status must be one of the contract's, and its body the contract's error body."""
    if response.status_code < 400:
        return
    assert response.status_code in CONTRACT_ERROR_STATUSES, (
        f"status {response.status_code} is not in the contract"
    )
    body = response.json()
    assert set(body) == {"error", "attempts"}, body
    assert STATUS_BY_CODE.get(body["error"]["code"]) in (response.status_code, 400), body
    assert "Traceback" not in response.text


@schemathesis.check
def no_unexpected_server_error(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> None:
    """A 5xx only as the contract's answer for a failure outside the app (no-provider 503, an
    upstream 502, a timeout 504, ...), never ``internal``: schemathesis's own ``not_a_server_error``
    would also refuse those, e.g. a generated ``url=application/xml`` that this runtime, without
    the local providers, rightly answers 503 no-provider."""
    if response.status_code < 500:
        return
    body = response.json()
    code = body["error"]["code"]
    assert code != "internal", f"an internal error: {response.text[:300]}"
    assert STATUS_BY_CODE.get(code) == response.status_code, body


CHECKS = [
    no_unexpected_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    status_in_contract,
]


def _settings() -> Settings:
    return load_settings({"VID2CONTEXT_RATE_LIMIT": "1000000", "VID2CONTEXT_ACCESS_LOG": "0"})


def _operations() -> list[tuple[str, str]]:
    """Every (method, path) the app's document lists, read when the tests are collected."""
    app = create_app(build_runtime(_settings(), http=httpx.AsyncClient()))
    document = finish(app.openapi_schema.to_schema(), _settings())
    methods = ("get", "put", "post", "delete", "patch")
    return [
        (m.upper(), path) for path, item in sorted(document["paths"].items()) for m in methods if m in item
    ]


_ANNOTATIONS = {"type", "description", "title", "examples", "deprecated"}


def _can_be_wrong(operation: dict) -> bool:
    """Whether a schema-violating request exists: a body, a query or header parameter, or a path
    parameter narrower than any string (a path segment is always some string)."""
    if operation.get("requestBody"):
        return True
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        if parameter.get("in") != "path" or schema.get("type") != "string" or set(schema) - _ANNOTATIONS:
            return True
    return False


@pytest.fixture(scope="module")
def document_schema() -> schemathesis.BaseSchema:
    """The app's document, loaded and parsed once for the module (the slow part of setting up)."""
    app = create_app(build_runtime(_settings(), http=httpx.AsyncClient()))
    return schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)


@pytest.fixture
def api_schema(document_schema: schemathesis.BaseSchema, httpx_mock) -> schemathesis.BaseSchema:  # type: ignore[no-untyped-def]
    """The document pointed at a fresh app per test, YouTube answered from the recorded fixtures.

    A fresh app because schemathesis ends an ASGI app's lifespan (closing its runtime: store, job
    queue) when each test ends, so nothing one test started outlives its ``httpx_mock``.
    """
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    document_schema.app = create_app(build_runtime(_settings(), http=httpx.AsyncClient()))
    return document_schema


@pytest.mark.parametrize(("method", "path"), _operations())
def test_api_conforms_to_its_openapi_document(
    api_schema: schemathesis.BaseSchema, method: str, path: str
) -> None:
    """Inputs that fit the schema, then (where any exist) inputs that do not."""
    operation = api_schema[path][method]
    modes = [GenerationMode.POSITIVE]
    if _can_be_wrong(operation.definition.raw):
        modes.append(GenerationMode.NEGATIVE)
    for mode in modes:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=MAX_EXAMPLES,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case: schemathesis.Case) -> None:
            case.call_and_validate(checks=CHECKS)

        try:
            call()
        except Unsatisfiable:
            if mode is GenerationMode.POSITIVE:
                raise
            # e.g. a header whose every value fits: nothing negative to send.

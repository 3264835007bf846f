"""``GET /api/v1/openapi.json``: a valid OpenAPI 3.1 document that tells the truth about the API.

Validated against the OpenAPI 3.1 meta-schema (openapi-spec-validator); every path under
``/api/v1``; health and the document itself open (``security: []``); a bearer scheme that is
required exactly when keys are set; the contract's error body for every error status, checked
against real error answers. The document and the real answers are checked on the Worker's runtime
too (``tests/runtimes.py``): the Worker serves the same document.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
import jsonschema
import pytest
from openapi_spec_validator import validate

from vid2context import __version__
from vid2context.api import create_app
from vid2context.errors import ErrorCode
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

from .runtimes import ON_WORKER_TOO, Runtimes

pytestmark = pytest.mark.anyio

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


@asynccontextmanager
async def api(
    env: Mapping[str, str] | None = None, runtimes: Runtimes | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The app with settings ``env``: on the memory runtime, or on one ``runtimes`` builds (and closes)."""
    settings = {"VID2CONTEXT_ACCESS_LOG": "0", **(env or {})}
    runtime = build_runtime(load_settings(settings)) if runtimes is None else await runtimes.build(settings)
    transport = httpx.ASGITransport(app=create_app(runtime))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            yield http
    finally:
        if runtimes is None:
            await runtime.aclose()


async def document(env: Mapping[str, str] | None = None, runtimes: Runtimes | None = None) -> dict[str, Any]:
    async with api(env, runtimes) as http:
        response = await http.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert "json" in response.headers["content-type"]
    return response.json()


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, m, item[m]) for path, item in doc["paths"].items() for m in METHODS if m in item]


@ON_WORKER_TOO
async def test_document_is_valid_openapi_3_1(runtimes: Runtimes) -> None:
    doc = await document(runtimes=runtimes)
    assert doc["openapi"].startswith("3.1")
    validate(doc)  # the OpenAPI 3.1 meta-schema
    assert doc["info"]["title"] == "vid2context"
    assert doc["info"]["version"] == __version__


async def test_every_path_is_under_api_v1_and_has_an_operation() -> None:
    doc = await document()
    assert "/api/v1/health" in doc["paths"] and "/api/v1/openapi.json" in doc["paths"]
    for path, item in doc["paths"].items():
        assert path.startswith("/api/v1/"), path
        assert any(m in item for m in METHODS), path
    ids = [op["operationId"] for _, _, op in operations(doc) if "operationId" in op]
    assert len(ids) == len(set(ids))


async def test_open_routes_and_bearer_scheme() -> None:
    keyed = await document({"VID2CONTEXT_API_KEYS": "some-key"})
    assert keyed["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": keyed["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    assert keyed["security"] == [{"bearerAuth": []}]
    for path, _, operation in operations(keyed):
        if path in ("/api/v1/health", "/api/v1/openapi.json"):
            assert operation["security"] == []
            assert "401" not in operation["responses"]
        elif path.startswith("/api/v1/bots/"):  # the platform's signature instead of a key
            assert operation["security"] == []
            assert "signature" in operation["responses"]["401"]["description"]
        else:
            assert "security" not in operation  # the document-wide requirement applies
            assert "401" in operation["responses"] and "403" in operation["responses"]
            assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]
    open_doc = await document()
    assert {} in open_doc["security"]  # the key is optional when none is configured
    assert open_doc["paths"]["/api/v1/health"]["get"]["security"] == []


async def test_every_error_response_is_the_contract_error_body() -> None:
    doc = await document({"VID2CONTEXT_API_KEYS": "some-key"})
    error_body = doc["components"]["schemas"]["ErrorBody"]
    assert set(error_body["properties"]["error"]["properties"]["code"]["enum"]) == {
        c.value for c in ErrorCode
    }
    for path, method, operation in operations(doc):
        responses = operation["responses"]
        assert "default" in responses and "500" in responses, (path, method)
        for status, response in responses.items():
            if status == "default" or int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, method, status)
        if path != "/api/v1/health":
            assert "Retry-After" in responses["429"]["headers"]
        if "requestBody" in operation:
            assert "413" in responses


@ON_WORKER_TOO
async def test_real_error_answers_match_the_documented_body(runtimes: Runtimes) -> None:
    doc = await document(runtimes=runtimes)
    schema = {**doc["components"]["schemas"]["ErrorBody"], "components": doc["components"]}
    async with api({"VID2CONTEXT_API_KEYS": "some-key"}, runtimes) as http:
        answers = [
            await http.get("/api/v1/formats"),  # 401 from the middleware
            await http.get("/api/v1/nope", headers={"Authorization": "Bearer some-key"}),  # 404 from Litestar
            await http.get(
                "/api/v1/context", headers={"Authorization": "Bearer some-key"}
            ),  # 400 from a route
            await http.get("/api/v1/openapi.json/extra"),  # the document's own neighbourhood
        ]
    for answer in answers:
        assert answer.status_code >= 400
        jsonschema.validate(answer.json(), schema)
        assert "<html" not in answer.text.lower()


async def test_document_is_served_as_json_only() -> None:
    async with api() as http:
        for path in ("/api/v1", "/api/v1/", "/api/v1/openapi.yaml", "/api/v1/swagger", "/schema"):
            response = await http.get(path)
            assert response.status_code == 404, path
            json.loads(response.text)


async def test_the_library_put_is_documented_with_its_body_and_answers() -> None:
    """``PUT /api/v1/library/{video_id}``: the VideoContext body with its optional embeddings, the
    If-Match header, 201 for a new video, 412 for a stale If-Match and 413 for a body too large."""
    doc = await document()
    operation = doc["paths"]["/api/v1/library/{video_id}"]["put"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/PushedContext"}
    body = doc["components"]["schemas"]["PushedContext"]
    assert {"id", "metadata", "transcript", "embeddings"} <= set(body["properties"])
    assert {"If-Match"} <= {p["name"] for p in operation["parameters"] if p["in"] == "header"}
    assert {"200", "201", "412", "413"} <= set(operation["responses"])
    assert operation["responses"]["412"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "ErrorBody"
    )

"""Markdown negotiation for the docs site (``vid2context.site``), as the contract's "Worker: site
discovery" section says, over a real folder of files read by the local ``SiteFiles`` reader.

The Worker uses the same ``SiteApp`` with a reader over its ``ASSETS`` binding
(tests/test_worker_entry.py drives that path).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from vid2context.site import (
    LINK_HEADER,
    SiteApp,
    is_app_path,
    markdown_candidates,
    page_candidates,
    prefers_markdown,
    site_and_app,
)
from vid2context.site_files import SiteFiles

from .runtimes import serve

pytestmark = pytest.mark.anyio

FILES = {
    "index.html": "<h1>Home</h1>",
    "index.md": "# Home",
    "quick-start.html": "<h1>Quick start</h1>",
    "quick-start.md": "# Quick start",
    "guide/index.html": "<h1>Guide</h1>",
    "guide/index.md": "# Guide",
    "guide/deep.html": "<h1>Deep</h1>",
    "guide/deep.md": "# Deep",
    "html-only.html": "<h1>No twin</h1>",
    "llms.txt": "# vid2context",
    "404.html": "<h1>Not found</h1>",
    "404.md": "# Not found",
    "_src/api.md": "# template",
    ".assetsignore": "_*",
}


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tmp_path / "secret.md").write_text("# outside the site", encoding="utf-8")
    return root


@pytest.fixture
async def site(site_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=SiteApp(SiteFiles(site_dir)))
    async with httpx.AsyncClient(transport=transport, base_url="http://docs.test") as client:
        yield client


@pytest.mark.parametrize(
    ("accept", "markdown"),
    [
        (None, False),
        ("", False),
        ("text/markdown", True),
        ("text/markdown, text/html;q=0.9", True),
        ("text/html, text/markdown", False),  # equal quality: HTML wins the tie
        ("text/html;q=0.5, text/markdown", True),
        ("text/markdown;q=0.9, text/html", False),
        ("text/markdown;q=0.4, text/html;q=0.3", True),
        ("text/markdown;q=0, text/html;q=0", False),
        ("*/*", False),
        ("text/*", False),
        ("text/markdown, */*;q=0.8", True),  # html only through */*, at 0.8
        ("text/markdown;q=0.5, text/*;q=0.9", False),  # html through text/*, at 0.9
        ("text/*;q=0.9, text/html;q=0.1", True),  # markdown 0.9 via text/*; html's own range says 0.1
        ("TEXT/MARKDOWN", True),
        ("text/markdown; charset=utf-8", True),
        ("text/markdown;q=abc", False),  # a malformed q drops the range
        ("text/markdown;q=1.5", False),  # out of range: dropped
        ("application/json", False),
        ("text/plain, text/markdown;q=0.1", True),  # html not acceptable at all
        ("garbage", False),
        (",,,;;;", False),
        ("text/html;level=1, text/markdown", False),
        ("x" * 10_000, False),
    ],
)
def test_which_accept_headers_get_markdown(accept: str | None, markdown: bool) -> None:
    assert prefers_markdown(accept) is markdown


@pytest.mark.parametrize(
    ("path", "candidates"),
    [
        ("/", ["/index.md"]),
        ("/quick-start", ["/quick-start.md", "/quick-start/index.md"]),
        ("/quick-start/", ["/quick-start.md", "/quick-start/index.md"]),
        ("/guide/deep", ["/guide/deep.md", "/guide/deep/index.md"]),
        ("/../etc/passwd", []),
        ("/_src/api", []),
        ("/.git/config", []),
        ("relative", []),
        ("/a\\b", []),
        ("/a\x00b", []),
        ("/" + "a" * 2000, []),
    ],
)
def test_markdown_twins_are_tried_in_the_contract_order(path: str, candidates: list[str]) -> None:
    assert markdown_candidates(path) == candidates


@pytest.mark.parametrize(
    ("path", "accept", "status", "body", "content_type"),
    [
        ("/", None, 200, "<h1>Home</h1>", "text/html; charset=utf-8"),
        ("/", "text/markdown", 200, "# Home", "text/markdown; charset=utf-8"),
        ("/", "*/*", 200, "<h1>Home</h1>", "text/html; charset=utf-8"),
        ("/quick-start", "text/markdown", 200, "# Quick start", "text/markdown; charset=utf-8"),
        ("/quick-start", "text/html", 200, "<h1>Quick start</h1>", "text/html; charset=utf-8"),
        ("/quick-start/", "text/markdown", 200, "# Quick start", "text/markdown; charset=utf-8"),
        ("/guide", "text/markdown", 200, "# Guide", "text/markdown; charset=utf-8"),
        ("/guide/", None, 200, "<h1>Guide</h1>", "text/html; charset=utf-8"),
        ("/guide/deep", "text/markdown", 200, "# Deep", "text/markdown; charset=utf-8"),
        ("/guide/deep", "text/html;q=0.9, text/markdown", 200, "# Deep", "text/markdown; charset=utf-8"),
        # no twin: the HTML is served even to an agent
        ("/html-only", "text/markdown", 200, "<h1>No twin</h1>", "text/html; charset=utf-8"),
        # files by their own name
        ("/quick-start.md", None, 200, "# Quick start", "text/markdown; charset=utf-8"),
        ("/quick-start.html", "text/markdown", 200, "<h1>Quick start</h1>", "text/html; charset=utf-8"),
        ("/llms.txt", None, 200, "# vid2context", "text/plain; charset=utf-8"),
        # missing pages: the site's 404 page, in the asked-for form
        ("/nope", None, 404, "<h1>Not found</h1>", "text/html; charset=utf-8"),
        ("/nope", "text/markdown", 404, "# Not found", "text/markdown; charset=utf-8"),
        ("/guide/nope/", "text/markdown", 404, "# Not found", "text/markdown; charset=utf-8"),
        # never outside the folder, never build inputs or dotfiles
        ("/../secret.md", "text/markdown", 404, "# Not found", "text/markdown; charset=utf-8"),
        ("/_src/api.md", None, 404, "<h1>Not found</h1>", "text/html; charset=utf-8"),
        ("/_src/api", "text/markdown", 404, "# Not found", "text/markdown; charset=utf-8"),
        ("/.assetsignore", None, 404, "<h1>Not found</h1>", "text/html; charset=utf-8"),
    ],
)
async def test_pages_are_negotiated(
    site: httpx.AsyncClient, path: str, accept: str | None, status: int, body: str, content_type: str
) -> None:
    headers = {"accept": accept} if accept is not None else {}
    response = await site.get(path, headers=headers)
    assert response.status_code == status
    assert response.text == body
    assert response.headers["content-type"] == content_type
    assert response.headers["vary"] == "Accept"
    assert int(response.headers["content-length"]) == len(body.encode())


async def test_html_answers_carry_the_discovery_link_and_markdown_answers_do_not(
    site: httpx.AsyncClient,
) -> None:
    html = await site.get("/quick-start")
    assert html.headers["link"] == LINK_HEADER
    assert '</llms.txt>; rel="alternate"; type="text/plain"' in LINK_HEADER
    assert '</api/v1/openapi.json>; rel="service-desc"; type="application/openapi+json"' in LINK_HEADER
    assert '</mcp>; rel="service"' in LINK_HEADER
    markdown = await site.get("/quick-start", headers={"accept": "text/markdown"})
    assert "link" not in markdown.headers


async def test_head_answers_headers_without_a_body(site: httpx.AsyncClient) -> None:
    response = await site.head("/", headers={"accept": "text/markdown"})
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert response.headers["content-length"] == str(len(b"# Home"))


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
async def test_other_methods_are_refused_with_405(site: httpx.AsyncClient, method: str) -> None:
    response = await site.request(method, "/quick-start", content=b"x")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


async def test_a_symlink_cannot_lead_out_of_the_site(site_dir: Path, site: httpx.AsyncClient) -> None:
    os.symlink(site_dir.parent / "secret.md", site_dir / "leak.md")
    response = await site.get("/leak", headers={"accept": "text/markdown"})
    assert response.status_code == 404
    assert "outside" not in response.text


async def test_without_a_404_page_the_answer_is_still_a_plain_404(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>Home</h1>", encoding="utf-8")
    transport = httpx.ASGITransport(app=SiteApp(SiteFiles(tmp_path)))
    async with httpx.AsyncClient(transport=transport, base_url="http://docs.test") as client:
        response = await client.get("/missing", headers={"accept": "text/markdown"})
    assert response.status_code == 404
    assert response.text == "Not found.\n"


@pytest.mark.parametrize(
    ("path", "app"),
    [
        ("/api/v1/health", True),
        ("/api", True),
        ("/mcp", True),
        ("/mcp/", True),
        ("/mcp/server-card", True),
        ("/.well-known/ai-catalog.json", True),
        ("/app", True),
        ("/app/app.js", True),
        ("/apps", False),
        ("/app-screenshot.png", False),
        ("/", False),
        ("/apis", False),
        ("/mcpx", False),
        ("/quick-start", False),
        ("/llms.txt", False),
        ("/api.md", False),
    ],
)
def test_requests_split_between_the_app_and_the_site(path: str, app: bool) -> None:
    assert is_app_path(path) is app


async def test_site_and_app_sends_app_paths_to_the_app_and_the_rest_to_the_site(site_dir: Path) -> None:
    seen: list[str] = []

    async def api(scope, receive, send):  # type: ignore[no-untyped-def]
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"api"})

    app = site_and_app(api, SiteApp(SiteFiles(site_dir)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        assert (await client.get("/api/v1/health")).text == "api"
        assert (await client.get("/mcp")).text == "api"
        assert (await client.get("/", headers={"accept": "text/markdown"})).text == "# Home"
    assert seen == ["/api/v1/health", "/mcp"]


async def test_the_local_server_serves_the_repository_site_beside_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vid2context serve``'s app (``cli.local_app``): the API and the real ``site/`` together."""
    from vid2context.cli import local_app
    from vid2context.site_files import default_site_dir

    monkeypatch.setenv("VID2CONTEXT_HOME", str(tmp_path / "home"))
    site_dir = default_site_dir()
    assert site_dir is not None and (site_dir / "index.md").is_file()
    async with serve(local_app()) as client:  # the app inside its lifespan, which closes the runtime
        markdown = await client.get("/quick-start", headers={"accept": "text/markdown"})
        html = await client.get("/quick-start")
        health = await client.get("/api/v1/health")
    assert markdown.status_code == 200
    assert markdown.content == (site_dir / "quick-start.md").read_bytes()
    assert html.content == (site_dir / "quick-start.html").read_bytes()
    assert html.headers["link"] == LINK_HEADER
    assert health.status_code == 200
    assert health.json()["runtime"] == "local"


@pytest.mark.parametrize(
    ("path", "candidates"),
    [
        ("/", ["/index.html"]),
        ("/quick-start", ["/quick-start.html", "/quick-start/index.html", "/quick-start"]),
        ("/guide/", ["/guide.html", "/guide/index.html"]),
        ("/llms.txt", ["/llms.txt", "/llms.txt.html", "/llms.txt/index.html"]),
        ("/../x", []),
    ],
)
def test_the_likely_file_is_read_first(path: str, candidates: list[str]) -> None:
    """Each read is an ASSETS subrequest on the Worker: a page view costs one when it exists."""
    assert page_candidates(path) == candidates

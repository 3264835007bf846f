"""Build the docs site in ``site/``: Markdown pages, their HTML twins, ``llms.txt`` and ``llms-full.txt``.

    .venv/bin/python scripts/build_site.py [--out DIR]      (``make site``)

Sources, all in ``site/_src/`` (underscore: not served, not uploaded):

    <page>.md      the hand-written pages, one per entry of ``site.toml``
    site.toml      page order, nav labels and descriptions, llms.txt's summary, and the words the
                   generated tables need (error meanings, Worker secrets, MCP client files)
    page.html      the one HTML template (``string.Template``), CSS inline, no JavaScript

A page marks each generated part with a line of its own, ``<!-- generate: NAME -->``; the parts
are made by ``scripts/site_reference.py``, this module places them:

    api            the REST reference, from the OpenAPI document the app serves
                   (``create_app(...)``, ``GET /api/v1/openapi.json``)
    mcp            tools, prompts, resource templates and instructions, read from
                   ``create_mcp(runtime)`` through the SDK's in-process ``Client``
    configuration  every environment variable, from ``settings.SETTINGS``
    errors         every error code and its status, from ``errors.STATUS_BY_CODE``
    mcp-clients    the client configurations in ``local/mcp/``

Everything in ``site/`` outside ``_src/`` is written here and starts with a comment saying so: edit
the sources (or the code the generated parts come from), then rebuild. ``tests/test_site.py``
builds into a temporary folder and fails when the committed files differ.

The output is deterministic: the same sources and the same app give byte-identical files (no
dates, sorted where the inputs have no order of their own). Links between pages are absolute and
extensionless (``/quick-start``); the server answers the HTML twin to browsers and the Markdown
twin to ``Accept: text/markdown`` (``src/vid2context/site.py``). Markdown is rendered by
markdown-it-py (CommonMark plus tables, raw HTML off); headings get ids from ``slugify``.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore

# scripts/ is not a package. ``python scripts/build_site.py`` puts this folder on sys.path already;
# loading this file by path (tests/test_site.py) does not, so add it, last, so that nothing in it can
# shadow an installed module. A plain import then finds the sibling either way, under one name.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)

from site_reference import CONFIG, GENERATORS, ROOT, SOURCES, Inputs, collect, slugify

SITE = ROOT / "site"
NAME = "vid2context"

# Inputs, collect and slugify are site_reference's, re-exported: build() takes Inputs from
# collect(), and headings get their ids from slugify.
__all__ = [
    "PAGES",
    "Inputs",
    "Page",
    "build",
    "collect",
    "heading_ids",
    "main",
    "markdown_links",
    "render_markdown",
    "slugify",
]


# --- the pages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    slug: str
    """File name without extension: ``site/<slug>.md`` and ``site/<slug>.html``."""
    nav: str
    """Label in the navigation and in llms.txt."""
    description: str
    """One sentence for llms.txt and ``<meta name="description">``."""
    in_nav: bool = True
    """False for the 404 page: not in the navigation, llms.txt or llms-full.txt."""

    @property
    def url(self) -> str:
        return "/" if self.slug == "index" else f"/{self.slug}"

    @property
    def markdown_url(self) -> str:
        return f"/{self.slug}.md"


# From site.toml, which site_reference reads (its tables need their words from it too).
PAGES: tuple[Page, ...] = tuple(Page(**entry) for entry in CONFIG["pages"])
SUMMARY: str = CONFIG["summary"]

MARKER = re.compile(r"^<!-- generate: ([a-z-]+) -->$", re.MULTILINE)


# --- Markdown ----------------------------------------------------------------------------------------


def _heading_text(inline: Any) -> str:
    return "".join(
        child.content for child in (inline.children or []) if child.type in ("text", "code_inline")
    )


def _add_heading_ids(state: StateCore) -> None:
    seen: dict[str, int] = {}
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        slug = slugify(_heading_text(tokens[index + 1]))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        token.attrSet("id", slug if count == 0 else f"{slug}-{count + 1}")


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("heading_ids", _add_heading_ids)
    return md


_MD = _markdown()


def render_markdown(text: str) -> str:
    """HTML for a page's Markdown."""
    return _MD.render(text)


def heading_ids(text: str) -> list[str]:
    """The ids the page's headings get (the ``#anchors`` a link may name)."""
    tokens = _MD.parse(text)
    return [t.attrGet("id") for t in tokens if t.type == "heading_open"]  # type: ignore[misc]


def markdown_links(text: str) -> list[str]:
    """Every link target in ``text`` (links and images), in order."""
    found: list[str] = []

    def walk(tokens: Iterable[Any]) -> None:
        for token in tokens:
            if token.type == "link_open":
                found.append(str(token.attrGet("href")))
            elif token.type == "image":
                found.append(str(token.attrGet("src")))
            if token.children:
                walk(token.children)

    walk(_MD.parse(text))
    return found


# --- assembling ----------------------------------------------------------------------------------------


def page_markdown(page: Page, source: str, inputs: Inputs) -> tuple[str, list[str]]:
    """The page's Markdown with its generated parts filled in, and what they came from."""
    used: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise SystemExit(f"build_site: site/_src/{page.slug}.md asks for unknown part {name!r}")
        what, make = GENERATORS[name]
        used.append(what)
        return make(inputs).rstrip("\n")

    text = MARKER.sub(fill, source)
    if "<!--" in text:
        raise SystemExit(f"build_site: site/_src/{page.slug}.md has an HTML comment the build does not know")
    if not text.startswith("# "):
        raise SystemExit(f"build_site: site/_src/{page.slug}.md must start with its '# Title'")
    return text.rstrip("\n") + "\n", used


def _notice(page: Page, used: list[str]) -> str:
    made = f"site/_src/{page.slug}.md" + "".join(f" and {what}" for what in used)
    return f"Generated by scripts/build_site.py from {made}. Edit the sources and rebuild (make site), not this file."


def title_of(markdown: str) -> str:
    return markdown.split("\n", 1)[0].removeprefix("# ").strip()


TEMPLATE = SOURCES / "page.html"
"""The one HTML template (``string.Template``: ``$title``, ``$nav``, ``$body``, ...), CSS inline."""


def page_html(page: Page, markdown: str, notice: str, template: str) -> str:
    title = title_of(markdown)
    current = ' aria-current="page"'
    nav = [
        f'<li><a href="{other.url}"{current if other.slug == page.slug else ""}>{html.escape(other.nav)}</a></li>'
        for other in PAGES
        if other.in_nav
    ]
    return Template(template).substitute(
        notice=html.escape(notice, quote=False),
        title=html.escape(NAME if page.slug == "index" else f"{title} · {NAME}"),
        description=html.escape(page.description),
        markdown_url=page.markdown_url,
        nav="\n".join(nav),
        body=render_markdown(markdown).rstrip("\n"),
    )


def llms_txt(pages: list[Page]) -> str:
    lines = [f"# {NAME}", "", f"> {SUMMARY}", ""]
    lines += [
        (
            "Every page is Markdown at its own path plus `.md` (below), or at its plain path with "
            "`Accept: text/markdown`. Links are relative to the host serving this file."
        ),
        "",
        "## Docs",
        "",
    ]
    lines += [f"- [{p.nav}]({p.markdown_url}): {p.description}" for p in pages]
    lines += [
        "",
        "## Machine-readable",
        "",
        "- [OpenAPI document](/api/v1/openapi.json): OpenAPI 3.1 for every REST route this server answers.",
        "- [MCP server card](/mcp/server-card): the remote MCP endpoint (POST /mcp, Streamable HTTP, stateless).",
        "",
        "## Optional",
        "",
        "- [Everything in one file](/llms-full.txt): every page above, concatenated in this order.",
        "",
    ]
    return "\n".join(lines)


def llms_full(pages: list[Page], bodies: Mapping[str, str]) -> str:
    """Every page in order; a link to an anchor on its own page names the page, as it must once
    the pages share one file."""
    return "\n\n".join(bodies[p.slug].rstrip("\n").replace("](#", f"]({p.url}#") for p in pages) + "\n"


ASSETS_IGNORE = "# Not served: the site build's inputs (scripts/build_site.py).\n_*\n"
"""wrangler uploads everything else in site/ as static assets."""


def render(inputs: Inputs, sources: Path = SOURCES) -> dict[str, str]:
    """Every output file of the site, by path relative to ``site/``."""
    template = (sources / TEMPLATE.name).read_text(encoding="utf-8")
    files: dict[str, str] = {}
    bodies: dict[str, str] = {}
    expected = {f"{page.slug}.md" for page in PAGES}
    present = {path.name for path in sources.glob("*.md")}
    if present != expected:
        raise SystemExit(
            "build_site: site/_src/*.md and the [[pages]] of site.toml disagree: "
            f"missing {sorted(expected - present)}, not in PAGES {sorted(present - expected)}"
        )
    from vid2context.site import is_app_path

    for page in PAGES:
        if is_app_path(page.url):
            raise SystemExit(
                f"build_site: {page.url} is answered by the API app, not the site: rename the page"
            )
        source = (sources / f"{page.slug}.md").read_text(encoding="utf-8")
        markdown, used = page_markdown(page, source, inputs)
        notice = _notice(page, used)
        bodies[page.slug] = markdown
        files[f"{page.slug}.md"] = f"<!-- {notice} -->\n\n{markdown}"
        files[f"{page.slug}.html"] = page_html(page, markdown, notice, template)
    nav_pages = [page for page in PAGES if page.in_nav]
    files["llms.txt"] = llms_txt(nav_pages)
    files["llms-full.txt"] = llms_full(nav_pages, bodies)
    files[".assetsignore"] = ASSETS_IGNORE
    return dict(sorted(files.items()))


STATIC = ("*.png",)
"""Files of ``site/_src`` copied into ``site/`` byte for byte: the web app's screenshot, which
``tests/test_app_browser.py`` takes (``tests/artifacts/app-1280.png``)."""


def static_files(sources: Path = SOURCES) -> dict[str, bytes]:
    """The static files of ``sources``, by name."""
    return {path.name: path.read_bytes() for pattern in STATIC for path in sorted(sources.glob(pattern))}


def outputs(site: Path = SITE) -> set[str]:
    """The files of ``site`` the build owns: everything outside ``_src``."""
    return {
        path.relative_to(site).as_posix()
        for path in site.rglob("*")
        if path.is_file() and not path.relative_to(site).parts[0].startswith("_")
    }


def build(out: Path = SITE, inputs: Inputs | None = None, sources: Path = SOURCES) -> dict[str, str]:
    """Write the site into ``out``; returns the files. Pages the build no longer makes (``.md``,
    ``.html`` and ``.txt`` files at the top of ``out``) are removed, nothing else."""
    files = render(inputs or collect(), sources)
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(outputs(out) - set(files)):
        if "/" not in stale and stale.endswith((".md", ".html", ".txt")):
            (out / stale).unlink()
    for name, text in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    for name, data in static_files(sources).items():
        if not (out / name).exists() or (out / name).read_bytes() != data:
            (out / name).write_bytes(data)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SITE, help="where the site goes; default site/")
    args = parser.parse_args(argv)
    files = build(args.out)
    size = sum(len(text.encode("utf-8")) for text in files.values())
    print(f"build_site: {len(files)} files, {size / 1024:.0f} KiB -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``POST /api/v1/chapters``: chapters for a video that has none, kept with the saved video.

A thin skin over ``autochapters.make_chapters``: the body is read strictly (``decode_body``) and
``lang`` checked as every route checks it, before anything is fetched.
"""

from __future__ import annotations

import msgspec
from litestar import Request, post
from litestar.params import JSONBody

from ..autochapters import ChaptersRequest, ChaptersResult, make_chapters
from .middleware import request_ctx
from .params import BODY_ERRORS, decode_body, parse_lang, runtime_of

__all__ = ["CHAPTER_ROUTES", "post_chapters"]


@post("/api/v1/chapters", status_code=200, exception_handlers=BODY_ERRORS)
async def post_chapters(request: Request, data: JSONBody[ChaptersRequest]) -> ChaptersResult:
    """Cut the transcript where the subject changes (TextTiling: embeddings when an embedding
    rung is set up, shared words otherwise), title each chapter (the language model when one is
    set up, else key phrases), save them with the video: outlines and sections by chapter use
    them when the video has none of its own. A video with chapters is refused unless ``force``."""
    body = await decode_body(request, ChaptersRequest)
    body = msgspec.structs.replace(body, lang=parse_lang(body.lang))
    runtime = runtime_of(request)
    return await make_chapters(runtime, body, ctx=request_ctx(request, runtime))


CHAPTER_ROUTES = [post_chapters]
"""Every handler of this module, for ``create_app``."""

"""``POST /api/v1/uploads``: a media file as ``multipart/form-data`` (field ``file``), kept for
``VID2CONTEXT_UPLOAD_TTL_MIN`` minutes and answered with ``upload:<sha256>``.

The body is read as it arrives and parsed by a push parser (``multipart``, pure Python, the one
Litestar itself uses), so the size cap ``VID2CONTEXT_MAX_UPLOAD_MB`` is enforced while streaming:
nothing beyond the cap plus one chunk is ever held, and a declared ``Content-Length`` over the cap
is refused before a byte is read. Litestar's own multipart support is not used because it
buffers the whole form (in a temporary file) before the handler runs. The JSON body limit of the
middleware does not apply to this route's multipart bodies; Litestar's ``request_max_body_size``
is lifted here for the same reason (this handler is the limit).

Refused with ``bad-request``: a body that is not ``multipart/form-data`` (or has no boundary),
a malformed or truncated form, no ``file`` field, more than one, or an empty file.
"""

from __future__ import annotations

from litestar import Request, post
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody, Schema
from litestar.openapi.spec.enums import OpenAPIFormat, OpenAPIType
from multipart import (
    MultipartSegment,
    ParserError,
    ParserLimitReached,
    PushMultipartParser,
    parse_options_header,
)

from ..errors import ErrorCode, VidError
from ..uploads import UploadInfo, save_upload, too_large
from .params import runtime_of

__all__ = ["FORM_SLACK_BYTES", "upload"]

FORM_SLACK_BYTES = 64 * 1024
"""Room in the body for the form's boundaries, headers and small fields, beyond the file's cap."""
_MAX_PARTS = 16
_HINT = (
    "Send multipart/form-data with the file in a field named `file`, "
    "e.g. `curl -F file=@talk.mp3 http://127.0.0.1:8787/api/v1/uploads`."
)


class _UploadOperation(Operation):
    """The request body Litestar cannot infer, as the handler reads the stream itself."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            description="The media file, in the field `file`.",
            content={
                "multipart/form-data": OpenAPIMediaType(
                    schema=Schema(
                        type=OpenAPIType.OBJECT,
                        required=["file"],
                        properties={"file": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)},
                    )
                )
            },
        )


def _bad(message: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=_HINT)


def _boundary(request: Request) -> str:
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    if kind != "multipart/form-data":
        raise _bad(f"The body must be multipart/form-data, not {kind[:60] or 'missing'}.")
    boundary = options.get("boundary", "")
    if not 1 <= len(boundary) <= 200 or "\n" in boundary or "\r" in boundary:
        raise _bad("The multipart/form-data body has no valid boundary.")
    return boundary


async def _read_file(request: Request, cap: int) -> tuple[bytes, str | None, str | None]:
    """The ``file`` field's bytes, filename and content type, read as the body streams in.

    Stops at the chunk that takes the file past ``cap`` (or the body past ``cap`` plus
    ``FORM_SLACK_BYTES``) with ``too-large``.
    """
    boundary = _boundary(request)
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > cap + FORM_SLACK_BYTES:
        raise too_large(runtime_of(request))
    data = bytearray()
    found: MultipartSegment | None = None
    current: MultipartSegment | None = None
    body_bytes = 0
    try:
        with PushMultipartParser(boundary, max_segment_count=_MAX_PARTS) as parser:
            async for chunk in request.stream():
                body_bytes += len(chunk)
                if body_bytes > cap + FORM_SLACK_BYTES:
                    raise too_large(runtime_of(request))
                for event in parser.parse(chunk):
                    if isinstance(event, MultipartSegment):
                        current = event
                        if event.name == "file":
                            if found is not None:
                                raise _bad(
                                    "The form has more than one `file` field; send one file per upload."
                                )
                            found = event
                    elif event is not None and current is found and found is not None:
                        data += event
                        if len(data) > cap:
                            raise too_large(runtime_of(request))
                    elif event is None:
                        current = None
                if parser.closed:
                    break
            if not parser.closed:
                raise _bad("The multipart/form-data body ends before its closing boundary.")
    except ParserLimitReached:
        raise _bad(f"The form has too many parts or too long headers (at most {_MAX_PARTS} parts).") from None
    except ParserError:
        raise _bad("The multipart/form-data body is malformed.") from None
    if found is None:
        raise _bad("The form has no `file` field.")
    if not data:
        raise VidError(ErrorCode.BAD_REQUEST, "The file is empty.", hint="Send a file with some bytes in it.")
    return bytes(data), found.filename, found.content_type


@post(
    "/api/v1/uploads",
    status_code=201,
    request_max_body_size=None,
    operation_class=_UploadOperation,
    response_description="The upload: pass `input` (upload:<sha256>) as a video input until `expiresAt`.",
)
async def upload(request: Request) -> UploadInfo:
    """Keep a media file for a while; the same bytes uploaded again are the same upload."""
    runtime = runtime_of(request)
    cap = runtime.settings.max_upload_mb * 1024 * 1024
    data, filename, mime = await _read_file(request, cap)
    return await save_upload(runtime, data, filename, mime)

"""``POST /api/v1/uploads`` and the core it stands on (``vid2context.uploads``).

The real app and runtime. Tests that keep something (``ON_EVERY_RUNTIME``) run on each kind of runtime
(memory, the local SQLite stores, the Worker's KV and R2 on Miniflare: ``tests/runtimes.py``); the
expiry tests inject the memory KV's clock so they need not wait (Miniflare's KV keeps real time),
and the parsing refusals run on memory. The size cap is set small through settings
(``VID2CONTEXT_MAX_UPLOAD_MB=1``), and bodies are also streamed chunk by chunk to see that the
route stops reading at the cap.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from vid2context.api import create_app
from vid2context.errors import ErrorCode, VidError
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.storage.base import BlobStore, KvStore
from vid2context.storage.memory import MemoryKv
from vid2context.uploads import clean_filename, clean_mime, get_upload, save_upload, upload_sha

from .runtimes import ON_EVERY_RUNTIME, Runtimes

pytestmark = pytest.mark.anyio

URL = "/api/v1/uploads"
MIB = 1024 * 1024
AUDIO = b"ID3\x04\x00fake mp3 bytes" * 50
SHA = hashlib.sha256(AUDIO).hexdigest()
ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
SETTINGS = {
    "VID2CONTEXT_ACCESS_LOG": "0",
    "VID2CONTEXT_RATE_LIMIT": "0",
    "VID2CONTEXT_MAX_UPLOAD_MB": "1",
    "VID2CONTEXT_UPLOAD_TTL_MIN": "60",
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Api:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.app = create_app(self.runtime)
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://testserver"
        )

    @property
    def kv(self) -> KvStore:
        return self.runtime.kv

    @property
    def blobs(self) -> BlobStore:
        return self.runtime.blobs

    async def upload(
        self, data: bytes, filename: str = "talk.mp3", mime: str | None = "audio/mpeg"
    ) -> httpx.Response:
        file = (filename, data) if mime is None else (filename, data, mime)
        return await self.client.post(URL, files={"file": file})


class ClockedApi(Api):
    """The app on the memory runtime whose KV reads ``clock``: expiry without waiting."""

    def __init__(self) -> None:
        self.clock = Clock()
        super().__init__(build_runtime(load_settings(SETTINGS), kv=MemoryKv(clock=self.clock)))


@pytest.fixture
async def api(runtimes: Runtimes) -> AsyncIterator[Api]:
    """The app on the memory runtime, or on the kind the test runs on."""
    served = Api(await runtimes.build(SETTINGS))
    yield served
    await served.client.aclose()


@pytest.fixture
async def clocked_api() -> AsyncIterator[ClockedApi]:
    served = ClockedApi()
    yield served
    await served.client.aclose()
    await served.runtime.aclose()


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "attempts"} and body["error"]["code"] == code, body
    assert body["error"]["message"] and body["error"].get("hint") and "Traceback" not in response.text
    return body["error"]


# --- success --------------------------------------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_upload_answers_the_contract_shape(api: Api) -> None:
    before = datetime.now(UTC).replace(microsecond=0)  # expiresAt is in whole seconds
    response = await api.upload(AUDIO)
    after = datetime.now(UTC)
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"input", "filename", "bytes", "mimeType", "expiresAt"}
    assert body["input"] == f"upload:{SHA}" and body["filename"] == "talk.mp3"
    assert body["bytes"] == len(AUDIO) and body["mimeType"] == "audio/mpeg"
    assert ISO_Z.fullmatch(body["expiresAt"])
    expires = datetime.strptime(body["expiresAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before + timedelta(hours=1) <= expires <= after + timedelta(hours=1)  # an hour after the upload
    # Where it is kept: the bytes in the blob store, the details in the KV.
    assert (await api.blobs.get_blob(f"blobs/uploads/{SHA}")).data == AUDIO
    assert await api.kv.get(f"uploads:{SHA}") is not None
    info, data = await get_upload(api.runtime, body["input"])
    assert data == AUDIO and info.input == body["input"] and info.filename == "talk.mp3"


async def test_same_bytes_twice_are_one_upload_kept_longer(clocked_api: ClockedApi) -> None:
    api = clocked_api
    first = (await api.upload(AUDIO, "a.mp3")).json()
    api.clock.now += 50 * 60
    second = await api.upload(AUDIO, "b.mp3")
    assert second.status_code == 201
    assert second.json()["input"] == first["input"] and second.json()["filename"] == "b.mp3"
    assert await api.blobs.list_blobs("blobs/uploads/") == [f"blobs/uploads/{SHA}"]
    api.clock.now += 20 * 60  # 70 minutes after the first upload, 20 after the second
    info, data = await get_upload(api.runtime, first["input"])
    assert data == AUDIO and info.filename == "b.mp3"


async def test_expired_uploads_are_not_found_and_their_bytes_are_swept(clocked_api: ClockedApi) -> None:
    api = clocked_api
    old = (await api.upload(AUDIO)).json()
    api.clock.now += 61 * 60
    with pytest.raises(VidError) as caught:
        await get_upload(api.runtime, old["input"])
    assert caught.value.code is ErrorCode.NOT_FOUND and "again" in caught.value.hint
    assert await api.blobs.list_blobs("blobs/uploads/") == []
    # An expired upload nobody asked for is swept by the next upload.
    await api.upload(AUDIO)
    api.clock.now += 61 * 60
    other = await api.upload(b"other bytes")
    assert other.status_code == 201
    assert await api.blobs.list_blobs("blobs/uploads/") == [
        f"blobs/uploads/{hashlib.sha256(b'other bytes').hexdigest()}"
    ]


@ON_EVERY_RUNTIME
async def test_file_exactly_at_the_cap_is_accepted(api: Api) -> None:
    response = await api.upload(b"\x01" * MIB, "big.wav", "audio/wav")
    assert response.status_code == 201, response.text[:300]
    assert response.json()["bytes"] == MIB


@ON_EVERY_RUNTIME
async def test_uploads_are_exempt_from_the_json_body_limit(runtimes: Runtimes) -> None:
    served = Api(await runtimes.build({**SETTINGS, "VID2CONTEXT_MAX_BODY_KB": "1"}))
    try:
        assert (await served.upload(b"z" * 8192)).status_code == 201
        response = await served.client.post(
            URL, content=b"z" * 8192, headers={"Content-Type": "application/json"}
        )
        assert_error(response, 413, "too-large")
    finally:
        await served.client.aclose()


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("../../etc/passwd.mp3", "passwd.mp3"),
        ("C:\\Users\\me\\talk.m4a", "talk.m4a"),
        ("", "upload"),
        ("..", "upload"),
        ("a" * 300 + ".mp3", "a" * 196 + ".mp3"),
    ],
)
async def test_filenames_are_cleaned(api: Api, filename: str, expected: str) -> None:
    response = await api.upload(AUDIO, filename)
    assert response.status_code == 201, response.text
    assert response.json()["filename"] == expected


@pytest.mark.parametrize(
    ("filename", "mime", "expected"),
    [
        ("talk.mp3", None, "audio/mpeg"),
        ("talk.mp3", "application/octet-stream", "audio/mpeg"),
        ("clip.webm", "video/webm; codecs=vp9", "video/webm"),
        ("talk.unknown", None, "application/octet-stream"),
        ("talk.mp3", "not a type\r\nX: y", "audio/mpeg"),
    ],
)
async def test_mime_types(api: Api, filename: str, mime: str | None, expected: str) -> None:
    if mime is not None and "\r" in mime:
        # A header value with a line break cannot be sent by the client library; test the core.
        assert clean_mime(mime, filename) == expected
        return
    response = await api.upload(AUDIO, filename, mime)
    assert response.status_code == 201, response.text
    assert response.json()["mimeType"] == expected


@ON_EVERY_RUNTIME
async def test_other_fields_are_ignored(api: Api) -> None:
    response = await api.client.post(
        URL, data={"note": "hello", "lang": "en"}, files={"file": ("talk.mp3", AUDIO, "audio/mpeg")}
    )
    assert response.status_code == 201, response.text
    assert response.json()["input"] == f"upload:{SHA}"


# --- refusals -------------------------------------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_over_the_cap_is_413(api: Api) -> None:
    error = assert_error(await api.upload(b"\x01" * (MIB + 1)), 413, "too-large")
    assert "1 MiB" in error["message"]
    assert await api.blobs.list_blobs("") == []


async def test_declared_length_over_the_cap_is_refused_before_reading(api: Api) -> None:
    read = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal read
        read += 1
        yield b"--b\r\n"

    response = await api.client.post(
        URL,
        content=body(),
        headers={"Content-Type": "multipart/form-data; boundary=b", "Content-Length": str(3 * MIB)},
    )
    assert_error(response, 413, "too-large")
    assert read <= 1


@ON_EVERY_RUNTIME
async def test_a_streamed_body_is_cut_at_the_cap(api: Api) -> None:
    """Without Content-Length the route counts as it reads and stops at the chunk past the cap."""
    sent = 0
    chunk = b"\x02" * (64 * 1024)

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.mp3"\r\n\r\n'
        for _ in range(64):  # 4 MiB, far over the 1 MiB cap
            sent += 1
            yield chunk
        yield b"\r\n--b--\r\n"

    response = await api.client.post(
        URL, content=body(), headers={"Content-Type": "multipart/form-data; boundary=b"}
    )
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "too-large")
    assert sent <= 18  # the cap (16 chunks) plus the one that crossed it, give or take the parser
    assert await api.blobs.list_blobs("") == []


MULTIPART = "multipart/form-data; boundary=b"


@pytest.mark.parametrize(
    ("content", "content_type", "why"),
    [
        (b"", None, "no body, no type"),
        (b'{"file": "abc"}', "application/json", "JSON"),
        (b"file=abc", "application/x-www-form-urlencoded", "urlencoded"),
        (b"abc", "text/plain", "plain text"),
        (b"--b--\r\n", "multipart/form-data", "no boundary"),
        (b"--b--\r\n", 'multipart/form-data; boundary=""', "empty boundary"),
        (b"", MULTIPART, "empty multipart"),
        (b"garbage without boundaries", MULTIPART, "garbage"),
        (
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\nabc',
            MULTIPART,
            "truncated",
        ),
        (
            b'--b\r\nContent-Disposition: form-data; name="other"\r\n\r\nabc\r\n--b--\r\n',
            MULTIPART,
            "no file field",
        ),
        (
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\n\r\n--b--\r\n',
            MULTIPART,
            "empty file",
        ),
        (
            (
                b'--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nx\r\n'
                b'--b\r\nContent-Disposition: form-data; name="file"; filename="b"\r\n\r\ny\r\n--b--\r\n'
            ),
            MULTIPART,
            "two files",
        ),
        (
            b"".join(b'--b\r\nContent-Disposition: form-data; name="f%d"\r\n\r\nx\r\n' % i for i in range(40))
            + b"--b--\r\n",
            MULTIPART,
            "too many parts",
        ),
        (
            b'--b\r\nContent-Disposition: form-data; name="file"\r\nX: '
            + b"h" * 10_000
            + b"\r\n\r\nx\r\n--b--\r\n",
            MULTIPART,
            "10 kB header",
        ),
    ],
)
async def test_bad_bodies_are_bad_requests(
    api: Api, content: bytes, content_type: str | None, why: str
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = await api.client.post(URL, content=content, headers=headers)
    assert_error(response, 400, "bad-request")
    assert await api.blobs.list_blobs("") == [], why


async def test_wrong_method_is_405(api: Api) -> None:
    response = await api.client.get(URL)
    assert response.status_code == 405 and response.json()["error"]["code"] == "bad-request"


# --- the core -------------------------------------------------------------------------------------


async def test_core_save_refuses_empty_and_oversized(api: Api) -> None:
    with pytest.raises(VidError) as caught:
        await save_upload(api.runtime, b"", "a.mp3", "audio/mpeg")
    assert caught.value.code is ErrorCode.BAD_REQUEST
    with pytest.raises(VidError) as caught:
        await save_upload(api.runtime, b"x" * (MIB + 1), "a.mp3", None)
    assert caught.value.code is ErrorCode.TOO_LARGE


@pytest.mark.parametrize(
    ("reference", "code"),
    [
        ("upload:" + "0" * 64, ErrorCode.NOT_FOUND),
        ("0" * 64, ErrorCode.NOT_FOUND),
        ("upload:xyz", ErrorCode.BAD_REQUEST),
        ("upload:" + "0" * 63, ErrorCode.BAD_REQUEST),
        ("upload:" + "0" * 64 + "/../x", ErrorCode.BAD_REQUEST),
        ("", ErrorCode.BAD_REQUEST),
        ("upload:" + "g" * 64, ErrorCode.BAD_REQUEST),
    ],
)
@ON_EVERY_RUNTIME
async def test_core_get_refuses_unknown_and_malformed(api: Api, reference: str, code: ErrorCode) -> None:
    with pytest.raises(VidError) as caught:
        await get_upload(api.runtime, reference)
    assert caught.value.code is code and caught.value.hint


@ON_EVERY_RUNTIME
async def test_core_reads_its_own_references(api: Api) -> None:
    info = await save_upload(api.runtime, AUDIO, "Talk.MP3", None)
    assert info.mime_type == "audio/mpeg"
    assert (
        upload_sha(info.input) == SHA and upload_sha(info.input.upper().replace("UPLOAD:", "upload:")) == SHA
    )
    assert (await get_upload(api.runtime, SHA))[1] == AUDIO


@ON_EVERY_RUNTIME
async def test_a_record_without_bytes_is_not_found(api: Api) -> None:
    info = (await api.upload(AUDIO)).json()
    await api.blobs.delete_blob(f"blobs/uploads/{SHA}")
    with pytest.raises(VidError) as caught:
        await get_upload(api.runtime, info["input"])
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_clean_filename_keeps_the_extension_of_long_names() -> None:
    assert clean_filename("x" * 500 + ".flac").endswith(".flac")
    assert len(clean_filename("x" * 500 + ".flac")) == 200
    assert clean_filename(None) == "upload"
    assert clean_filename("bad\x00name\r\n.mp3") == "badname.mp3"
    assert clean_filename("\u202etxt.mp3") == "txt.mp3"  # no bidi overrides either

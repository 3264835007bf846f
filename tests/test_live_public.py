"""Live streams in public mode, past the first check: a playlist at a public address whose
segments are at a private one is refused while it plays, and no ffmpeg is left.

The resolver and dialer are ``egress_standins``' (``media.example.com`` a public address mapped to
a stand-in on 127.0.0.1, ``internal.example.com`` a private one mapped to a "secret" stand-in), so
only the guard stands between the real ffmpeg and the secret. (A stream given at a loopback
address is refused before anything is fetched: ``test_live.py``.)
"""

from __future__ import annotations

import httpx
import pytest

from vid2context.ctx import Ctx
from vid2context.egress import Egress
from vid2context.errors import ErrorCode, VidError
from vid2context.live import live_events, prepare_live
from vid2context.live.ffmpeg_live import FfmpegLive
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

from .egress_standins import PUBLIC, MappedDialer, MappedResolver, Route, Site
from .fake_whisper import FakeWhisper
from .test_live import fake, gone, temporary  # noqa: F401 (fixtures)
from .test_stt_ladder import openai_env

pytestmark = pytest.mark.anyio

PRIVATE = "10.0.0.7"
URL = "http://media.example.com/live.m3u8"
LIVE = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\nhttp://internal.example.com/seg0.ts\n"
HLS = {"Content-Type": "application/vnd.apple.mpegurl"}


async def test_a_segment_at_a_private_address_is_refused_mid_stream(
    fake: FakeWhisper,  # noqa: F811
    temporary,  # noqa: F811
) -> None:
    with (
        Site({"/live.m3u8": Route(200, LIVE.encode(), HLS)}) as public,
        Site({"/seg0.ts": Route(200, b"the contents of an internal service")}) as secret,
    ):
        dialer = MappedDialer({(PUBLIC, 80): public.address, (PRIVATE, 80): secret.address})
        names = {"media.example.com": [PUBLIC], "internal.example.com": [PRIVATE]}
        egress = Egress(resolver=MappedResolver(names), dialer=dialer)
        runtime = build_runtime(
            load_settings({**openai_env(fake), "VID2CONTEXT_PUBLIC": "1"}), http=httpx.AsyncClient()
        )
        runtime.stt_plan.prep = FfmpegPrep()
        runtime.live = FfmpegLive(runtime.http, egress=egress)
        events = []
        try:
            ctx = Ctx(timeout=120)
            watch = await prepare_live(runtime, URL, 1, ctx)  # the playlist is public, and live
            assert watch.media == URL
            public.routes["/live.m3u8"] = Route(200, (LIVE + "#EXT-X-ENDLIST\n").encode(), HLS)  # it ends
            with pytest.raises(VidError) as caught:
                async for event in live_events(runtime, watch, ctx):
                    events.append(event)
        finally:
            await runtime.aclose()
            await egress.aclose()
        await gone(URL, temporary)  # no ffmpeg reads it, its folder is gone
    error = caught.value
    assert error.code is ErrorCode.UNSUPPORTED_INPUT, error
    assert "private network" in str(error.hints) and PRIVATE not in error.message + str(error.hints)
    assert [e.name for e in events] == ["status"]  # live, then nothing was heard
    assert secret.requests == [] and (PRIVATE, 80) not in dialer.dialed
    assert "/live.m3u8" in public.paths()

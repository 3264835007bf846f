"""Chat bots end to end: signed webhooks in, replies out through the platforms' stand-ins
(``fake_chat.py``), on the memory runtime and on the Worker's (Miniflare's D1, KV and R2).

Signatures are checked against known vectors: Slack's own example from "Verifying requests from
Slack", and RFC 8032's first Ed25519 test key for Discord. The videos are the made-up talks of
``talks.py`` saved in the library, and questions go to the language-model stand-in
(``fake_llm.py``), so nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from vid2context.api import create_app
from vid2context.bots.kind import queue_reply
from vid2context.bots.message import LIMITS, Message, Part, render
from vid2context.bots.signatures import check_discord, check_slack, slack_signature
from vid2context.errors import ErrorCode, VidError
from vid2context.runtime import Runtime

from .fake_chat import DISCORD_APP, DISCORD_TOKEN, SLACK_TOKEN, TELEGRAM_TOKEN, FakeChat
from .fake_llm import FakeLlm, Request, source_numbers
from .runtimes import ON_WORKER_TOO, Runtimes
from .talks import bike_review, three_hour_talk

pytestmark = pytest.mark.anyio

TELEGRAM_SECRET = "tg-webhook-secret-0123456789"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # Slack's documented example secret
RFC8032_SECRET = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
RFC8032_EMPTY_SIGNATURE = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
BIKE_URL = f"https://www.youtube.com/watch?v={bike_review().metadata.id}"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
API = "https://edge.example/api/v1"


# --- signatures, with known vectors ----------------------------------------------------------------


def test_slack_signature_matches_slacks_documented_example() -> None:
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&"
        b"channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&"
        b"response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
        b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    assert slack_signature(SLACK_SECRET, "1531420618", body) == expected
    check_slack(SLACK_SECRET, expected, "1531420618", body, now=1531420618 + 60)
    for signature, stamp, now in [
        ("v0=" + "0" * 64, "1531420618", 1531420618),  # forged
        (expected, "1531420618", 1531420618 + 301),  # stale: replayed past five minutes
        (expected, "1531420619", 1531420619),  # another timestamp than was signed
        (None, "1531420618", 1531420618),
        (expected, "not-a-number", 1531420618),
    ]:
        with pytest.raises(VidError) as caught:
            check_slack(SLACK_SECRET, signature, stamp, body, now=now)
        assert caught.value.code is ErrorCode.UNAUTHORIZED and SLACK_SECRET not in caught.value.message


def test_discord_signature_checks_rfc8032s_first_vector() -> None:
    key = Ed25519PrivateKey.from_private_bytes(RFC8032_SECRET)
    assert key.sign(b"").hex() == RFC8032_EMPTY_SIGNATURE  # the RFC's own answer: the key is that key
    stamp = str(int(time.time()))
    body = b'{"type":1}'
    check_discord(RFC8032_PUBLIC, key.sign(stamp.encode() + body).hex(), stamp, body)
    for signature, timestamp, sent in [
        (key.sign(stamp.encode() + body).hex(), stamp, b'{"type":2}'),  # a body changed after signing
        ("00" * 64, stamp, body),
        ("not hex", stamp, body),
        (key.sign(b"1000" + body).hex(), "1000", body),  # validly signed, but long ago
    ]:
        with pytest.raises(VidError) as caught:
            check_discord(RFC8032_PUBLIC, signature, timestamp, sent)
        assert caught.value.code is ErrorCode.UNAUTHORIZED


# --- what a reply looks like -------------------------------------------------------------------------


def test_titles_and_captions_stay_text_on_every_platform() -> None:
    hostile = "<b>bold</b> & <script>alert(1)</script> *stars* [x](http://evil) <@U1> @everyone"
    message = Message().add(Part(hostile, "https://www.youtube.com/watch?v=a&t=5s")).add(hostile)
    telegram = render(message, "telegram")
    assert "<script>" not in telegram and "&lt;b&gt;" in telegram and telegram.count("<a href=") == 1
    slack = render(message, "slack")
    assert "<script>" not in slack and "<@U1>" not in slack and "&lt;@U1&gt;" in slack
    discord = render(message, "discord")
    assert (
        "[x](http://evil)" not in discord and "\\[x\\]" in discord and "(<https://www.youtube.com" in discord
    )


@pytest.mark.parametrize("platform", sorted(LIMITS))
def test_a_long_reply_fits_the_platforms_limit(platform: str) -> None:
    message = Message()
    for i in range(2000):
        message.add(Part(f"[{i}:00]", f"https://www.youtube.com/watch?v=a&t={i * 60}s"), f" Chapter {i}")
    text = render(message, platform)
    assert len(text) <= LIMITS[platform]
    assert "more lines" in text.splitlines()[-1]
    single = render(Message().add("word " * 5000), platform)
    assert len(single) <= LIMITS[platform]


# --- the webhooks, on both runtimes ---------------------------------------------------------------------


def citing(request: Request) -> str:
    """Cites the first source, and one that was never given."""
    return f"It is a folding e-bike [1]. It flies [{len(source_numbers(request)) + 4}]."


@pytest.fixture
def chat() -> Iterator[FakeChat]:
    with FakeChat() as server:
        yield server


@pytest.fixture
def llm() -> Iterator[FakeLlm]:
    with FakeLlm(reply=citing) as server:
        yield server


def settings_for(chat: FakeChat, llm: FakeLlm | None = None) -> dict[str, str]:
    environ = QUIET | {
        "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
        "VID2CONTEXT_TELEGRAM_SECRET": TELEGRAM_SECRET,
        "VID2CONTEXT_TELEGRAM_ORIGIN": chat.origin,
        "DISCORD_PUBLIC_KEY": RFC8032_PUBLIC,
        "VID2CONTEXT_DISCORD_ORIGIN": chat.origin + "/discord",
        "SLACK_SIGNING_SECRET": SLACK_SECRET,
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
        "VID2CONTEXT_SLACK_ORIGIN": chat.origin + "/slack",
        "VID2CONTEXT_SLACK_HOOKS_ORIGIN": chat.origin + "/hooks",
        "VID2CONTEXT_API_KEYS": "some-key-the-platforms-never-send",
    }
    if llm is not None:
        environ |= {"VID2CONTEXT_LLM_URL": llm.url + "/v1", "VID2CONTEXT_LLM_MODEL": "llama3.2"}
    return environ


class Bots:
    """The app over ASGI, with each platform's way of signing a request."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url=API)
        self.discord_key = Ed25519PrivateKey.from_private_bytes(RFC8032_SECRET)

    async def telegram(self, update: dict[str, Any], secret: str | None = TELEGRAM_SECRET) -> httpx.Response:
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
        return await self.client.post("/bots/telegram", json=update, headers=headers)

    async def discord(self, interaction: dict[str, Any], *, stamp: str | None = None) -> httpx.Response:
        body = json.dumps(interaction).encode()
        stamp = stamp or str(int(time.time()))
        signature = self.discord_key.sign(stamp.encode() + body).hex()
        headers = {
            "X-Signature-Ed25519": signature,
            "X-Signature-Timestamp": stamp,
            "Content-Type": "application/json",
        }
        return await self.client.post("/bots/discord", content=body, headers=headers)

    async def slack(self, path: str, body: bytes, content_type: str, *, stamp: int | None = None,
                    **headers: str) -> httpx.Response:  # fmt: skip
        when = str(stamp if stamp is not None else int(time.time()))
        signed = {
            "X-Slack-Request-Timestamp": when,
            "X-Slack-Signature": slack_signature(SLACK_SECRET, when, body),
            "Content-Type": content_type,
        }
        return await self.client.post(path, content=body, headers=signed | headers)


@pytest.fixture
async def bots(runtimes: Runtimes, chat: FakeChat, llm: FakeLlm) -> AsyncIterator[Bots]:
    runtime = await runtimes.build(settings_for(chat, llm))
    await runtime.storage.put_context(bike_review())
    made = Bots(runtime)
    yield made
    await made.client.aclose()


def telegram_update(text: str) -> dict[str, Any]:
    return {
        "update_id": 1,
        "message": {"message_id": 7, "chat": {"id": 4242, "type": "private"}, "text": text},
    }


@ON_WORKER_TOO
async def test_a_pasted_link_on_telegram_gets_the_outline_with_links(bots: Bots, chat: FakeChat) -> None:
    response = await bots.telegram(telegram_update(f"have a look {BIKE_URL}"))
    assert response.status_code == 200, response.text
    [(platform, path, body)] = await chat.wait_for(1)
    assert platform == "telegram" and body["chat_id"] == 4242 and body["parse_mode"] == "HTML"
    assert body["reply_parameters"]["message_id"] == 7
    text = body["text"]
    assert bike_review().metadata.title in text
    chapters = bike_review().metadata.chapters
    assert all(chapter.title in text for chapter in chapters)
    assert f'<a href="{BIKE_URL}&amp;t=' in text  # each [m:ss] opens the video at that moment
    job = await queue_reply(bots.runtime, "telegram", "hi", {"chatId": 987654321})
    auth = {"Authorization": "Bearer some-key-the-platforms-never-send"}
    read = await bots.client.get(f"/jobs/{job.id}", headers=auth)
    assert read.status_code == 200 and "bot_reply" in read.text
    assert "987654321" not in read.text and TELEGRAM_TOKEN not in read.text  # where replies go is not in it


@ON_WORKER_TOO
async def test_a_question_gets_a_checked_answer_and_an_invented_citation_is_not_linked(
    bots: Bots, chat: FakeChat
) -> None:
    await bots.telegram(telegram_update(f"{BIKE_URL} what kind of bike is it?"))
    [(_, _, body)] = await chat.wait_for(1)
    text = body["text"]
    assert "It is a folding e-bike [1]." in text
    assert "Sources:" in text and "[1] " in text
    assert "1 citation matched no source and was removed" in text
    assert "It flies [" not in text  # the invented [n] is gone, never a link


@ON_WORKER_TOO
async def test_telegram_refuses_what_telegram_did_not_send(bots: Bots, chat: FakeChat) -> None:
    update = telegram_update(BIKE_URL)
    for secret in (None, "wrong", TELEGRAM_SECRET + "x"):
        refused = await bots.telegram(update, secret=secret)
        assert refused.status_code == 401
        assert refused.json()["error"]["hint"] and TELEGRAM_SECRET not in refused.text
    huge = await bots.client.post(
        "/bots/telegram",
        content=b'{"message": {"text": "' + b"a" * (5 * 1024 * 1024) + b'"}}',
        headers={"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET, "Content-Type": "application/json"},
    )
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "too-large"
    broken = await bots.client.post(
        "/bots/telegram", content=b"{nope", headers={"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    )
    assert broken.status_code == 400 and "Traceback" not in broken.text
    ignored = await bots.telegram({"update_id": 2, "edited_message": {"chat": {"id": 1}}})
    assert ignored.status_code == 200
    assert chat.attempts == []  # nothing was answered


@ON_WORKER_TOO
async def test_discord_ping_and_a_slash_command(bots: Bots, chat: FakeChat) -> None:
    ping = await bots.discord({"type": 1})
    assert ping.status_code == 200 and ping.json() == {"type": 1}
    command = {
        "type": 2,
        "application_id": DISCORD_APP,
        "token": DISCORD_TOKEN,
        "data": {"name": "video", "options": [{"name": "url", "type": 3, "value": BIKE_URL}]},
    }
    deferred = await bots.discord(command)
    assert deferred.status_code == 200 and deferred.json() == {"type": 5}
    [(platform, path, body)] = await chat.wait_for(1)
    assert platform == "discord" and path.endswith(
        f"/webhooks/{DISCORD_APP}/{DISCORD_TOKEN}/messages/@original"
    )
    assert len(body["content"]) <= 2000 and f"(<{BIKE_URL}&t=" in body["content"]
    assert body["allowed_mentions"] == {"parse": []}


@ON_WORKER_TOO
async def test_discord_refuses_forged_and_stale_requests(bots: Bots) -> None:
    body = b'{"type":1}'
    forged = await bots.client.post(
        "/bots/discord",
        content=body,
        headers={"X-Signature-Ed25519": "00" * 64, "X-Signature-Timestamp": str(int(time.time()))},
    )
    assert forged.status_code == 401
    stale = await bots.discord({"type": 1}, stamp=str(int(time.time()) - 3600))
    assert stale.status_code == 401
    unknown = await bots.discord({"type": 99})
    assert unknown.status_code == 400 and unknown.json()["error"]["hint"]


@ON_WORKER_TOO
async def test_slack_events_verify_the_url_answer_mentions_in_thread_and_skip_retries(
    bots: Bots, chat: FakeChat
) -> None:
    challenge = json.dumps(
        {"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
    ).encode()
    answered = await bots.slack("/bots/slack/events", challenge, "application/json")
    assert answered.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
    event = {
        "type": "event_callback",
        "event": {
            "type": "app_mention",
            "text": f"<@U0LAN0Z89> <{BIKE_URL}>",
            "channel": "C2147483705",
            "ts": "1355517523.000005",
        },
    }
    body = json.dumps(event).encode()
    assert (await bots.slack("/bots/slack/events", body, "application/json")).status_code == 200
    retry = await bots.slack("/bots/slack/events", body, "application/json", **{"X-Slack-Retry-Num": "1"})
    assert retry.status_code == 200
    own = json.dumps({"type": "event_callback", "event": event["event"] | {"bot_id": "B1"}}).encode()
    assert (await bots.slack("/bots/slack/events", own, "application/json")).status_code == 200
    [(platform, path, posted)] = await chat.wait_for(1)
    assert path == "/slack/chat.postMessage" and posted["channel"] == "C2147483705"
    assert posted["thread_ts"] == "1355517523.000005"
    assert f"<{BIKE_URL}&amp;t=" in posted["text"]
    stale = await bots.slack("/bots/slack/events", body, "application/json", stamp=int(time.time()) - 600)
    assert stale.status_code == 401
    assert len(chat.sent) == 1  # the retry and the bot's own message were not answered


@ON_WORKER_TOO
async def test_a_slack_command_is_acknowledged_then_answered_at_its_response_url(
    bots: Bots, chat: FakeChat
) -> None:
    hook = chat.origin + "/hooks/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN"
    form = urlencode(
        {"command": "/video", "text": BIKE_URL, "response_url": hook, "channel_id": "C1"}
    ).encode()
    ack = await bots.slack("/bots/slack/commands", form, "application/x-www-form-urlencoded")
    assert ack.status_code == 200 and ack.json()["response_type"] == "ephemeral"
    [(_, path, posted)] = await chat.wait_for(1)
    assert path.startswith("/hooks/commands/") and posted["response_type"] == "in_channel"
    elsewhere = urlencode(
        {"text": BIKE_URL, "response_url": "http://169.254.169.254/latest/meta-data"}
    ).encode()
    refused = await bots.slack("/bots/slack/commands", elsewhere, "application/x-www-form-urlencoded")
    assert refused.status_code == 400 and "hooks" in refused.json()["error"]["hint"]


@ON_WORKER_TOO
async def test_a_rate_limited_reply_is_sent_after_the_wait(bots: Bots, chat: FakeChat) -> None:
    chat.limit_next(1, retry_after=1)
    await bots.telegram(telegram_update(BIKE_URL))
    [(platform, _, _)] = await chat.wait_for(1)
    assert platform == "telegram" and len(chat.attempts) == 2


async def test_a_long_outline_fits_discords_2000_characters(bots: Bots, chat: FakeChat) -> None:
    long = three_hour_talk()
    await bots.runtime.storage.put_context(long)
    command = {
        "type": 2,
        "application_id": DISCORD_APP,
        "token": DISCORD_TOKEN,
        "data": {
            "options": [{"name": "url", "value": f"https://www.youtube.com/watch?v={long.metadata.id}"}]
        },
    }
    await bots.discord(command)
    [(_, _, body)] = await chat.wait_for(1)
    assert len(body["content"]) <= 2000


async def test_an_unset_platform_is_no_provider(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(runtime)), base_url=API
    ) as client:
        for path in ("/bots/telegram", "/bots/discord", "/bots/slack/events", "/bots/slack/commands"):
            response = await client.post(path, content=b"{}")
            assert response.status_code == 503, path
            error = response.json()["error"]
            assert error["code"] == "no-provider" and "Chat bots" in error["hint"]


async def test_bot_reply_jobs_cannot_be_aimed_anywhere(bots: Bots) -> None:
    key = "some-key-the-platforms-never-send"
    response = await bots.client.post(
        "/jobs",
        json={"kind": "bot_reply", "input": {"platform": "slack", "text": "hi", "replyKey": "guess"}},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "not-found"

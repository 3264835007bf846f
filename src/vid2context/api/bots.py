"""The chat platforms' webhooks: ``POST /api/v1/bots/telegram``, ``/bots/discord``,
``/bots/slack/events`` and ``/bots/slack/commands``.

No API key (a platform cannot send ours): each route checks the platform's signature over the raw
body first (``bots/signatures.py``), and a platform that is not set up here is ``503
no-provider`` naming its settings. Then the route answers at once, as the platform wants
(Discord and Slack give 3 s), and queues a ``bot_reply`` job (``bots/kind.py``) that builds the
answer and posts it through the platform's API. What is not a message for the bot (a Telegram
update without text, a Slack event from a bot or a retry of one already queued) is answered
``200`` and left alone, so the platform does not send it again.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

import msgspec
from litestar import Request, Response, post

from ..bots.kind import queue_reply
from ..bots.platforms import target_problem
from ..bots.signatures import check_discord, check_slack, check_telegram
from ..errors import ErrorCode, VidError
from ..settings import Settings
from .params import runtime_of

__all__ = ["BOT_ROUTES"]

_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|[^>]*)?>")
_SLACK_MENTION = re.compile(r"<[@#!][^>]*>")
_OK = Response(content=b"{}", media_type="application/json")


def _not_set_up(platform: str, settings: tuple[str, ...]) -> VidError:
    names = " and ".join(settings)
    return VidError(
        ErrorCode.NO_PROVIDER,
        f"The {platform} bot is not set up on this server.",
        hint=f"Tell the user to set {names} on the server (the Chat bots page says how); do not retry until then.",
    )


def _json(body: bytes) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError:
        value = None
    if not isinstance(value, dict):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "The body is not a JSON object.",
            hint="Send the platform's own JSON payload, unchanged.",
        )
    return value


def _require(settings: Settings, platform: str, *names: str) -> None:
    missing = [name for name in names if not getattr(settings, name)]
    if missing:
        env = {
            "telegram_bot_token": "TELEGRAM_BOT_TOKEN",
            "telegram_secret": "VID2CONTEXT_TELEGRAM_SECRET",
            "discord_public_key": "DISCORD_PUBLIC_KEY",
            "slack_signing_secret": "SLACK_SIGNING_SECRET",
            "slack_bot_token": "SLACK_BOT_TOKEN",
        }
        raise _not_set_up(platform, tuple(env[name] for name in names))


@post("/api/v1/bots/telegram", status_code=200)
async def telegram_webhook(request: Request) -> Response[bytes]:
    """A Telegram update (``setWebhook`` with ``secret_token``): checked against
    ``X-Telegram-Bot-Api-Secret-Token``; a message's text is answered in its chat."""
    runtime = runtime_of(request)
    settings = runtime.settings
    _require(settings, "Telegram", "telegram_bot_token", "telegram_secret")
    check_telegram(settings.telegram_secret or "", request.headers.get("x-telegram-bot-api-secret-token"))
    update = _json(await request.body())
    message = update.get("message") or update.get("channel_post")
    if not isinstance(message, dict) or not isinstance(message.get("text"), str):
        return _OK
    chat = message.get("chat") or {}
    if not isinstance(chat, dict) or not isinstance(chat.get("id"), int):
        return _OK
    target = {"chatId": chat["id"], "replyTo": message.get("message_id")}
    await queue_reply(runtime, "telegram", message["text"], target)
    return _OK


def _discord_text(data: dict[str, Any]) -> str:
    options = data.get("options") if isinstance(data.get("options"), list) else []
    values = [
        str(option.get("value")) for option in options if isinstance(option, dict) and "value" in option
    ]
    return " ".join(values)


@post("/api/v1/bots/discord", status_code=200)
async def discord_interaction(request: Request) -> Response[bytes]:
    """A Discord interaction (the application's Interactions Endpoint URL): ``X-Signature-Ed25519``
    checked against ``DISCORD_PUBLIC_KEY``; ``PING`` answered ``{"type": 1}``, a slash command
    answered "thinking" (``{"type": 5}``) and edited with the answer when it is ready."""
    runtime = runtime_of(request)
    settings = runtime.settings
    _require(settings, "Discord", "discord_public_key")
    body = await request.body()
    check_discord(
        settings.discord_public_key or "",
        request.headers.get("x-signature-ed25519"),
        request.headers.get("x-signature-timestamp"),
        body,
    )
    interaction = _json(body)
    kind = interaction.get("type")
    if kind == 1:
        return Response(content=b'{"type":1}', media_type="application/json")
    if kind != 2:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"Interactions of type {str(kind)[:10]} are not handled.",
            hint="Send PING (1) or an application command (2): register the bot's slash command as the Chat bots "
            "page shows.",
        )
    application, token = interaction.get("application_id"), interaction.get("token")
    data = interaction.get("data") if isinstance(interaction.get("data"), dict) else {}
    if not isinstance(application, str) or not isinstance(token, str) or not application.isdigit():
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "The interaction has no application_id or token.",
            hint="Send Discord's interaction payload, unchanged.",
        )
    await queue_reply(runtime, "discord", _discord_text(data), {"applicationId": application, "token": token})
    return Response(content=b'{"type":5}', media_type="application/json")


def _slack_checked(request: Request, body: bytes) -> Settings:
    settings = runtime_of(request).settings
    _require(settings, "Slack", "slack_signing_secret", "slack_bot_token")
    check_slack(
        settings.slack_signing_secret or "",
        request.headers.get("x-slack-signature"),
        request.headers.get("x-slack-request-timestamp"),
        body,
    )
    return settings


def slack_text(text: str) -> str:
    """Slack's message text as written: ``<url|label>`` back to the URL, mentions removed."""
    return " ".join(_SLACK_MENTION.sub(" ", _SLACK_LINK.sub(r"\1", text)).split()).replace("&amp;", "&")


@post("/api/v1/bots/slack/events", status_code=200)
async def slack_events(request: Request) -> Response[bytes]:
    """Slack's Events API: ``url_verification`` answered with its challenge; an ``app_mention``
    or a direct message answered in its thread (``chat.postMessage``)."""
    body = await request.body()
    _slack_checked(request, body)
    payload = _json(body)
    if payload.get("type") == "url_verification":
        challenge = str(payload.get("challenge") or "")[:200]
        return Response(content=msgspec.json.encode({"challenge": challenge}), media_type="application/json")
    event = payload.get("event")
    if payload.get("type") != "event_callback" or not isinstance(event, dict):
        return _OK
    if request.headers.get("x-slack-retry-num"):  # already queued the first time Slack sent it
        return _OK
    direct = event.get("type") == "message" and event.get("channel_type") == "im"
    if (event.get("type") != "app_mention" and not direct) or event.get("bot_id") or event.get("subtype"):
        return _OK
    channel, text = event.get("channel"), event.get("text")
    if not isinstance(channel, str) or not isinstance(text, str):
        return _OK
    target = {"channel": channel, "threadTs": event.get("thread_ts") or event.get("ts")}
    await queue_reply(runtime_of(request), "slack", slack_text(text), target)
    return _OK


@post("/api/v1/bots/slack/commands", status_code=200)
async def slack_command(request: Request) -> Response[bytes]:
    """A Slack slash command (form-encoded): answered at once, to the caller only, then the
    answer is posted to the command's ``response_url`` for the channel."""
    body = await request.body()
    _slack_checked(request, body)
    form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    text = (form.get("text") or [""])[0]
    response_url = (form.get("response_url") or [""])[0]
    if not response_url:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "The command has no response_url.",
            hint="Send Slack's slash-command payload, unchanged.",
        )
    target = {"responseUrl": response_url}
    if problem := target_problem(runtime_of(request).settings, "slack", target):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The command cannot be answered: {problem}.",
            hint="Send Slack's slash-command payload, unchanged: its response_url is on https://hooks.slack.com.",
        )
    await queue_reply(runtime_of(request), "slack", slack_text(text), target)
    ack = {"response_type": "ephemeral", "text": "Working on it…"}
    return Response(content=msgspec.json.encode(ack), media_type="application/json")


BOT_ROUTES = [telegram_webhook, discord_interaction, slack_events, slack_command]

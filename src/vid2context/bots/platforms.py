"""Posting a reply through each platform's documented API.

- **Telegram**: ``POST {origin}/bot<token>/sendMessage`` with ``chat_id``, ``text`` (HTML) and
  ``reply_parameters``; an error is ``{"ok": false, "error_code", "description", "parameters":
  {"retry_after"}}``.
- **Discord**: the deferred answer to an interaction is edited with ``PATCH
  {origin}/webhooks/<application id>/<interaction token>/messages/@original`` (no bot token: the
  interaction's token is the credential, for 15 minutes); a ``429`` carries ``retry_after``.
- **Slack**: an event is answered with ``POST {origin}/chat.postMessage`` (``Authorization: Bearer
  <bot token>``, ``channel``, ``thread_ts``), which says ``{"ok": false, "error"}`` with status 200
  when it refuses; a slash command with ``POST <response_url>``, which must be on Slack's hooks
  origin (it comes inside the signed request, but nothing else is ever posted to).

A ``429`` is waited out once when it asks for at most ``MAX_WAIT`` seconds; any other refusal is
the job's failure (``upstream``, or ``auth`` for a token the platform refuses), named without the
token.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..providers.speech import parse_retry_after
from ..settings import Settings

__all__ = ["DEFAULT_ORIGINS", "post_reply", "target_problem"]

DEFAULT_ORIGINS = {
    "telegram": "https://api.telegram.org",
    "discord": "https://discord.com/api/v10",
    "slack": "https://slack.com/api",
    "slack_hooks": "https://hooks.slack.com",
}
MAX_WAIT = 30.0
TIMEOUT = 20.0


def origin(settings: Settings, name: str) -> str:
    given = {
        "telegram": settings.telegram_origin,
        "discord": settings.discord_origin,
        "slack": settings.slack_origin,
        "slack_hooks": settings.slack_hooks_origin,
    }[name]
    return (given or DEFAULT_ORIGINS[name]).rstrip("/")


def target_problem(settings: Settings, platform: str, target: dict[str, Any]) -> str | None:
    """Why a reply cannot go to ``target`` (``None`` when it can): a response URL off Slack's hooks
    origin, say."""
    if platform == "slack" and "responseUrl" in target:
        url = str(target["responseUrl"])
        if not url.startswith(origin(settings, "slack_hooks") + "/"):
            return "the slash command's response_url is not on Slack's hooks origin"
    return None


def _failed(platform: str, status: int, said: str) -> VidError:
    code = (
        ErrorCode.AUTH
        if status in (401, 403) or said in ("invalid_auth", "not_authed")
        else ErrorCode.UPSTREAM
    )
    name = {"telegram": "Telegram", "discord": "Discord", "slack": "Slack"}[platform]
    return VidError(
        code,
        f"{name} refused the reply (HTTP {status}: {said[:200]}).",
        hint=f"Tell the user to check the {name} bot's settings on the server (its token and permissions); "
        "do not retry until then.",
    )


def _request(
    settings: Settings, platform: str, target: dict[str, Any], text: str
) -> tuple[str, str, dict[str, Any], dict[str, str]]:
    if platform == "telegram":
        body: dict[str, Any] = {"chat_id": target["chatId"], "text": text, "parse_mode": "HTML",
                                "link_preview_options": {"is_disabled": True}}  # fmt: skip
        if target.get("replyTo") is not None:
            body["reply_parameters"] = {"message_id": target["replyTo"], "allow_sending_without_reply": True}
        url = f"{origin(settings, 'telegram')}/bot{settings.telegram_bot_token}/sendMessage"
        return "POST", url, body, {}
    if platform == "discord":
        url = f"{origin(settings, 'discord')}/webhooks/{target['applicationId']}/{target['token']}/messages/@original"
        return "PATCH", url, {"content": text, "allowed_mentions": {"parse": []}}, {}
    if "responseUrl" in target:
        return "POST", str(target["responseUrl"]), {"response_type": "in_channel", "text": text}, {}
    body = {"channel": target["channel"], "text": text, "unfurl_links": False}
    if target.get("threadTs"):
        body["thread_ts"] = target["threadTs"]
    headers = {"Authorization": f"Bearer {settings.slack_bot_token}"}
    return "POST", f"{origin(settings, 'slack')}/chat.postMessage", body, headers


def _said(platform: str, response: httpx.Response) -> tuple[bool, str, float | None]:
    """Whether the platform took the message, what it said, and how long it asks to wait."""
    try:
        body = msgspec.json.decode(response.content) if response.content else {}
    except msgspec.DecodeError:
        body = {}
    body = body if isinstance(body, dict) else {}
    wait = parse_retry_after(response.headers.get("Retry-After"))
    if platform == "telegram":
        retry = (body.get("parameters") or {}).get("retry_after")
        return bool(body.get("ok")) and response.is_success, str(body.get("description") or ""), retry or wait
    if platform == "discord":
        retry = body.get("retry_after")
        return response.is_success, str(body.get("message") or ""), retry if retry is not None else wait
    if response.headers.get("content-type", "").startswith("application/json"):
        return bool(body.get("ok", True)) and response.is_success, str(body.get("error") or ""), wait
    return response.is_success, response.text[:200], wait  # a response_url answers plain "ok"


async def post_reply(settings: Settings, client: httpx.AsyncClient, platform: str, target: dict[str, Any],
                     text: str, ctx: Ctx) -> None:  # fmt: skip
    if problem := target_problem(settings, platform, target):
        raise VidError(ErrorCode.FORBIDDEN, f"The reply was not sent: {problem}.",
                       hint="Tell the user the request did not come from Slack as expected; do not retry.")  # fmt: skip
    method, url, body, headers = _request(settings, platform, target, text)
    for attempt in range(2):
        try:
            response = await client.request(method, url, json=body, headers=headers, timeout=TIMEOUT)
        except httpx.HTTPError as exc:
            raise VidError(ErrorCode.UPSTREAM, f"The {platform} API could not be reached ({type(exc).__name__}).",
                           hint="Retry once in a moment; if it fails again, tell the user, and do not retry.") from None  # fmt: skip
        ok, said, wait = _said(platform, response)
        if ok:
            return
        limited = response.status_code == 429 or said == "ratelimited"
        remaining = ctx.remaining
        if (
            limited
            and attempt == 0
            and wait is not None
            and wait <= MAX_WAIT
            and (remaining is None or wait < remaining)
        ):
            await asyncio.sleep(float(wait))
            continue
        if limited:
            raise VidError(ErrorCode.RATE_LIMITED, f"The {platform} API is limiting this bot's messages.",
                           hint="Wait for the Retry-After, then repeat the call once.",
                           retry_after=int(wait or 60) + 1)  # fmt: skip
        raise _failed(platform, response.status_code, said)

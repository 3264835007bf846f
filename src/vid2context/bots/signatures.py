"""Is this request really from the platform? Each platform's documented check, in constant time.

- **Telegram** sends the ``secret_token`` given to ``setWebhook`` back in
  ``X-Telegram-Bot-Api-Secret-Token``; it must equal ours.
- **Discord** signs ``timestamp + raw body`` with Ed25519; ``X-Signature-Ed25519`` is the hex
  signature and ``X-Signature-Timestamp`` the timestamp, checked against the application's public
  key. A bad signature must be answered ``401`` (Discord's own endpoint check sends one on
  purpose).
- **Slack** sends ``X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret, "v0:<ts>:<raw body>")>``
  and ``X-Slack-Request-Timestamp``; a timestamp more than five minutes from now is refused, so a
  captured request cannot be replayed later.

Discord's timestamp gets the same five-minute window. Nothing here logs or echoes a secret.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from ..errors import ErrorCode, VidError

__all__ = ["WINDOW_SEC", "check_discord", "check_slack", "check_telegram", "slack_signature"]

WINDOW_SEC = 300


def _refused(what: str, setting: str) -> VidError:
    return VidError(
        ErrorCode.UNAUTHORIZED,
        f"The request's {what} does not check out, so it was not sent by the platform.",
        hint=f"Send the platform's own signature headers over the exact raw body; if the platform itself "
        f"was refused, tell the user to check that {setting} matches the platform's, and do not retry.",
    )


def _fresh(timestamp: str | None, now: float | None, setting: str) -> int:
    try:
        stamp = int(timestamp or "")
    except ValueError:
        raise _refused("timestamp", setting) from None
    if abs((time.time() if now is None else now) - stamp) > WINDOW_SEC:
        raise _refused("timestamp (older or newer than five minutes)", setting)
    return stamp


def check_telegram(expected: str, given: str | None) -> None:
    if not given or not hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace")):
        raise _refused("X-Telegram-Bot-Api-Secret-Token", "VID2CONTEXT_TELEGRAM_SECRET")


def check_discord(public_key_hex: str, signature_hex: str | None, timestamp: str | None, body: bytes,
                  *, now: float | None = None) -> None:  # fmt: skip
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    _fresh(timestamp, now, "DISCORD_PUBLIC_KEY")
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
        signature = bytes.fromhex(signature_hex or "")
    except ValueError:
        raise _refused("X-Signature-Ed25519", "DISCORD_PUBLIC_KEY") from None
    try:
        key.verify(signature, (timestamp or "").encode() + body)
    except InvalidSignature:
        raise _refused("X-Signature-Ed25519", "DISCORD_PUBLIC_KEY") from None


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    """``v0=<hex>``: what Slack sends for ``body`` at ``timestamp``."""
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256)
    return "v0=" + digest.hexdigest()


def check_slack(secret: str, signature: str | None, timestamp: str | None, body: bytes,
                *, now: float | None = None) -> None:  # fmt: skip
    _fresh(timestamp, now, "SLACK_SIGNING_SECRET")
    expected = slack_signature(secret, timestamp or "", body)
    if not signature or not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise _refused("X-Slack-Signature", "SLACK_SIGNING_SECRET")

"""A webhook's signing secret: made once, kept sealed, and the signature it puts on a delivery.

Signing needs the secret itself (HMAC), so unlike an API key it cannot be kept as a digest. With
``VID2CONTEXT_WEBHOOK_KEY`` set, the stored form is ``v1:`` and AES-GCM of the secret under the
SHA-256 of that setting, with the hook's id as associated data (a sealed secret copied onto
another hook does not open); without it, ``plain:`` and the secret, and the database is the only
thing that guards it (docs: webhooks, where the secret is kept). A secret that will not open (the
key changed or was removed) is ``None``: that hook's deliveries fail and say why.

The signature header is ``t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["new_secret", "open_secret", "seal_secret", "signature_header"]

_NONCE = 12


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and 32 random bytes, URL-safe."""
    return "whsec_" + secrets.token_urlsafe(32)


def _key(server_key: str) -> bytes:
    return hashlib.sha256(server_key.encode("utf-8")).digest()


def seal_secret(secret: str, hook_id: str, server_key: str | None) -> str:
    """The stored form of ``secret`` (see the module docstring)."""
    if not server_key:
        return "plain:" + secret
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = secrets.token_bytes(_NONCE)
    sealed = AESGCM(_key(server_key)).encrypt(nonce, secret.encode("utf-8"), hook_id.encode("utf-8"))
    return "v1:" + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def open_secret(stored: str, hook_id: str, server_key: str | None) -> str | None:
    """The secret from its stored form; ``None`` when it cannot be opened with ``server_key``."""
    if stored.startswith("plain:"):
        return stored.removeprefix("plain:")
    if not stored.startswith("v1:") or not server_key:
        return None
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        raw = base64.urlsafe_b64decode(stored.removeprefix("v1:"))
        opened = AESGCM(_key(server_key)).decrypt(raw[:_NONCE], raw[_NONCE:], hook_id.encode("utf-8"))
    except (InvalidTag, ValueError):
        return None
    return opened.decode("utf-8")


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """``X-Vid2context-Signature`` for ``body`` sent at ``timestamp`` (unix seconds)."""
    signed = str(timestamp).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"

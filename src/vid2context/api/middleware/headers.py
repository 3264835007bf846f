"""``X-Robots-Tag: noindex`` on every ``/api/*`` response.

JSON answers must never compete with the docs in search results; a header is the only way to say
so for responses that are not HTML. Error responses get it too, hence middleware, not a handler
hook.
"""

from __future__ import annotations

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ._asgi import canonical_path, is_api

__all__ = ["RobotsTag"]

_HEADER = (b"x-robots-tag", b"noindex")


class RobotsTag:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api(canonical_path(scope["path"])):
            await self.app(scope, receive, send)
            return

        async def send_tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers") or () if k.lower() != _HEADER[0]]
                headers.append(_HEADER)
                message = {**message, "headers": headers}  # type: ignore[typeddict-item]
            await send(message)

        await self.app(scope, receive, send_tagged)

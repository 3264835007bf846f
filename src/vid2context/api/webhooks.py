"""Webhooks over HTTP: ``GET`` and ``POST /webhooks``, ``DELETE /webhooks/{id}`` and
``POST /webhooks/{id}/test``, on the runtime's webhooks (``integrations/webhooks.py``).

A hook belongs to the API key that made it (its name, ``key-1`` or a hashed entry's; ``open`` on
a server without keys): that key lists, tests and deletes it, and another key's hooks are
``not-found``. Creating and testing are ``write`` routes, as the contract's scopes have it.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, Response, delete, get, post
from litestar.params import JSONBody, Parameter

from ..integrations.webhooks import Webhook, WebhookRequest, Webhooks
from ..models import Base
from .middleware._asgi import state_of
from .params import BODY_ERRORS, decode_body, runtime_of

__all__ = ["WEBHOOK_ROUTES", "WebhookList"]

HookIdPath = Annotated[
    str, Parameter(description="The webhook's id (wh_...), as POST /api/v1/webhooks returned it.")
]


class WebhookList(Base):
    webhooks: list[Webhook]


def _hooks(request: Request) -> Webhooks:
    hooks = runtime_of(request).webhooks
    assert hooks is not None, "every runtime builder sets webhooks"
    return hooks


def _owner(request: Request) -> str:
    return str(state_of(request.scope).get("key_name") or "open")


@get("/api/v1/webhooks")
async def list_webhooks(request: Request) -> WebhookList:
    """This key's webhooks and how delivery to each has gone (never their secrets)."""
    return WebhookList(webhooks=await _hooks(request).list(_owner(request)))


@post("/api/v1/webhooks", status_code=201, exception_handlers=BODY_ERRORS)
async def create_webhook(request: Request, data: JSONBody[WebhookRequest]) -> Response[Webhook]:
    """Register a URL for events; the answer holds the signing secret, shown this once."""
    data = await decode_body(request, WebhookRequest)  # strict: Litestar's decode was lenient
    hook = await _hooks(request).create(_owner(request), data.url, data.events)
    return Response(hook, status_code=201, headers={"Cache-Control": "no-store"})


@delete("/api/v1/webhooks/{hook_id:str}")
async def delete_webhook(request: Request, hook_id: HookIdPath) -> None:
    """Remove the webhook: nothing more is sent to it, retries waiting included."""
    await _hooks(request).delete(_owner(request), hook_id)


@post("/api/v1/webhooks/{hook_id:str}/test", status_code=200)
async def test_webhook(request: Request, hook_id: HookIdPath) -> Webhook:
    """Send one signed ``webhook.test`` delivery now and answer the hook as it is afterwards
    (``lastStatus``, ``lastError``); a success makes a disabled hook active again."""
    return await _hooks(request).test(_owner(request), hook_id)


WEBHOOK_ROUTES = [list_webhooks, create_webhook, delete_webhook, test_webhook]
"""Every handler of this module, for ``create_app``."""

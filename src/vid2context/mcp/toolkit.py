"""How a tool is declared: a typed async function, its docstring, annotations and output schema.

``define()`` turns a function into a ``ContractTool``: the SDK builds the input schema from the
signature (``Field(description=...)`` on every parameter, camelCase names through ``alias``) and
the description from the docstring. ``ContractTool.run`` keeps the contract's promise that every
failure is a tool result with the error JSON: arguments that do not match the schema become
``bad-request`` (field names and reasons only, never the values), a ``VidError`` becomes its own
code, and anything else is logged and answered as ``internal`` with no detail.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import ValidationError

from ..errors import ErrorCode, VidError
from ..runtime import Runtime
from .logging_level import log_step
from .owner import RUN_OWNER
from .results import ErrorReply, Reply
from .runs import CALL, Runs
from .schemas import portable_input

__all__ = ["ContractTool", "Deps", "caller", "define", "invalid_arguments", "over_http", "progress_sender"]

log = logging.getLogger("vid2context.mcp")


@dataclass
class Deps:
    """What every tool module needs: the runtime and the registry of long runs."""

    runtime: Runtime
    runs: Runs


def invalid_arguments(tool: str, exc: ValidationError) -> VidError:
    problems = []
    for item in exc.errors(include_input=False, include_url=False)[:5]:
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        problems.append(f"{where}: {item.get('msg', 'not valid')}")
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"The arguments for {tool} are not valid: " + "; ".join(problems) + ".",
        hint=f"Check the input schema of {tool} (tools/list) and call it again.",
    )


class ContractTool(Tool):
    """A tool whose every outcome, bad arguments and crashes included, is a contract result."""

    nested_errors: bool = False
    """Whether its error body nests the code (``{"error": {code, message, hint}, ...}``, ``ask``)."""

    async def run(
        self, arguments: dict[str, Any], context: Context, convert_result: bool = False
    ) -> CallToolResult:
        try:
            reply = await self.reply(arguments, context)
        except VidError as error:
            reply = ErrorReply(error)
        except Exception:
            log.exception("tool %s failed", self.name)
            reply = ErrorReply(VidError.internal())
        return self.result(reply)

    async def reply(self, arguments: dict[str, Any], context: Context) -> Reply:
        """The tool's reply to ``arguments``, checked against its schema (``bad-request``); raises
        what the tool raises. The queue's consumer calls it to run a call again (``queued.py``)."""
        metadata = self.fn_metadata
        try:
            model = metadata.arg_model.model_validate(metadata.pre_parse_json(arguments))
        except ValidationError as exc:
            raise invalid_arguments(self.name, exc) from None
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        if self.context_kwarg is not None:
            kwargs[self.context_kwarg] = context
        token = CALL.set((self.name, arguments))
        try:
            return await self.fn(**kwargs)
        finally:
            CALL.reset(token)

    def result(self, reply: Reply) -> CallToolResult:
        if self.nested_errors and isinstance(reply, ErrorReply):
            reply = ErrorReply(reply.error, nested=True)
        return reply.to_result()


def define(
    fn: Callable[..., Awaitable[Reply]],
    *,
    title: str,
    read_only: bool,
    open_world: bool,
    idempotent: bool,
    output: dict[str, Any] | None = None,
    nested_errors: bool = False,
) -> ContractTool:
    """The tool for ``fn``: named after it, described by its docstring.

    Writes get ``destructiveHint: false`` (none of our tools deletes or overwrites user data);
    ``output`` is the ``outputSchema`` of a structured tool.
    """
    annotations = ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else False,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )
    tool = ContractTool.from_function(
        fn,
        name=fn.__name__,
        title=title,
        description=inspect.cleandoc(fn.__doc__ or ""),
        annotations=annotations,
        structured_output=False,
    )
    tool.parameters = portable_input(tool.parameters)  # advertised; arguments are checked by the model
    if output is not None:
        tool.fn_metadata.output_schema = output  # advertised; our replies build the content themselves
    tool.nested_errors = nested_errors
    return tool


def over_http(ctx: Context) -> bool:
    """Whether this call came over HTTP (the ``/mcp`` mount names its owner; the SDK gives HTTP
    calls their request headers), or is the queue's consumer doing such a call again."""
    if RUN_OWNER.get() is not None:
        return True
    try:
        return ctx.headers is not None
    except ValueError:  # no request context: a direct call, as local as stdio
        return False


def caller(ctx: Context) -> str:
    """Who is calling, for binding long runs: over HTTP the digest the ``/mcp`` mount set (of an
    OAuth grant's family, the same after a token refresh, or of a static bearer token:
    ``owner.py``); ``""`` over stdio and in process. No credential is kept."""
    del ctx
    return RUN_OWNER.get() or ""


Notify = Callable[[str, float | None, str, int | None, int | None], Awaitable[None]]


def progress_sender(ctx: Context) -> Notify:
    """A function that sends ``notifications/progress`` for this call (a no-op without a token).

    Progress must grow with every notification: counts of videos go out as ``done``/``total``,
    other steps as a running number with no total. Each step also goes out as an ``info`` log
    message to a client that asked for that level (``logging_level.py``).
    """
    sent = -1.0

    async def notify(
        stage: str, fraction: float | None, message: str, done: int | None, total: int | None
    ) -> None:
        nonlocal sent
        if done is not None and total:
            value, out_of = float(done), float(total)
        else:
            value, out_of = sent + 1, None
        if value <= sent:
            value = sent + 0.001
        sent = value
        try:
            await ctx.report_progress(value, out_of, message or stage)
        except ValueError:  # no request context (a direct call): nobody to tell
            return
        await log_step(ctx, message or stage)  # the same step as a log, for clients that show logs

    return notify

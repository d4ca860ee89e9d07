"""The MCP server: tools/call (answered, or as an MCP task), tools/list, prompts/list and prompts/get, with the
relay's exact wire shapes (surface.py derives the lists and the instructions from the tool definitions).

Built on the SDK's low-level Server because the relay's contract differs from MCPServer's defaults: an unknown tool
is a JSON-RPC error (not a result), failures read `Error executing <tool>: <message>`, and unknown arguments are
refused by the same schema clients see.
"""

from __future__ import annotations

import mimetypes
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel, ValidationError

from gemini_relay import __version__
from gemini_relay.core.vocabulary import FailureReason, Toolset
from gemini_relay.errors import BackendUnavailable, InputError, RelayError, RunFailed
from gemini_relay.format import NOTICE_MARKER, failure_message, misconfigured, with_notices, with_receipt
from gemini_relay.jobs.follower import WATCHED
from gemini_relay.log import describe_call, logger
from gemini_relay.server.elicit import asking_caller
from gemini_relay.server.fixture_hook import load_fixtures
from gemini_relay.server.sdk_channel import CallChannel
from gemini_relay.server.surface import instructions_for, prompt_text, prompts_for, tool_entry
from gemini_relay.server.tasks.task_service import TaskService
from gemini_relay.server.tasks.task_wire import EXTENSION, TaskWire, declares_extension, is_modern
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.common.model_view import model_view
from gemini_relay.tools.common.output_schemas import receipt_fields
from gemini_relay.tools.common.progress import CallProgress, SendProgress, run_with_keepalive
from gemini_relay.tools.registry import registry

SERVER_NAME = "gemini-relay"
DOCTOR = "gemini-doctor"  # the one tool a misconfigured server still answers: it shows what is wrong
ContentBlock = types.TextContent | types.ImageContent | types.AudioContent | types.ResourceLink | types.EmbeddedResource


class RelayServer:
    """Owns the tool table and translates between MCP requests and tool handlers."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        settings = deps.settings
        self.tools = registry(test_tools=settings.test_tools, toolsets=settings.toolsets, allow=settings.tools)
        self._by_name = {tool.name: tool for tool in self.tools}
        self.tasks = TaskService(deps, self._by_name, self._invoke)
        self._task_wire = TaskWire(self.tasks, self._call_tool_as_task_legacy)
        # What the instructions and descriptions say of the backend is said of the active one (chosen once a process).
        self.upstream = deps.registry.active_entry()
        self._listed: list[types.Tool] | None = None  # built at the first tools/list (the stdio front may answer it)
        # The conformance runner's fixtures (GEMINI_MCP_TEST_TOOLS=conformance), listed after the relay's own tools.
        # They are test code, not shipped: server/fixture_hook.py imports them from GEMINI_RELAY_FIXTURES.
        self.fixtures = load_fixtures(deps.settings, self.tasks, self._task_wire)

    def build(self) -> Server[Any]:
        with warnings.catch_warnings():
            # The relay declares `logging` (as 1.2.0 does); the SDK flags the capability as deprecated in 2026-07-28.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            server = _LowLevelServer(
                SERVER_NAME,
                version=__version__,
                instructions=instructions_for(self.tools, self.upstream, self.deps.problems),
                on_list_tools=self.list_tools,
                on_list_prompts=self.list_prompts,
                on_get_prompt=self.get_prompt,
                on_list_resources=self.list_resources,
                on_list_resource_templates=self.list_resource_templates,
                on_set_logging_level=self.set_logging_level,
            )
        # tools/call is registered directly: with the Tasks extension its answer may be a task, not a CallToolResult.
        server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        if self.fixtures is not None:
            # Here: its cryptography stack is only for the fixtures' rounds.
            from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

            self.fixtures.register(server)
            server.subscribable = True
            # input_required rounds carry a requestState: sealed on the way out, verified on the way back
            server.middleware.append(
                RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=SERVER_NAME)
            )
        if self.tasks.store is not None:
            server.tasks_enabled = True
            server.extensions[EXTENSION] = {}
            self._task_wire.register(server)
        return server

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.listed())

    def listed(self) -> list[types.Tool]:
        """The tools/list entries, built once: each tool's schema is generated from its input model."""
        if self._listed is None:
            limit, tasks = self.deps.settings.timeout_seconds, self.tasks.store is not None
            listed = [tool_entry(tool, self.upstream, tasks=tasks, max_timeout=limit) for tool in self.tools]
            self._listed = listed + (self.fixtures.tools() if self.fixtures is not None else [])
        return self._listed

    def _task_capable(self, tool: AnyTool) -> bool:
        return tool.task_support and self.tasks.store is not None

    async def call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> HandlerResult:
        tool = self._by_name.get(params.name)
        if tool is None and self.fixtures is not None and self.fixtures.has_tool(params.name):
            return await self.fixtures.call(params.name, ctx, dict(params.arguments or {}))
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments: dict[str, Any] = dict(params.arguments or {})
        logger.info(describe_call(tool.name, arguments))
        if is_modern(ctx) and declares_extension(ctx) and self._task_capable(tool) and self.tasks.available:
            outcome = await self.tasks.start(tool, arguments)
            if isinstance(outcome, types.CallToolResult):
                return outcome  # answered without a run: no task needed
            return self._task_wire.created(outcome, modern=True)
        interval = self.deps.settings.progress_interval
        send = _progress_sender(ctx) if _has_progress_token(ctx) and interval > 0 else None

        async def body(call: CallProgress) -> types.CallToolResult:
            call.channel = CallChannel(ctx)
            watched = WATCHED.set(send is not None)  # without a progressToken nothing shows the runs' progress
            try:
                with asking_caller(ctx, self.deps.settings.ask_timeout_seconds):  # a task's runs have no caller to ask
                    return await self._invoke(tool, arguments, call, self.deps)
            finally:
                WATCHED.reset(watched)

        return await run_with_keepalive(tool.name, send, interval, body)

    async def _call_tool_as_task_legacy(
        self, ctx: ServerRequestContext[Any], raw: Mapping[str, Any], call_next: CallNext
    ) -> HandlerResult:
        """A 2025-11-25 tools/call with a `task` field: `{"task": Task}` (a tool without task support answers as
        usual)."""
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError:
            return await call_next(ctx)
        tool = self._by_name.get(params.name)
        if tool is None or not self._task_capable(tool) or not self.tasks.available:
            return await call_next(ctx)
        arguments: dict[str, Any] = dict(params.arguments or {})
        logger.info(describe_call(tool.name, arguments))
        outcome = await self.tasks.start(tool, arguments)
        if isinstance(outcome, types.CallToolResult):
            outcome = self.tasks.completed_now(tool.name, arguments, outcome)
        else:
            self._task_wire.report_status(ctx, outcome.task_id)
        return self._task_wire.created(outcome, modern=False)

    async def _invoke(
        self, tool: AnyTool, arguments: dict[str, Any], call: CallProgress, deps: Deps
    ) -> types.CallToolResult:
        """The call's CallToolResult; `deps` is the server's, or a resumed task's (whose engine follows its jobs)."""
        name = tool.name
        if deps.problems and name != DOCTOR:
            return _error(name, misconfigured(deps.problems))
        try:
            parsed = tool.input_model.model_validate(arguments)
        except ValidationError as exc:
            return _error(name, f"Invalid arguments for {name}: {describe_validation(exc, tool.input_model)}")
        started = time.monotonic()
        try:
            reply = await tool.handler(deps, parsed, call)
        except RunFailed as exc:
            logger.info("%s failed (%s): %s", name, exc.reason or "cancelled", exc.message)
            return self._failure(tool, failure_message(exc), unusable=exc.reason is FailureReason.SPAWN_FAILED)
        except InputError as exc:
            logger.info("%s refused: %s", name, exc)
            if exc.field:
                return self._failure(tool, f"Invalid arguments for {name}: {exc.field}: {exc}")
            return self._failure(tool, str(exc))
        except RelayError as exc:
            logger.info("%s failed: %s", name, exc)
            return self._failure(tool, str(exc), unusable=isinstance(exc, BackendUnavailable))
        except Exception:  # top-level handler: the call fails, the server lives
            logger.exception("%s crashed", name)
            return _error(name, "internal error in gemini-relay (details are in the server log)")
        call.ok = True
        receipts = reply.receipts if reply.receipt_line else ()
        text = with_receipt(reply.text, receipts)
        notice = self.deps.registry.take_notice()
        if notice:
            text = with_notices([notice], text)
        structured = None
        # A declared outputSchema obliges structured content on every success; the model may see nothing else, so
        # it carries the reply too, and the receipts of the runs it came from.
        if reply.structured is not None or tool.output_schema is not None:
            shown = with_receipt(reply.text if reply.model_text is None else reply.model_text, receipts)
            data = {**(reply.structured or {}), **receipt_fields(reply.receipts)}
            structured = model_view(data, with_notices([notice], shown) if notice else shown)
        content: list[ContentBlock] = [types.TextContent(type="text", text=text)]
        content += [_file_link(path) for path in reply.files]
        for link in reply.links:
            content.append(
                types.ResourceLink(
                    type="resource_link", uri=link.uri, name=link.name, mime_type=link.mime_type, size=link.size
                )
            )
            mime = link.mime_type or ""
            if link.inline_b64 is not None and mime.startswith("image/"):
                content.append(types.ImageContent(type="image", data=link.inline_b64, mime_type=mime))
            elif link.inline_b64 is not None and mime.startswith("audio/"):
                content.append(types.AudioContent(type="audio", data=link.inline_b64, mime_type=mime))
        meta = reply.meta
        if tool.toolset is Toolset.REVIEW:  # seed 002: every review tool's _meta carries its wall time
            meta = {**(meta or {}), "durationMs": round((time.monotonic() - started) * 1000)}
        return types.CallToolResult(content=content, structured_content=structured, is_error=False, _meta=meta)

    def _failure(self, tool: AnyTool, message: str, *, unusable: bool = False) -> types.CallToolResult:
        """A failed call's result. The first reply of the process, failed or not, says which backend runs and why
        (the registry's notice); a call whose backend cannot be used at all (not installed, no key) also names the
        other backends and what would make each usable — media runs on its own backend, so not for those."""
        notices = [notice] if (notice := self.deps.registry.take_notice()) else []
        if unusable and not notices and tool.toolset is not Toolset.MEDIA:
            notices += filter(None, [self.deps.registry.alternatives()])
        return _error(tool.name, "\n\n".join([message, *(f"{NOTICE_MARKER} {n}" for n in notices)]))

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        extra = self.fixtures.prompts() if self.fixtures is not None else []
        return types.ListPromptsResult(prompts=prompts_for(self.tools, self.upstream) + extra)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        if self.fixtures is not None and self.fixtures.has_prompt(params.name):
            return await self.fixtures.get_prompt(ctx, params)
        tool = self._by_name.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        text = prompt_text(tool, dict(params.arguments or {}))
        return types.GetPromptResult(
            description=tool.doc.prompt,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        # No resources yet: the empty lists answer clients (and the conformance caching check) that ask anyway.
        return types.ListResourcesResult(resources=[])

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def set_logging_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        # Diagnostics go to stderr only (never notifications/message), as in gemini-relay 1.2.0.
        return types.EmptyResult()


class _LowLevelServer(Server[Any]):
    """The SDK's low-level server, plus the 2025-11-25 `tasks` capability (the SDK no longer derives it)."""

    tasks_enabled = False
    subscribable = False  # resources/subscribe is served (the conformance fixtures only)

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
        # subscriptions/listen is served for task notifications only: no list of ours ever changes.
        for listed in (capabilities.prompts, capabilities.tools, capabilities.resources):
            if listed is not None:
                listed.list_changed = False
        if capabilities.resources is not None:
            capabilities.resources.subscribe = self.subscribable
        if self.tasks_enabled:
            capabilities.tasks = types.ServerTasksCapability(
                list=types.TasksListCapability(),
                cancel=types.TasksCancelCapability(),
                requests=types.ServerTasksRequestsCapability(
                    tools=types.TasksToolsCapability(call=types.TasksCallCapability())
                ),
            )
        return capabilities


def describe_validation(exc: ValidationError, model: type[BaseModel]) -> str:
    """`prompt: Field required; bogus: unknown argument (accepted: …)` — field names as the client sent them."""
    accepted = ", ".join(f.alias or name for name, f in model.model_fields.items())
    parts: list[str] = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            parts.append(f"{field}: unknown argument (accepted: {accepted or 'none'})")
        else:
            parts.append(f"{field}: {error['msg']}")
    return "; ".join(parts)


def _file_link(path: Path) -> types.ResourceLink:
    """A file the run wrote, as a resource_link block (the text names it too, for clients that read only text)."""
    mime, _ = mimetypes.guess_type(path.name)
    size = path.stat().st_size if path.is_file() else None
    return types.ResourceLink(type="resource_link", uri=path.as_uri(), name=path.name, mime_type=mime, size=size)


def _error(tool: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error executing {tool}: {message}")], is_error=True
    )


def _has_progress_token(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.meta is not None and ctx.meta.get("progress_token") is not None


def _progress_sender(ctx: ServerRequestContext[Any]) -> SendProgress:
    async def send(progress: float, total: float | None, message: str) -> None:
        try:
            await ctx.session.report_progress(progress, total, message)
        except Exception:  # a client that went away must not fail the run
            logger.info("progress notification could not be sent")

    return send

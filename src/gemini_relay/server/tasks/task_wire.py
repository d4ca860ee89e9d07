"""The two wire generations of MCP tasks over one TaskService.

- 2026-07-28, the Tasks extension `io.modelcontextprotocol/tasks` (SEP-2663): a client declares it in the request's
  `_meta` client capabilities; a long tool then answers `resultType: "task"`; `tasks/get` (the detailed task, with
  the CallToolResult once completed), `tasks/update` and `tasks/cancel` (empty acknowledgements); -32021 to a client
  that did not declare the extension.
- 2025-11-25, the experimental core tasks: the server's `tasks` capability, a `task` field in tools/call params
  answered by `{"task": Task}`, `tasks/get` / `tasks/cancel` (the Task), `tasks/result` (blocks, then the
  CallToolResult), `tasks/list`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from gemini_relay.server.tasks.store import TaskEntry
from gemini_relay.server.tasks.task_service import TaskService, TaskView, iso

EXTENSION = "io.modelcontextprotocol/tasks"
MISSING_CLIENT_CAPABILITY = -32021
HEADER_MISMATCH = -32020  # SEP-2243: a routing header disagrees with the body
RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_INTERVAL_MS = 2000  # a model turn takes seconds; polling faster only costs reads
LISTEN_POLL_SECONDS = 1.0


class UpdateTaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None  # raw: each answer is handed to the task as the client sent it


class ListenParams(types.RequestParams):
    notifications: dict[str, Any] = {}


class _Notification(BaseModel):
    """A notification the SDK has no type for (`notifications/tasks` belongs to the extension)."""

    method: str
    params: dict[str, Any]


def is_modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def declares_extension(ctx: ServerRequestContext[Any]) -> bool:
    """The request's own client capabilities name the extension (2026-07-28 declares them per request)."""
    meta = ctx.meta or {}
    caps = meta.get(types.CLIENT_CAPABILITIES_META_KEY)
    if isinstance(caps, Mapping):
        extensions = caps.get("extensions")
        if isinstance(extensions, Mapping) and EXTENSION in extensions:
            return True
    client = ctx.session.client_capabilities
    return client is not None and EXTENSION in (client.extensions or {})


def missing_extension() -> MCPError:
    """-32021: the request needs the Tasks extension, which the client did not declare."""
    return MCPError(
        MISSING_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def _not_found(task_id: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"Failed to retrieve task: Task not found ({task_id})")


LegacyStart = Callable[[ServerRequestContext[Any], Mapping[str, Any], CallNext], Awaitable[HandlerResult]]


class TaskWire:
    def __init__(self, service: TaskService, start_legacy: LegacyStart) -> None:
        self.service = service
        self._start_legacy = start_legacy  # the server's task-augmented tools/call (2025-11-25)

    # --- shapes ---------------------------------------------------------------------------------------------

    def task(self, view: TaskView, *, modern: bool) -> dict[str, Any]:
        entry = view.entry
        data: dict[str, Any] = {"taskId": entry.task_id, "status": entry.status}
        if view.message:
            data["statusMessage"] = view.message
        data.update(createdAt=iso(entry.created_at), lastUpdatedAt=iso(entry.updated_at))
        ttl = int(self.service.ttl_seconds * 1000)
        if modern:
            data.update(ttlMs=ttl, pollIntervalMs=POLL_INTERVAL_MS)
        else:
            data.update(ttl=ttl, pollInterval=POLL_INTERVAL_MS)
        return data

    def created(self, entry: TaskEntry, *, modern: bool) -> dict[str, Any]:
        view = TaskView(entry, None) if entry.terminal else self.service.get(entry.task_id) or TaskView(entry, None)
        task = self.task(view, modern=modern)
        return {"resultType": "task", **task} if modern else {"task": task}

    @staticmethod
    def call_result(entry: TaskEntry, version: str) -> dict[str, Any]:
        """The stored CallToolResult shaped as this protocol version's tools/call result, as the call would have."""
        assert entry.result is not None
        try:
            return serialize_server_result("tools/call", version, entry.result)
        except (KeyError, ValueError, ValidationError):
            return dict(entry.result)

    # --- 2025-11-25: task-augmented tools/call (the core result sieve would refuse `{"task": …}`) ---------------

    async def legacy_call_middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or is_modern(ctx)
            or not isinstance(params, Mapping)
            or params.get("task") is None
        ):
            return await call_next(ctx)
        return await self._start_legacy(ctx, params, call_next)

    # --- request handlers -----------------------------------------------------------------------------------

    async def get(self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> dict[str, Any]:
        modern = self._gate(ctx)
        view = self.service.get(params.task_id)
        if view is None:
            raise _not_found(params.task_id)
        return self.detailed(view, ctx.protocol_version) if modern else self.task(view, modern=False)

    async def result(self, ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        if is_modern(ctx):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", "tasks/result")
        entry = await self.service.result(params.task_id)
        if entry is None:
            raise _not_found(params.task_id)
        if entry.status != "completed":
            raise MCPError(types.INVALID_PARAMS, f"Task {entry.task_id} was {entry.status}: it has no result")
        data = self.call_result(entry, ctx.protocol_version)
        data["_meta"] = {**(data.get("_meta") or {}), RELATED_TASK: {"taskId": entry.task_id}}
        return data

    async def list(self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        if is_modern(ctx):  # the extension has no tasks/list: a task id is a capability, not an entry in a list
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", "tasks/list")
        return {"tasks": [self.task(v, modern=False) for v in self.service.list()]}

    async def cancel(self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams) -> dict[str, Any]:
        modern = self._gate(ctx)
        before = self.service.get(params.task_id)
        if before is None:
            raise _not_found(params.task_id)
        if before.entry.terminal and not modern:
            raise MCPError(
                types.INVALID_PARAMS, f"Cannot cancel task: already in terminal status {before.entry.status}"
            )
        entry = await self.service.cancel(params.task_id)
        if modern:
            return {}
        return self.task(TaskView(entry or before.entry, None), modern=False)

    async def update(self, ctx: ServerRequestContext[Any], params: UpdateTaskParams) -> dict[str, Any]:
        if not self._gate(ctx):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", "tasks/update")
        if self.service.get(params.task_id) is None:
            raise _not_found(params.task_id)
        # answers for a task that asks nothing (or for keys it did not ask) are acknowledged and dropped
        self.service.deliver(params.task_id, dict(params.input_responses or {}))
        return {}

    async def listen(self, ctx: ServerRequestContext[Any], params: ListenParams) -> types.SubscriptionsListenResult:
        """subscriptions/listen (2026-07-28): acknowledges the task ids it will report (no list ever changes here, so
        no other kind is honoured), sends `notifications/tasks` with the detailed task at once and on every status
        change, and ends the stream when every subscribed task has ended."""
        requested = params.notifications.get("taskIds")
        if requested is not None and not declares_extension(ctx):
            raise missing_extension()
        meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        ids = [i for i in requested or [] if isinstance(i, str) and self.service.get(i) is not None]
        await self._notify(ctx, "notifications/subscriptions/acknowledged", {"notifications": {"taskIds": ids}})
        if requested is None:
            await anyio.sleep_forever()  # nothing we could ever report: the stream stays open until the client leaves
        changed = anyio.Event()

        def wake(task_id: str) -> None:
            if task_id in ids:
                changed.set()

        self.service.listeners.append(wake)
        sent: dict[str, str] = {}
        try:
            while ids:
                for task_id in list(ids):
                    view = self.service.get(task_id)
                    if view is not None and sent.get(task_id) != view.entry.status:
                        sent[task_id] = view.entry.status
                        await self._notify(ctx, "notifications/tasks", self.detailed(view, ctx.protocol_version))
                    if view is None or view.entry.terminal:
                        ids.remove(task_id)
                if not ids:
                    break
                with anyio.move_on_after(LISTEN_POLL_SECONDS):  # a task run by another server changes unannounced
                    await changed.wait()
                changed = anyio.Event()
        finally:
            self.service.listeners.remove(wake)
        return types.SubscriptionsListenResult(_meta=meta)

    async def _notify(self, ctx: ServerRequestContext[Any], method: str, params: dict[str, Any]) -> None:
        body = {**params, "_meta": {SUBSCRIPTION_ID_META_KEY: ctx.request_id}}
        notification = cast(types.ServerNotification, _Notification(method=method, params=body))
        await ctx.session.send_notification(notification, related_request_id=ctx.request_id)

    def detailed(self, view: TaskView, version: str) -> dict[str, Any]:
        data = self.task(view, modern=True)
        entry = view.entry
        if entry.status == "completed":
            data["result"] = self.call_result(entry, version)
        elif entry.status == "failed" and entry.error is not None:
            data["error"] = entry.error
        elif entry.status == "input_required" and entry.input_requests:
            data["inputRequests"] = entry.input_requests
        return data

    def report_status(self, ctx: ServerRequestContext[Any], task_id: str) -> None:
        """2025-11-25: tell the session that created the task when it ends (`notifications/tasks/status`, optional
        in that revision; clients poll anyway). A session that is gone by then is not an error."""
        session, background = ctx.session, self.service.deps.background

        async def send(view: TaskView) -> None:
            notification = _Notification(method="notifications/tasks/status", params=self.task(view, modern=False))
            with contextlib.suppress(Exception):
                await session.send_notification(cast(types.ServerNotification, notification))

        def on_change(changed: str) -> None:
            view = self.service.get(changed) if changed == task_id else None
            if view is not None and view.entry.terminal and background is not None:
                self.service.listeners.remove(on_change)
                background.start_soon(send, view)

        self.service.listeners.append(on_change)

    def _gate(self, ctx: ServerRequestContext[Any]) -> bool:
        """True for a 2026-07-28 request (which must declare the extension); False for a 2025-11-25 one. Over HTTP,
        an `Mcp-Name` header names the task the body names (SEP-2243), or the request is refused."""
        if not is_modern(ctx):
            return False
        if not declares_extension(ctx):
            raise missing_extension()
        headers = getattr(ctx.request, "headers", None)  # the HTTP request's (None on stdio)
        named = headers.get("mcp-name") if headers is not None else None
        task_id = ctx.params.get("taskId") if isinstance(ctx.params, Mapping) else None
        if named is not None and named.strip() != task_id:
            raise MCPError(HEADER_MISMATCH, "Header mismatch: Mcp-Name does not match params.taskId")
        return True

    def register(self, server: Any) -> None:
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self.get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self.result)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self.list)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self.cancel)
        server.add_request_handler("tasks/update", UpdateTaskParams, self.update)
        server.add_request_handler("subscriptions/listen", ListenParams, self.listen)
        server.middleware.append(self.legacy_call_middleware)

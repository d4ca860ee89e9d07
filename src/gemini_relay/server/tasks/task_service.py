"""Tool calls as MCP tasks, on the job engine: the call runs in the background, its first job's id is the task id.

The server that starts a task runs the ordinary tool handler, so a finished task holds exactly the CallToolResult the
synchronous call would have returned. A task whose server went away is resumed by the next server asked about it: the
handler runs again within RunFollower.resuming, whose first runs are the task's existing jobs, followed to their
recorded results (no model turn is repeated), so the result is rebuilt by the same formatting code.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.store.job_store import JobNotFound
from gemini_relay.log import logger
from gemini_relay.server.tasks.store import TaskEntry, TaskState, TaskStore
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.common.progress import TAIL_CHARS, CallProgress

Invoke = Callable[[AnyTool, dict[str, Any], CallProgress, Deps], Awaitable[types.CallToolResult]]
TaskBody = Callable[["TaskInbox"], Awaitable[types.CallToolResult]]
POLL_SECONDS = 0.2  # how often tasks/result looks at a task run by another server
CANCEL_WAIT = 30.0  # bound on waiting for a cancelled task's handler to unwind (the job stop is bounded itself)


@dataclass
class TaskView:
    """A task as tasks/get reports it."""

    entry: TaskEntry
    message: str | None


@dataclass
class _Running:
    entry: TaskEntry
    call: CallProgress
    scope: anyio.CancelScope
    done: anyio.Event
    lock_fd: int | None = None
    inbox: TaskInbox | None = None  # a task that may ask the client for input (tasks/update answers it)


class TaskFailed(Exception):
    """A task's protocol-level failure: the task ends `failed` with this JSON-RPC error (a tool's own failure is
    an `isError` result, and the task `completed`)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = {"code": code, "message": message, **({"data": data} if data is not None else {})}


class TaskInbox:
    """Where a running task asks the client for input and tasks/update delivers the answers: the task is
    `input_required` with the requests still unanswered, and `working` again once every one is answered."""

    def __init__(self, service: TaskService, entry: TaskEntry) -> None:
        self._service, self._entry = service, entry
        self._answers: dict[str, Any] = {}
        self._complete = anyio.Event()

    async def ask(self, requests: dict[str, Any]) -> dict[str, Any]:
        """The answers to `requests`, keyed as asked, once the client has given all of them."""
        self._answers, self._complete = {}, anyio.Event()
        self._set(dict(requests), "input_required")
        await self._complete.wait()
        self._set(None, "working")
        return self._answers

    def deliver(self, responses: dict[str, Any]) -> None:
        pending = dict(self._entry.input_requests or {})
        for key, value in responses.items():
            if key in pending:  # an answer to a question not (or no longer) asked is ignored
                self._answers[key] = value
                del pending[key]
        self._set(pending, "input_required")
        if not pending:
            self._complete.set()

    def _set(self, requests: dict[str, Any] | None, status: TaskState) -> None:
        entry = self._entry
        if entry.terminal:
            return
        entry.input_requests, entry.status = requests, status
        if self._service.store is not None:
            self._service.store.save(entry)
        self._service._notify(entry.task_id)


class TaskService:
    def __init__(self, deps: Deps, tools: dict[str, AnyTool], invoke: Invoke) -> None:
        self.deps = deps
        self._tools = tools
        self._invoke = invoke
        self.store = TaskStore(deps.settings.state_dir) if deps.jobs is not None else None
        self._running: dict[str, _Running] = {}
        self.listeners: list[Callable[[str], None]] = []  # told each task id whose status changed
        if self.store is not None:
            for task_id in self.store.ids():
                self._load(task_id)  # drops the records of tasks past their TTL (their jobs are swept alike)

    @property
    def available(self) -> bool:
        return self.store is not None and self.deps.background is not None

    @property
    def ttl_seconds(self) -> float:
        return self.deps.settings.job_ttl_seconds

    async def start(self, tool: AnyTool, arguments: dict[str, Any]) -> TaskEntry | types.CallToolResult:
        """The task, once its first job exists (durably: tasks/get resolves it); or the result itself when the call
        finished without starting a run (refused arguments, a cached chunk)."""
        assert self.store is not None and self.deps.background is not None
        call = CallProgress(tool.name)
        ready = anyio.Event()
        running: list[_Running] = []
        finished: list[types.CallToolResult] = []

        def on_watch(record: RunRecord) -> None:
            if running:
                self._add_job(running[0].entry, record)
                return
            now = time.time()
            entry = TaskEntry(record.run_id, tool.name, arguments, now, now, [record.run_id])
            fd = self.store.try_lock(entry.task_id) if self.store is not None else None
            if self.store is not None:
                self.store.save(entry)
            running.append(_Running(entry, call, scope, anyio.Event(), fd))
            self._running[entry.task_id] = running[0]
            ready.set()

        call.on_watch = on_watch
        scope = anyio.CancelScope()

        async def body() -> None:
            try:
                with scope:
                    finished.append(await self._invoke(tool, arguments, call, self.deps))
            finally:
                ready.set()
                if running:
                    self._finish(running[0], finished[0] if finished else None)

        self.deps.background.start_soon(body)
        await ready.wait()
        if running:
            return running[0].entry
        return finished[0] if finished else _lost(tool.name)

    async def start_detached(self, tool: str, arguments: dict[str, Any], body: TaskBody) -> TaskEntry:
        """A task that runs `body` (no job behind it: an in-process call, e.g. a conformance fixture); `body` may
        ask the client for input through its inbox and fail with TaskFailed."""
        assert self.store is not None and self.deps.background is not None
        now = time.time()
        entry = TaskEntry(os.urandom(8).hex(), tool, arguments, now, now)
        fd = self.store.try_lock(entry.task_id)
        self.store.save(entry)
        run = _Running(entry, CallProgress(tool), anyio.CancelScope(), anyio.Event(), fd)
        run.inbox = TaskInbox(self, entry)
        self._running[entry.task_id] = run

        async def go() -> None:
            result: types.CallToolResult | None = None
            error: dict[str, Any] | None = None
            try:
                with run.scope:
                    assert run.inbox is not None
                    result = await body(run.inbox)
            except TaskFailed as exc:
                error = exc.error
            finally:
                self._finish(run, result, error)

        self.deps.background.start_soon(go)
        return entry

    def deliver(self, task_id: str, responses: dict[str, Any]) -> bool:
        """tasks/update: hand the client's answers to the running task; False if it asks for nothing."""
        run = self._running.get(task_id)
        if run is None or run.inbox is None or run.entry.status != "input_required":
            return False
        run.inbox.deliver(responses)
        return True

    def completed_now(self, tool: str, arguments: dict[str, Any], result: types.CallToolResult) -> TaskEntry:
        """A task that is finished at birth (a 2025-11-25 client asked for a task; the call needed no run)."""
        assert self.store is not None
        now = time.time()
        entry = TaskEntry(os.urandom(8).hex(), tool, arguments, now, now, status="completed", result=_wire(result))
        self.store.save(entry)
        return entry

    def _add_job(self, entry: TaskEntry, record: RunRecord) -> None:
        if record.run_id not in entry.jobs and self.store is not None:
            entry.jobs.append(record.run_id)
            self.store.save(entry)

    def _finish(self, run: _Running, result: types.CallToolResult | None, error: dict[str, Any] | None = None) -> None:
        """Record the outcome, unless the server is going away (then the task is resumed by the next server)."""
        entry = run.entry
        self._running.pop(entry.task_id, None)
        try:
            if error is not None and not run.scope.cancel_called:
                entry.status, entry.error, entry.input_requests = "failed", error, None
                assert self.store is not None
                self.store.save(entry)
                self._notify(entry.task_id)
                return
            if result is None and not run.scope.cancel_called:
                return  # shutdown: neither finished nor cancelled; the lock dies with this process
            assert self.store is not None
            stored = self.store.load(entry.task_id)
            if run.scope.cancel_called or (stored is not None and stored.cancel_requested) or result is None:
                entry.status, entry.cancel_requested = "cancelled", True
            else:
                entry.status, entry.result = "completed", _wire(result)
            entry.input_requests = None
            self.store.save(entry)
            self._notify(entry.task_id)
        finally:
            if run.lock_fd is not None:
                os.close(run.lock_fd)
            run.done.set()

    def _notify(self, task_id: str) -> None:
        for listener in list(self.listeners):
            listener(task_id)

    # --- what the protocol asks -----------------------------------------------------------------------------

    def get(self, task_id: str) -> TaskView | None:
        """None for an unknown or expired task. A task whose server is gone is resumed here, in the background."""
        run = self._running.get(task_id)
        if run is not None:
            return TaskView(run.entry, _progress_line(run.call))
        entry = self._load(task_id)
        if entry is None or entry.terminal:
            return None if entry is None else TaskView(entry, None)
        assert self.store is not None
        fd = self.store.try_lock(task_id)
        if fd is None:  # its server lives: quote its job's text
            return TaskView(entry, self._job_line(entry))
        if entry.cancel_requested:
            entry.status = "cancelled"
            self.store.save(entry)
            os.close(fd)
            return TaskView(entry, None)
        return TaskView(self._resume(entry, fd).entry, f"⏳ {entry.tool} - resuming the task's runs...")

    def _load(self, task_id: str) -> TaskEntry | None:
        if self.store is None:
            return None
        entry = self.store.load(task_id)
        if entry is not None and time.time() - entry.created_at > self.ttl_seconds:
            self.store.delete(task_id)  # its jobs are swept after the same TTL
            return None
        return entry

    def _job_line(self, entry: TaskEntry) -> str | None:
        if self.deps.jobs is None or not entry.jobs:
            return None
        with contextlib.suppress(JobNotFound, OSError):
            tail = self.deps.jobs.store.text(entry.jobs[-1])[-TAIL_CHARS:].strip()
            return f"📝 Output: ...{tail}" if tail else f"🧠 {entry.tool} - Gemini is analyzing your request..."
        return None

    def _resume(self, entry: TaskEntry, fd: int) -> _Running:
        assert self.deps.jobs is not None and self.deps.background is not None
        tool = self._tools.get(entry.tool)
        call = CallProgress(entry.tool)
        run = _Running(entry, call, anyio.CancelScope(), anyio.Event(), fd)
        self._running[entry.task_id] = run
        call.on_watch = lambda record: self._add_job(entry, record)
        logger.info("Resuming task %s (%s) of a server that is gone", entry.task_id, entry.tool)

        async def body() -> None:
            result: types.CallToolResult | None = None
            try:
                # The handler runs again; its first runs are the task's jobs, attached to as they are.
                with run.scope, self.deps.runs.resuming(list(entry.jobs)):
                    if tool is None:
                        result = _lost(entry.tool)
                    else:
                        result = await self._invoke(tool, entry.arguments, call, self.deps)
            finally:
                self._finish(run, result)

        self.deps.background.start_soon(body)
        return run

    async def result(self, task_id: str) -> TaskEntry | None:
        """Block until the task ends (2025-11-25 tasks/result)."""
        while True:
            view = self.get(task_id)
            if view is None or view.entry.terminal:
                return view.entry if view is not None else None
            run = self._running.get(task_id)
            if run is not None:
                await run.done.wait()
            else:
                await anyio.sleep(POLL_SECONDS)

    async def cancel(self, task_id: str) -> TaskEntry | None:
        """Stop the task's runs; the task ends cancelled (unless it had already ended). None: unknown task."""
        run = self._running.get(task_id)
        if run is not None:
            run.scope.cancel()
            with anyio.move_on_after(CANCEL_WAIT):
                await run.done.wait()
            return self._load(task_id)
        entry = self._load(task_id)
        if entry is None or entry.terminal:
            return entry
        assert self.store is not None
        entry.cancel_requested = True
        self.store.save(entry)
        if self.deps.jobs is not None:
            for job_id in entry.jobs:
                with contextlib.suppress(JobNotFound):
                    if not self.deps.jobs.status(job_id).state.terminal:
                        await self.deps.jobs.cancel(job_id)
        fd = self.store.try_lock(task_id)
        if fd is not None:  # nobody runs it: it ends here
            entry.status = "cancelled"
            self.store.save(entry)
            os.close(fd)
            self._notify(task_id)
        return self._load(task_id)

    def list(self) -> list[TaskView]:
        views = [v for v in (self.get(i) for i in self.store.ids()) if v is not None] if self.store else []
        return sorted(views, key=lambda v: v.entry.created_at, reverse=True)


def _progress_line(call: CallProgress) -> str:
    """The keepalive's line: the queue or working message, then the output tail."""
    message = call.status(0)
    tail = call.tail()
    return f"{message}\n📝 Output: ...{tail}" if tail else message


def _wire(result: types.CallToolResult) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _lost(tool: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error executing {tool}: the task could not be resumed")],
        is_error=True,
    )


def iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))

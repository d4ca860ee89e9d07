"""Warm `gemini --acp` processes, keyed by what a process cannot change per session (binary and environment).

One process per key serves every conversation of that key, one ACP session per conversation, one prompt at a time
per conversation (prompts of different conversations run concurrently). A process is stopped when idle for
`idle_seconds`, and recycled (no new prompts, stopped once its last prompt ends) after `max_prompts` prompts, past
`max_sessions` sessions or past an RSS ceiling; its conversations continue in the next process via `session/load`.
At most `max_processes` run; a new key evicts the least recently used idle one, or waits for one to become idle.

Use it as `async with WarmPool(...) as pool:`; leaving the block (or `aclose()`, or cancelling the owning task)
stops every child: stdin closed, SIGTERM to the group, a bounded grace, SIGKILL.
"""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup

from gemini_relay.backends.gemini_cli.acp.connection import (
    HANDSHAKE_TIMEOUT,
    AcpConnection,
    AcpConnectionLost,
    AcpHandshakeError,
    AcpRpcError,
    open_connection,
)
from gemini_relay.backends.gemini_cli.acp.errors import session_failure
from gemini_relay.backends.gemini_cli.acp.session_files import (
    protect_for_load,
    remove_history_less,
    remove_load_leftovers,
)
from gemini_relay.backends.gemini_cli.acp.sessions import (
    Launch,
    Lease,
    SessionState,
    Settings,
    SpareKey,
    WarmProcess,
    close_when_idle,
    group_rss,
    session_count,
    session_state,
)
from gemini_relay.backends.gemini_cli.acp.spares import first_spare, fresh, replenish
from gemini_relay.backends.gemini_cli.settings import (
    DEFAULT_WARM_MAX,
    DEFAULT_WARM_MAX_RSS_MB,
    DEFAULT_WARM_MAX_SESSIONS,
    gemini_home,
)
from gemini_relay.backends.idle import IdleReaper
from gemini_relay.config import DEFAULT_WARM_IDLE
from gemini_relay.errors import RunFailed
from gemini_relay.log import logger
from gemini_relay.supervise.process import DEFAULT_GRACE

DEFAULT_MAX_PROCESSES = DEFAULT_WARM_MAX
DEFAULT_MAX_PROMPTS = 500
# Each session the CLI has seen stays in its heap (no session/close): see settings.DEFAULT_WARM_MAX_SESSIONS.
DEFAULT_MAX_SESSIONS = DEFAULT_WARM_MAX_SESSIONS
DEFAULT_MAX_RSS = DEFAULT_WARM_MAX_RSS_MB * 1024 * 1024  # past this a fresh process is cheaper
DEFAULT_MAX_SPARES = 4  # spare sessions per (cwd, mode, model): a burst of fresh asks beyond it waits for session/new
RSS_CHECK_INTERVAL = 5.0  # reading /proc for the whole group costs a few ms; not on every prompt
REPLAY_SETTLE = 2.0  # session/load replays history after its response; the commands list marks the end
HANDSHAKE_RETRY = 60.0  # a key whose handshake failed is not retried sooner (each try costs a CLI boot)
FIRST_SPARE_WAIT = 5.0  # a prewarmed process counts as ready once its first spare is made, or after this
SPARE_SETTLE = 1.0  # at close, how long a session/new in flight may take to answer (it takes ~30-70 ms)


class WarmPool:
    def __init__(
        self,
        *,
        max_processes: int = DEFAULT_MAX_PROCESSES,
        idle_seconds: float = DEFAULT_WARM_IDLE,
        max_prompts: int = DEFAULT_MAX_PROMPTS,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_rss_bytes: int = DEFAULT_MAX_RSS,
        max_spares: int = DEFAULT_MAX_SPARES,
        grace: float = DEFAULT_GRACE,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
    ) -> None:
        self.max_processes = max_processes
        self.idle_seconds = idle_seconds
        self.max_prompts = max_prompts
        self.max_sessions = max_sessions
        self.max_rss_bytes = max_rss_bytes
        self.max_spares = max_spares
        self._grace = grace
        self._handshake_timeout = handshake_timeout
        self._warm: list[WarmProcess] = []
        self._failed: dict[object, tuple[float, AcpHandshakeError]] = {}
        self._idle = IdleReaper()
        self._tg: TaskGroup | None = None
        self._exit_stack: contextlib.AsyncExitStack | None = None
        self._closed = False
        # ("ready" | "retired", pid), oldest first: the order processes took over and left, for logs and tests.
        self.events: collections.deque[tuple[str, int]] = collections.deque(maxlen=64)

    # -- lifetime ---------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        stack = contextlib.AsyncExitStack()
        self._tg = await stack.enter_async_context(anyio.create_task_group())
        self._exit_stack = stack
        self._tg.start_soon(self._idle.run, self._sweep)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every child and wait (bounded by the kill grace) until each process group is gone.

        Call it from the task that entered the pool (anyio task groups are bound to their task).
        """
        self._closed = True
        for warm in self._warm:
            warm.draining = True
        # A session/new in flight would leave a recording whose id nobody learns (and so nobody sweeps).
        with anyio.CancelScope(shield=True), anyio.move_on_after(SPARE_SETTLE):  # bounded, even when cancelled
            for warm in list(self._warm):
                while sum(warm.spare_making.values()) and warm.connection is not None and warm.connection.alive:
                    await warm.spare_done.wait()
        for warm in self._warm:
            if warm.connection is not None:
                warm.connection.close_soon()
        stack, self._exit_stack = self._exit_stack, None
        if stack is None:
            return
        # Each child's stop runs shielded inside its own task, so cancelling the group cannot skip one.
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
        await stack.aclose()

    @property
    def processes(self) -> list[int]:
        """PIDs of the running warm processes (each leads its own process group)."""
        return [w.connection.pid for w in self._warm if w.connection is not None and w.connection.alive]

    def prewarm(self, launch: Launch, spare: SpareKey | None = None) -> None:
        """Start one process for `launch` in the background, so the first prompt is warm too; with `spare`, the
        first new conversation's session is made as soon as it is up (a first call then skips session/new too)."""
        if self._closed:
            return
        existing = self._find(launch)
        if existing is not None:
            if spare is not None and spare not in existing.spare_target and existing.connection is not None:
                assert self._tg is not None
                replenish(existing, spare, self._tg)  # another project sharing the process: its first ask too
            return
        if len(self._warm) < self.max_processes:
            self._start(launch).first_spare = spare

    # -- leases -----------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def lease(
        self, launch: Launch, conversation_id: str | None, cwd: Path, *, mode: str, model: str | None
    ) -> AsyncIterator[Lease]:
        """The conversation's session in a warm process (created, loaded or live), locked for one prompt.

        Raises:
            AcpHandshakeError: no warm process can be started for `launch` (fall back to cold `-p`).
            RunFailed / InputError: the session could not be created or loaded (unknown conversation, auth).
        """
        found = self._find(launch)
        up = found is not None and found.ready.is_set()  # up before this run asked: the run is warm
        warm = await self._process_for(launch)
        connection = warm.connection
        assert connection is not None
        warm.active += 1
        if warm.active == 1:
            warm.leases_ended = anyio.Event()
        created = False
        try:
            state, created = await self._session(warm, connection, conversation_id, cwd, (mode, model))
            async with state.lock:
                yield Lease(connection, state, created, warm, up and warm is found)
        finally:
            warm.active -= 1
            if warm.active == 0:
                warm.leases_ended.set()
            warm.prompts += 1
            warm.last_used = time.monotonic()
            if created and self._tg is not None:
                # The next spare is made after this prompt, not beside it (spares.py says why).
                replenish(warm, (cwd, mode, model), self._tg)
            self._after_prompt(warm)

    async def _session(
        self, warm: WarmProcess, connection: AcpConnection, conversation_id: str | None, cwd: Path, settings: Settings
    ) -> tuple[SessionState, bool]:
        if conversation_id is not None and conversation_id in warm.sessions:
            return warm.sessions[conversation_id], False
        try:
            if conversation_id is None:
                state = await fresh(warm, connection, (cwd, *settings), self.max_spares)
            else:
                result = await self._load(warm.launch, connection, conversation_id, cwd)
                state = session_state(conversation_id, cwd, result)
        except AcpRpcError as exc:
            raise session_failure(exc, conversation_id) from None
        except AcpConnectionLost as exc:
            raise RunFailed(f"{exc.description} while opening the session", retryable=True) from None
        except TimeoutError:
            raise RunFailed("gemini --acp did not open the session in time", retryable=True) from None
        warm.sessions[state.session_id] = state
        return state, conversation_id is None

    async def _load(self, launch: Launch, connection: AcpConnection, session_id: str, cwd: Path) -> dict[str, Any]:
        home = gemini_home(launch.env)
        keep = await anyio.to_thread.run_sync(protect_for_load, home, session_id)
        try:
            async with connection.listen(session_id) as replay:
                result = await connection.request(
                    "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
                )
                # The replayed history must not reach the first prompt's answer.
                with anyio.move_on_after(REPLAY_SETTLE):
                    async for item in replay:
                        update = item.payload.get("update") if item.kind == "update" else None
                        if isinstance(update, dict) and update.get("sessionUpdate") == "available_commands_update":  # pyright: ignore[reportUnknownMemberType]
                            break
        finally:
            # A failed load leaves its fresh empty recording too.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(remove_load_leftovers, home, session_id, keep)
        return result

    # -- processes --------------------------------------------------------------------------------------------

    def _find(self, launch: Launch) -> WarmProcess | None:
        """The process serving `launch`: the first usable one, which is the one being replaced while its successor
        boots (the successor takes over once ready: _serve)."""
        for warm in self._warm:
            if warm.launch.key == launch.key and warm.usable:
                return warm
        return None

    async def _process_for(self, launch: Launch) -> WarmProcess:
        if self._closed or self._tg is None:
            raise AcpHandshakeError("the warm pool is closed")
        failed = self._failed.get(launch.key)
        if failed is not None and time.monotonic() - failed[0] < HANDSHAKE_RETRY:
            raise failed[1]
        while True:
            warm = self._find(launch)
            if warm is None and self._make_room():
                warm = self._start(launch)
            if warm is not None:
                await warm.ready.wait()
                if warm.connection is not None and warm.connection.alive and not warm.draining:
                    return warm
                if isinstance(warm.error, AcpHandshakeError):
                    raise warm.error
                continue
            # Every slot is busy with another key: wait until a process frees up.
            await self._idle.changed()

    def _make_room(self) -> bool:
        live = [w for w in self._warm if not w.draining]
        if len(self._warm) < self.max_processes:
            return True
        idle = sorted((w for w in live if w.active == 0), key=lambda w: w.last_used)
        if idle:
            self._retire(idle[0], "pool cap reached")
        return False

    def _start(self, launch: Launch) -> WarmProcess:
        assert self._tg is not None
        warm = WarmProcess(launch)
        self._warm.append(warm)
        self._tg.start_soon(self._serve, warm)
        return warm

    async def _serve(self, warm: WarmProcess) -> None:
        launch = warm.launch
        try:
            async with open_connection(
                launch.binary, launch.env, launch.cwd, grace=self._grace, handshake_timeout=self._handshake_timeout
            ) as connection:
                warm.connection = connection
                if warm.first_spare is not None:
                    with anyio.move_on_after(FIRST_SPARE_WAIT):  # a stuck session/new must not hold the first call
                        await first_spare(warm, warm.first_spare)
                warm.ready.set()
                self.events.append(("ready", connection.pid))
                if warm.replaces is not None:  # its predecessor served meanwhile; from now on this one does
                    old, warm.replaces = warm.replaces, None
                    old.successor = None
                    self._retire(old, old.replaced_because)
                await connection.wait_closing()
        except AcpHandshakeError as exc:
            logger.warning("Warm Gemini CLI unavailable: %s", exc)
            warm.error = exc
            self._failed[launch.key] = (time.monotonic(), exc)
        except Exception as exc:  # a bug here must not take the pool's task group (and every other child) down
            logger.exception("Warm Gemini CLI process failed")
            warm.error = exc
        finally:
            if warm.replaces is not None:  # a successor that failed to boot: the old process serves on
                warm.replaces.successor, warm.replaces = None, None
            warm.draining = True
            warm.ready.set()
            with contextlib.suppress(ValueError):
                self._warm.remove(warm)
            self._notify()
            warm.spares = {}
            # The process is gone: sweep the history-less recordings it left (unused spares, a spare cut off
            # mid-creation, the session it opens in its own cwd at start); nobody can continue them.
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._grace):
                await anyio.to_thread.run_sync(
                    remove_history_less, gemini_home(launch.env), warm.created, launch.cwd, warm.started_at
                )

    def _retire(self, warm: WarmProcess, why: str) -> None:
        if warm.draining:
            return
        logger.info("Retiring warm gemini --acp: %s", why)
        if warm.connection is not None:
            self.events.append(("retired", warm.connection.pid))
        warm.draining = True
        close_when_idle(warm)
        self._notify()

    def _after_prompt(self, warm: WarmProcess, *, measure_here: bool = False) -> None:
        if warm.draining:
            close_when_idle(warm)
        elif warm.prompts >= self.max_prompts:
            self._recycle(warm, f"served {warm.prompts} prompts")
        elif session_count(warm) >= self.max_sessions:
            self._recycle(warm, f"holds {len(warm.sessions)} sessions")
        elif warm.connection is not None and time.monotonic() - warm.rss_checked >= RSS_CHECK_INTERVAL:
            warm.rss_checked = time.monotonic()
            if measure_here or self._tg is None:
                self._check_rss(warm, group_rss(warm.connection.pid))
            else:
                # Off the prompt's path: this runs before its answer is handed on, and the measure scans all of
                # /proc (tens of ms on a busy machine, where a later ask is otherwise ~10 ms over the CLI's own).
                self._tg.start_soon(self._measure_rss, warm, warm.connection.pid)
        self._notify()

    async def _measure_rss(self, warm: WarmProcess, pid: int) -> None:
        self._check_rss(warm, await anyio.to_thread.run_sync(group_rss, pid, abandon_on_cancel=True))

    def _check_rss(self, warm: WarmProcess, rss: int) -> None:
        if rss > self.max_rss_bytes:
            self._recycle(warm, f"RSS {rss // (1024 * 1024)} MB over the ceiling")
            self._notify()

    def _recycle(self, warm: WarmProcess, why: str) -> None:
        """Replace a process that grew too old or too big: its successor boots now, and the old one serves every
        caller until the successor is ready, then retires (_serve). No caller waits for the boot."""
        if warm.draining or warm.successor is not None:
            return
        failed = self._failed.get(warm.launch.key)
        if self._closed or (failed is not None and time.monotonic() - failed[0] < HANDSHAKE_RETRY):
            self._retire(warm, why)
            return
        logger.info("Replacing warm gemini --acp: %s", why)
        successor = self._start(warm.launch)
        # The old process's most recent new-conversation settings: the next fresh ask finds a session ready.
        successor.first_spare = next(reversed(warm.spare_target), None)
        successor.replaces, warm.successor, warm.replaced_because = warm, successor, why

    def check_now(self) -> None:
        """Apply the recycling rules to every idle process now (the RSS rule included, unthrottled)."""
        for warm in list(self._warm):
            warm.rss_checked = 0.0
            self._after_prompt(warm, measure_here=True)

    def _sweep(self, now: float) -> float:
        """Stop processes idle longer than idle_seconds; the seconds until the next one could expire."""
        wait = self.idle_seconds
        for warm in list(self._warm):
            if warm.active or warm.draining or warm.connection is None:
                continue
            left = warm.last_used + self.idle_seconds - now
            if left <= 0:
                self._retire(warm, f"idle for {self.idle_seconds:g}s")
            else:
                wait = min(wait, left)
        return wait

    def _notify(self) -> None:
        self._idle.notify()

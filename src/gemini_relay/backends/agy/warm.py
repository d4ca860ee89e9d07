"""Warm agy: one `agy --input-format stream-json --output-format stream-json` process per live conversation.

agy reads one `{"event":"user",…}` line per turn and answers each with the usual stream ending in a `result`
(agy.md §2.3), in the same conversation. A run whose argv (without `--conversation`) and cwd equal those of a live
process of its conversation writes its line to that process; any other run starts a new one (`--conversation`
continues from disk), which then stays for the conversation's next turn. The one-run-at-a-time rule is the
backend's (max_concurrent = 1). A process idle for GEMINI_RELAY_WARM_IDLE is stopped; so is one whose turn was
cancelled or timed out (stream-json has no cancel message), and every one at `aclose()`. Each process leads its
own group and is stopped with SIGTERM to the group, a bounded grace, SIGKILL. Where agy does not list
`--input-format` the run is the cold one: build_invocation then puts the prompt on argv.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process, TaskGroup

from gemini_relay.backends.agy.args import Invocation
from gemini_relay.backends.agy.backend import AgyBackend
from gemini_relay.backends.agy.decoder import AgyDecoder
from gemini_relay.backends.agy.settings import INSTALL_HINT
from gemini_relay.backends.cli_run import CliRun
from gemini_relay.backends.idle import IdleReaper
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, Finished, Spawned
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed
from gemini_relay.log import logger, redact_argv
from gemini_relay.streams.transcript import Transcript
from gemini_relay.supervise.groups import group_alive
from gemini_relay.supervise.process import POLL_INTERVAL, READ_SIZE, STDERR_TAIL_BYTES, ProcessExit, stop_group

MAX_LIVE = 4  # live conversations kept warm; the least recently used beyond this is stopped
ERROR_EXIT_WAIT = 2.0  # agy exits right after a failed turn's result; its exit code and stderr classify the failure
READ_POLL = 0.1  # how often a turn waiting for output looks whether the process is gone

__all__ = ["WarmAgyBackend"]


@dataclass(eq=False)
class _Live:
    proc: Process
    stderr: IO[bytes]
    key: tuple[str, ...]  # argv without --conversation, then the cwd
    conversation: str = ""
    last_used: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def stderr_since(self, offset: int) -> str:
        try:
            size = os.fstat(self.stderr.fileno()).st_size
            self.stderr.seek(max(offset, size - STDERR_TAIL_BYTES))
            return self.stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""

    def stderr_size(self) -> int:
        try:
            return os.fstat(self.stderr.fileno()).st_size
        except (OSError, ValueError):
            return 0


EOF_EXIT_WAIT = 2.0  # seconds a warm agy gets to exit on stdin EOF before SIGTERM


class WarmAgyBackend(AgyBackend):
    """AgyBackend whose stream-json runs continue in a live process once an owner `open()`ed it."""

    def __init__(self, settings: Settings, probes: ProbeCache | None = None) -> None:
        super().__init__(settings, probes)
        self._live: list[_Live] = []
        self._tg: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._idle = IdleReaper()

    @property
    def live_processes(self) -> list[int]:
        """PIDs of the parked (idle, warm) agy processes."""
        return [live.pid for live in self._live if live.alive]

    async def open(self) -> None:
        """Start the idle reaper in the caller's task (the same task must call `aclose`); no-op with warm off."""
        if not self._settings.warm or self._stack is not None:
            return
        stack = contextlib.AsyncExitStack()
        self._tg = await stack.enter_async_context(anyio.create_task_group())
        self._stack = stack
        self._tg.start_soon(self._idle.run, self._sweep)

    async def aclose(self) -> None:
        """Stop every live agy (SIGTERM to its group, grace, SIGKILL); later runs are cold."""
        stack, self._stack = self._stack, None
        live, self._live = self._live, []
        for item in live:
            await self._stop(item)  # shielded inside
        if self._tg is not None:
            self._tg.cancel_scope.cancel()  # the reaper and any stop in flight (each shielded) end with it
            self._tg = None
        if stack is not None:
            await stack.aclose()

    async def _execute(
        self, seen: Transcript, inv: Invocation, cwd: Path, decoder: AgyDecoder, run: CliRun
    ) -> AsyncGenerator[AgentEvent, None]:
        if self._stack is None or not inv.prompt_on_stdin or inv.stdin is None:
            async with aclosing(super()._execute(seen, inv, cwd, decoder, run)) as events:
                async for event in events:
                    yield event
            return
        key = (*_without_conversation(inv.argv), str(cwd))
        live, stale = self._take(seen.spec.conversation_id, key)
        if stale is not None:
            # Its conversation goes on with other flags: that process must be gone (its conversation cache
            # written) before a new one continues the conversation.
            with anyio.CancelScope(shield=True):
                await self._stop(stale)
        reused = live is not None
        live = live or await self._spawn(inv.argv, cwd, key)
        parked = False
        try:
            yield seen.apply(Spawned(live.pid, warm=reused))
            offset = live.stderr_size()
            async with aclosing(
                _turn(live, inv.stdin, seen, decoder, run, offset, self._settings.kill_grace)
            ) as events:
                async for event in events:
                    yield event
            turn_done = seen.finished is not None and run.exit is not None and run.exit.returncode == 0
            if live.alive and turn_done and seen.session_id and self._stack is not None:  # not after aclose
                live.conversation = seen.session_id
                self._park(live)
                parked = True
        finally:
            if not parked:
                with anyio.CancelScope(shield=True):
                    await self._stop(live)  # cancelled, timed out, or exited: this process serves no next turn

    # -- processes --------------------------------------------------------------------------------------------

    def _take(self, conversation: str | None, key: tuple[str, ...]) -> tuple[_Live | None, _Live | None]:
        """(the conversation's live process when it fits this run, else None; its process when it does not)."""
        for live in self._live:
            if conversation and live.conversation == conversation:
                self._live.remove(live)
                if live.alive and live.key == key:
                    return live, None
                return None, live
        return None, None

    async def _spawn(self, argv: Sequence[str], cwd: Path, key: tuple[str, ...]) -> _Live:
        logger.info("Spawning warm: %s", redact_argv(argv))
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the process is stopped
        try:
            proc = await anyio.open_process(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=dict(self.env()),
                start_new_session=True,
            )
        except OSError as exc:
            stderr.close()
            raise RunFailed(
                f"cannot execute {argv[0]}: {exc.strerror or exc}. {INSTALL_HINT}", reason=FailureReason.SPAWN_FAILED
            ) from exc
        return _Live(proc, stderr, key)

    def _park(self, live: _Live) -> None:
        live.last_used = time.monotonic()
        self._live.append(live)
        while len(self._live) > MAX_LIVE:
            self._stop_soon(self._live.pop(0))
        self._notify()

    def _stop_soon(self, live: _Live) -> None:
        if self._tg is not None:
            self._tg.start_soon(self._stop, live)

    async def _stop(self, live: _Live) -> None:
        with anyio.CancelScope(shield=True):
            if live.proc.stdin is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await live.proc.stdin.aclose()
                # EOF ends agy after it has written its conversation cache; only one that lingers is signalled.
                with anyio.move_on_after(min(self._settings.kill_grace, EOF_EXIT_WAIT)):
                    while group_alive(live.pid):
                        await anyio.sleep(0.02)
            await stop_group(live.pid, self._settings.kill_grace)
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await live.proc.aclose()
            live.stderr.close()

    def _sweep(self, now: float) -> float:
        """Stop live processes idle longer than GEMINI_RELAY_WARM_IDLE; the seconds until the next could expire."""
        idle = wait = self._settings.warm_idle_seconds
        for live in list(self._live):
            left = live.last_used + idle - now
            if left <= 0 or not live.alive:
                self._live.remove(live)
                self._stop_soon(live)
            else:
                wait = min(wait, left)
        return wait

    def _notify(self) -> None:
        self._idle.notify()


async def _turn(
    live: _Live, line: bytes, seen: Transcript, decoder: AgyDecoder, run: CliRun, offset: int, grace: float
) -> AsyncGenerator[AgentEvent, None]:
    """Write one user line and decode until the turn's `result`; fills run.exit like a process of its own would:
    0 with this turn's stderr, or the real exit when agy ends (it does right after a failed turn)."""
    assert live.proc.stdin is not None and live.proc.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await live.proc.stdin.send(line)  # when agy is gone, its exit is read below
    finished = False
    while not finished:
        chunk: bytes | None = None
        with anyio.move_on_after(READ_POLL):
            try:
                chunk = await live.proc.stdout.receive(READ_SIZE)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
        if chunk is None:
            if live.alive:
                continue
            break
        for event in decoder.push(chunk):
            seen.apply(event)
            if isinstance(event, Finished):
                finished = True
            else:
                yield event
    if not finished:
        for event in decoder.flush():
            seen.apply(event)
            if not isinstance(event, Finished):
                yield event
    if not finished or (seen.finished is not None and seen.finished.status != "SUCCESS"):
        with anyio.move_on_after(ERROR_EXIT_WAIT):
            while live.alive:
                await anyio.sleep(POLL_INTERVAL)
    if not finished and live.alive:  # stdout closed without a result: the turn is over, so is the process
        await stop_group(live.pid, grace)
        with anyio.move_on_after(ERROR_EXIT_WAIT):
            while live.alive:
                await anyio.sleep(POLL_INTERVAL)
    code = live.proc.returncode
    if code is None:
        run.exit = ProcessExit(returncode=0, stderr=live.stderr_since(offset))
    else:
        run.exit = ProcessExit(returncode=128 - code if code < 0 else code, stderr=live.stderr_since(offset))


def _without_conversation(argv: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--conversation", "-conversation"):
            skip = True
            continue
        if arg.startswith(("--conversation=", "-conversation=")):
            continue
        out.append(arg)
    return tuple(out)

"""Run one child in its own process group; stream its stdout; stop the whole group on exit, timeout or cancel.

Contract: stdin is /dev/null or fed once and closed (agy blocks on an open pipe). When the leader exits, whatever is
left of its group is stopped too, so no grandchild outlives the run. Cancellation (timeout, MCP cancel,
gemini-cancel) stops the group under a shield: SIGTERM, a bounded grace, then SIGKILL. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from gemini_relay.supervise.groups import group_alive, open_pidfd, signal_group

DEFAULT_GRACE = 5.0  # SIGTERM -> SIGKILL; CLIs flush their session files on SIGTERM
KILL_REAP_TIMEOUT = 2.0  # after SIGKILL the kernel needs only a moment; bounded in case of D-state members
REAP_TIMEOUT = 10.0  # a dead child's exit status, as the event loop collects it: late only on a loaded machine
DRAIN_TIMEOUT = 1.0  # pipes close right after the group is gone; bounded in case a setsid'd descendant holds them
POLL_INTERVAL = 0.02  # /proc and returncode polling; asyncio on 3.11 cannot await exit without pipe EOF
STDERR_TAIL_BYTES = 64 * 1024  # enough for every stderr signal we classify (agy reads only the last 2000 bytes)
READ_SIZE = 65536


class SpawnError(OSError):
    """The binary could not be executed at all."""


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: Path
    stdin: bytes | None = None  # None: /dev/null


@dataclass(frozen=True, slots=True)
class ProcessExit:
    returncode: int  # shell convention: 128 + n for a death by signal n
    stderr: str  # the last STDERR_TAIL_BYTES, decoded


async def run_process(
    spec: ProcessSpec,
    on_stdout: Callable[[bytes], None],
    *,
    grace: float = DEFAULT_GRACE,
    on_spawn: Callable[[int], None] | None = None,
) -> ProcessExit:
    """Run `spec` to completion, calling `on_stdout` with each chunk; cancel to stop the whole group.

    Raises:
        SpawnError: the binary is missing or not executable.
    """
    try:
        proc = await anyio.open_process(
            list(spec.argv),
            stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=spec.cwd,
            env=dict(spec.env),
            start_new_session=True,
        )
    except OSError as exc:
        raise SpawnError(exc.errno, f"cannot execute {spec.argv[0]}: {exc.strerror or exc}") from exc
    pgid = proc.pid
    if on_spawn is not None:
        on_spawn(pgid)
    tail = bytearray()
    try:
        async with anyio.create_task_group() as tg:
            stdout_done = anyio.Event()
            stderr_done = anyio.Event()
            if spec.stdin is not None and proc.stdin is not None:
                tg.start_soon(_feed, proc.stdin, spec.stdin)
            assert proc.stdout is not None and proc.stderr is not None
            tg.start_soon(_pump, proc.stdout, on_stdout, stdout_done)
            tg.start_soon(_pump, proc.stderr, lambda chunk: _keep_tail(tail, chunk), stderr_done)
            await _wait_leader(proc)
            await stop_group(pgid, grace)
            with anyio.move_on_after(DRAIN_TIMEOUT):
                await stdout_done.wait()
                await stderr_done.wait()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_group(pgid, grace)
            await close_process(proc)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return ProcessExit(returncode=128 - code if code < 0 else code, stderr=tail.decode("utf-8", errors="replace"))


async def stop_group(pgid: int, grace: float = DEFAULT_GRACE) -> bool:
    """SIGTERM the group, wait up to `grace`, then SIGKILL. True when the group is gone."""
    if not group_alive(pgid):
        return True
    signal_group(pgid, signal.SIGTERM)
    if await _wait_group_gone(pgid, grace):
        return True
    signal_group(pgid, signal.SIGKILL)
    return await _wait_group_gone(pgid, KILL_REAP_TIMEOUT)


async def _wait_group_gone(pgid: int, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while group_alive(pgid):
            await anyio.sleep(POLL_INTERVAL)
        return True
    return not group_alive(pgid)


async def _wait_leader(proc: Process) -> None:
    fd = open_pidfd(proc.pid)
    if fd is not None:
        try:
            await anyio.wait_readable(fd)
        finally:
            os.close(fd)
    # The event loop's child watcher sets returncode a moment after the pidfd fires.
    while proc.returncode is None:
        await anyio.sleep(POLL_INTERVAL)


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    # The child may exit before reading everything; its exit status tells the story, not EPIPE.
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(data)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.aclose()


async def _pump(stream: ByteReceiveStream, sink: Callable[[bytes], None], done: anyio.Event) -> None:
    try:
        while True:
            try:
                chunk = await stream.receive(READ_SIZE)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            sink(chunk)
    finally:
        done.set()


def _keep_tail(buf: bytearray, chunk: bytes) -> None:
    buf.extend(chunk)
    if len(buf) > STDERR_TAIL_BYTES:
        cut = len(buf) - STDERR_TAIL_BYTES
        # Start on a character boundary: a cut inside a UTF-8 sequence leaves up to 3 continuation bytes.
        for _ in range(3):
            if 0x80 <= buf[cut] <= 0xBF:
                cut += 1
        del buf[:cut]


async def close_process(proc: Process) -> None:
    """Close its pipes and wait (bounded) until the event loop has reaped it, so no Process object outlives a running
    child. The group is already gone here; on a loaded machine the loop's child watcher still reaps late."""
    with anyio.move_on_after(REAP_TIMEOUT):
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.aclose()
        while proc.returncode is None:
            await anyio.sleep(POLL_INTERVAL)
    if proc.returncode is None:  # pragma: no cover - a D-state leader; the group was SIGKILLed already
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)

"""open_group: a child in its own process group whose stdout is *pulled*, so a backend can be an async generator.

No helper tasks: stdin is a memfd (or unlinked temp file) holding the whole prompt, stderr goes to an unlinked temp
file whose tail is read at exit, and stdout is read with short bounded waits that never span a `yield`. Leaving the
context — normally, on error or on cancel — stops the whole group under a shield (SIGTERM, grace, SIGKILL).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process

from gemini_relay.supervise.process import (
    DEFAULT_GRACE,
    DRAIN_TIMEOUT,
    POLL_INTERVAL,
    READ_SIZE,
    STDERR_TAIL_BYTES,
    ProcessExit,
    ProcessSpec,
    SpawnError,
    close_process,
    stop_group,
)

READ_POLL = 0.1  # how often an idle read looks whether the leader is gone (a grandchild may hold stdout open)


class GroupProcess:
    def __init__(self, proc: Process, stderr: IO[bytes], grace: float) -> None:
        self._proc = proc
        self._stderr = stderr
        self._grace = grace
        self.pid = proc.pid

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """stdout in arrival order, until EOF or (leader gone and the group stopped) plus a bounded drain."""
        stdout = self._proc.stdout
        assert stdout is not None
        drain_until: float | None = None
        while True:
            chunk: bytes | None = None
            eof = False
            with anyio.move_on_after(READ_POLL):
                try:
                    chunk = await stdout.receive(READ_SIZE)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    eof = True
            if eof:
                return
            if chunk is not None:
                yield chunk
                continue
            if self._proc.returncode is None:
                continue
            if drain_until is None:  # the leader exited but something still holds stdout: stop the group
                await stop_group(self.pid, self._grace)
                drain_until = anyio.current_time() + DRAIN_TIMEOUT
            elif anyio.current_time() >= drain_until:
                return

    async def finish(self) -> ProcessExit:
        """Wait for the leader, stop what is left of its group, and report the exit with stderr's tail."""
        while self._proc.returncode is None:
            await anyio.sleep(POLL_INTERVAL)
        await stop_group(self.pid, self._grace)
        code = self._proc.returncode
        return ProcessExit(returncode=128 - code if code < 0 else code, stderr=self._stderr_tail())

    def _stderr_tail(self) -> str:
        try:
            size = os.fstat(self._stderr.fileno()).st_size
            self._stderr.seek(max(0, size - STDERR_TAIL_BYTES))
            data = self._stderr.read()
        except (OSError, ValueError):
            return ""
        cut = 0
        while cut < min(3, len(data)) and 0x80 <= data[cut] <= 0xBF:  # start on a character boundary
            cut += 1
        return data[cut:].decode("utf-8", errors="replace")


@asynccontextmanager
async def open_group(spec: ProcessSpec, *, grace: float = DEFAULT_GRACE) -> AsyncIterator[GroupProcess]:
    """Start `spec` in a new session; the body pulls `chunks()` and then `finish()`.

    Raises:
        SpawnError: the binary is missing or not executable.
    """
    stdin = _stdin_source(spec.stdin)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    try:
        try:
            proc = await anyio.open_process(
                list(spec.argv),
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=spec.cwd,
                env=dict(spec.env),
                start_new_session=True,
            )
        except OSError as exc:
            raise SpawnError(exc.errno, f"cannot execute {spec.argv[0]}: {exc.strerror or exc}") from exc
        finally:
            if stdin is not None:
                os.close(stdin)
        try:
            yield GroupProcess(proc, stderr, grace)
        finally:
            with anyio.CancelScope(shield=True):
                await stop_group(proc.pid, grace)
                await close_process(proc)
    finally:
        stderr.close()


def _stdin_source(data: bytes | None) -> int | None:
    """A readable fd positioned at the start of `data`: memory only where the kernel has memfd."""
    if data is None:
        return None
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd: int = memfd("gemini-relay-stdin", os.MFD_CLOEXEC)
    else:  # pragma: no cover - non-Linux
        fd, name = tempfile.mkstemp(prefix="gemini-relay-stdin-")
        Path(name).unlink()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd

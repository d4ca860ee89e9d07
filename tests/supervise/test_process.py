"""run_process / stop_group / group_members with real child processes (tiny Python scripts written per test).

Children announce each milestone on stdout (or a file); tests wait on those announcements, never on the clock,
and every wait is bounded. Each test ends by checking that no process of its groups is still alive.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from gemini_relay.supervise.groups import group_alive, group_members
from gemini_relay.supervise.process import (
    STDERR_TAIL_BYTES,
    ProcessExit,
    ProcessSpec,
    SpawnError,
    run_process,
    stop_group,
)

BOUND = 10.0  # generous upper bound on any single wait; a passing test takes a fraction of it


@dataclass
class Child:
    """A script under tmp_path, what it printed, and every process group it ran in."""

    path: Path
    stdout: bytearray = field(default_factory=bytearray)
    chunks: list[bytes] = field(default_factory=list[bytes])
    pgids: list[int] = field(default_factory=list[int])
    ready: anyio.Event | None = None
    ready_at: float | None = None

    def spec(self, *, stdin: bytes | None = None, args: tuple[str, ...] = ()) -> ProcessSpec:
        return ProcessSpec(
            argv=[sys.executable, "-I", "-S", str(self.path), *args],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd=self.path.parent,
            stdin=stdin,
        )

    def on_stdout(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.stdout.extend(chunk)
        if self.ready is not None and not self.ready.is_set() and b"ready\n" in self.stdout:
            self.ready_at = time.monotonic()
            self.ready.set()

    def on_spawn(self, pgid: int) -> None:
        self.pgids.append(pgid)

    def printed_pids(self) -> list[int]:
        return [int(pid) for pid in re.findall(rb"^pid (\d+)$", bytes(self.stdout), re.MULTILINE)]

    async def run(self, *, grace: float = 5.0, stdin: bytes | None = None) -> ProcessExit:
        with anyio.fail_after(BOUND):
            return await run_process(self.spec(stdin=stdin), self.on_stdout, grace=grace, on_spawn=self.on_spawn)


@pytest.fixture
def children(tmp_path: Path) -> Iterator[list[Child]]:
    made: list[Child] = []
    yield made
    for child in made:
        for pgid in child.pgids:
            assert group_members(pgid) == [], f"group {pgid} of {child.path.name} is still running"
        for pid in child.printed_pids():
            assert not alive(pid), f"process {pid} printed by {child.path.name} is still running"


def script(children: list[Child], tmp_path: Path, body: str, *, grandchild: bool = False) -> Child:
    path = tmp_path / "child.py"
    header = "import os, signal, subprocess, sys, time\n" + (GRANDCHILD if grandchild else "")
    path.write_text(header + textwrap.dedent(body), encoding="utf-8")
    child = Child(path)
    children.append(child)
    return child


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[0] not in (b"Z", b"X")


# The grandchild inherits the run's stdout; it reports "armed" on a private pipe once its handlers are in place,
# and the leader waits for that before going on, so the test never races the grandchild's startup.
GRANDCHILD = """
def spawn_grandchild(extra=""):
    code = "import signal, sys\\n" + extra + "sys.stderr.write('armed\\\\n'); sys.stderr.flush()\\n"
    code += "while True: signal.pause()\\n"
    g = subprocess.Popen([sys.executable, "-I", "-S", "-c", code], stderr=subprocess.PIPE)
    assert g.stderr.readline() == b"armed\\n"
    print("pid", g.pid, flush=True)
    return g
"""


# --- stdout, stdin, stderr, exit codes ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stdout_chunks_reach_the_callback_in_order(children: list[Child], tmp_path: Path) -> None:
    child = script(
        children,
        tmp_path,
        """
        for i in range(200):
            sys.stdout.write(f"line {i}\\n")
            if i % 50 == 0:
                sys.stdout.flush()
        sys.stdout.flush()
        sys.stdout.buffer.write(b"x" * 300_000 + b"\\nend")
        """,
    )
    result = await child.run()
    expected = "".join(f"line {i}\n" for i in range(200)).encode() + b"x" * 300_000 + b"\nend"
    assert result.returncode == 0
    assert b"".join(child.chunks) == expected
    assert len(child.chunks) > 1
    assert all(child.chunks)


@pytest.mark.anyio
async def test_stdin_bytes_are_fed_then_closed_so_the_child_reads_to_eof(children: list[Child], tmp_path: Path) -> None:
    child = script(
        children,
        tmp_path,
        """
        data = sys.stdin.buffer.read()
        sys.stdout.buffer.write(b"got %d bytes\\n" % len(data) + data)
        """,
    )
    payload = bytes(range(256)) * 4096  # 1 MiB: more than a pipe holds, so feeding and pumping must overlap
    result = await child.run(stdin=payload)
    assert result.returncode == 0
    assert bytes(child.stdout) == f"got {len(payload)} bytes\n".encode() + payload


@pytest.mark.anyio
async def test_empty_stdin_is_still_closed(children: list[Child], tmp_path: Path) -> None:
    child = script(children, tmp_path, "print(repr(sys.stdin.read()))\n")
    result = await child.run(stdin=b"")
    assert result.returncode == 0
    assert bytes(child.stdout) == b"''\n"


@pytest.mark.anyio
async def test_no_stdin_means_dev_null(children: list[Child], tmp_path: Path) -> None:
    child = script(
        children,
        tmp_path,
        """
        same = os.path.samestat(os.fstat(0), os.stat("/dev/null"))
        print("devnull" if same else "other", repr(sys.stdin.read()))
        """,
    )
    result = await child.run(stdin=None)
    assert result.returncode == 0
    assert bytes(child.stdout) == b"devnull ''\n"


@pytest.mark.anyio
async def test_a_child_that_exits_without_reading_its_stdin_is_not_an_error(
    children: list[Child], tmp_path: Path
) -> None:
    child = script(children, tmp_path, "sys.exit(4)\n")
    result = await child.run(stdin=b"y" * 2_000_000)
    assert result.returncode == 4


@pytest.mark.anyio
async def test_stderr_is_kept_whole_when_small(children: list[Child], tmp_path: Path) -> None:
    child = script(children, tmp_path, 'sys.stderr.write("warning: one\\nerror: two\\n")\nprint("out")\n')
    result = await child.run()
    assert result.stderr == "warning: one\nerror: two\n"
    assert bytes(child.stdout) == b"out\n"


@pytest.mark.anyio
async def test_stderr_keeps_only_its_bounded_tail(children: list[Child], tmp_path: Path) -> None:
    child = script(
        children,
        tmp_path,
        """
        for i in range(4000):
            sys.stderr.write(f"noise line {i:05d} " + "." * 40 + "\\n")
        sys.stderr.write("THE-END\\n")
        """,
    )
    result = await child.run()
    assert len(result.stderr.encode()) == STDERR_TAIL_BYTES
    assert result.stderr.endswith("noise line 03999 " + "." * 40 + "\nTHE-END\n")
    assert "noise line 00000" not in result.stderr


@pytest.mark.anyio
async def test_a_stderr_tail_cut_inside_a_character_does_not_start_with_a_broken_one(
    children: list[Child], tmp_path: Path
) -> None:
    # 2-byte characters and an odd total: the tail boundary falls in the middle of one.
    child = script(children, tmp_path, 'sys.stderr.buffer.write("é".encode() * 40_000 + b"\\n")\n')
    result = await child.run()
    assert "\ufffd" not in result.stderr
    assert result.stderr.endswith("éé\n")
    assert len(result.stderr.encode()) >= STDERR_TAIL_BYTES - 3


@pytest.mark.anyio
async def test_the_exit_code_is_reported(children: list[Child], tmp_path: Path) -> None:
    child = script(children, tmp_path, "sys.exit(3)\n")
    assert (await child.run()).returncode == 3


@pytest.mark.anyio
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGUSR1])
async def test_a_death_by_signal_is_reported_as_128_plus_the_signal(
    children: list[Child], tmp_path: Path, sig: signal.Signals
) -> None:
    child = script(children, tmp_path, f"print('bye', flush=True)\nos.kill(os.getpid(), {int(sig)})\n")
    result = await child.run()
    assert result.returncode == 128 + sig
    assert bytes(child.stdout) == b"bye\n"


@pytest.mark.anyio
async def test_the_child_runs_in_its_own_process_group_and_cwd(children: list[Child], tmp_path: Path) -> None:
    child = script(children, tmp_path, "print(os.getpid(), os.getpgid(0), os.getsid(0), os.getcwd(), flush=True)\n")
    await child.run()
    pid, pgid, sid, cwd = child.stdout.decode().split()
    assert int(pid) == int(pgid) == int(sid) == child.pgids[0]
    assert int(pgid) != os.getpgid(0)
    assert Path(cwd) == tmp_path


@pytest.mark.anyio
async def test_the_child_gets_exactly_the_given_environment(children: list[Child], tmp_path: Path) -> None:
    child = script(children, tmp_path, "print(sorted(os.environ.items()))\n")
    spec = child.spec()
    spec = ProcessSpec(argv=spec.argv, env={"ONLY": "this"}, cwd=spec.cwd)
    with anyio.fail_after(BOUND):
        await run_process(spec, child.on_stdout, on_spawn=child.on_spawn)
    assert "('ONLY', 'this')" in child.stdout.decode()
    assert "PATH" not in child.stdout.decode()


# --- the process group outlives nobody ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_grandchild_holding_stdout_is_stopped_when_the_leader_exits(
    children: list[Child], tmp_path: Path
) -> None:
    child = script(
        children,
        tmp_path,
        """
        spawn_grandchild()
        print("leader done", flush=True)
        sys.exit(7)
        """,
        grandchild=True,
    )
    started = time.monotonic()
    result = await child.run(grace=30.0)  # if the grandchild were waited for, this would hit BOUND
    assert time.monotonic() - started < BOUND / 2
    assert result.returncode == 7
    assert b"leader done\n" in child.stdout
    (grandchild,) = child.printed_pids()
    assert not alive(grandchild)
    assert group_members(child.pgids[0]) == []


@pytest.mark.anyio
async def test_a_grandchild_ignoring_sigterm_is_killed_after_the_grace_and_the_leaders_code_is_kept(
    children: list[Child], tmp_path: Path
) -> None:
    child = script(
        children,
        tmp_path,
        """
        spawn_grandchild("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n")
        print("ready", flush=True)
        sys.exit(0)
        """,
        grandchild=True,
    )
    child.ready = anyio.Event()
    result = await child.run(grace=0.3)
    assert child.ready_at is not None
    assert time.monotonic() - child.ready_at >= 0.3  # SIGTERM was ignored; only the SIGKILL after the grace worked
    assert result.returncode == 0
    (grandchild,) = child.printed_pids()
    assert not alive(grandchild)


@pytest.mark.anyio
async def test_cancelling_the_run_stops_the_whole_group(children: list[Child], tmp_path: Path) -> None:
    child = script(
        children,
        tmp_path,
        """
        spawn_grandchild()
        print("ready", flush=True)
        while True:
            signal.pause()
        """,
        grandchild=True,
    )
    child.ready = anyio.Event()
    with anyio.fail_after(BOUND):
        with anyio.move_on_after(BOUND) as scope:
            async with anyio.create_task_group() as tg:

                async def expire_on_ready() -> None:
                    assert child.ready is not None
                    await child.ready.wait()
                    scope.deadline = anyio.current_time()  # the timeout fires now

                tg.start_soon(expire_on_ready)
                await run_process(child.spec(), child.on_stdout, grace=5.0, on_spawn=child.on_spawn)
                pytest.fail("run_process returned although the child never exits on its own")
    assert scope.cancelled_caught
    (grandchild,) = child.printed_pids()
    assert not alive(grandchild)
    assert group_members(child.pgids[0]) == []


@pytest.mark.anyio
async def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(children: list[Child], tmp_path: Path) -> None:
    marker = tmp_path / "got-sigterm"
    child = script(
        children,
        tmp_path,
        f"""
        def on_term(signum, frame):
            with open({str(marker)!r}, "a") as f:
                f.write("term\\n")

        signal.signal(signal.SIGTERM, on_term)
        print("ready", flush=True)
        while True:
            signal.pause()
        """,
    )
    child.ready = anyio.Event()
    grace = 0.3
    with anyio.fail_after(BOUND):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                cancelled_at: list[float] = []

                async def cancel_on_ready() -> None:
                    assert child.ready is not None
                    await child.ready.wait()
                    cancelled_at.append(time.monotonic())
                    scope.cancel()

                tg.start_soon(cancel_on_ready)
                await run_process(child.spec(), child.on_stdout, grace=grace, on_spawn=child.on_spawn)
        stopped_after = time.monotonic() - cancelled_at[0]
    assert scope.cancelled_caught
    assert marker.read_text(encoding="utf-8").startswith("term\n")  # SIGTERM came first, and was survived
    assert stopped_after >= grace
    assert stopped_after < grace + 3.0
    assert group_members(child.pgids[0]) == []


@pytest.mark.anyio
async def test_stop_group_of_a_group_that_is_gone_returns_at_once() -> None:
    with anyio.fail_after(1.0):
        assert await stop_group(2**22 + 12345, grace=30.0)


# --- spawn failures -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_missing_binary_is_a_spawn_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-binary"
    spec = ProcessSpec(argv=[str(missing), "--help"], env={}, cwd=tmp_path)
    with anyio.fail_after(BOUND), pytest.raises(SpawnError) as info:
        await run_process(spec, lambda chunk: None)
    assert info.value.errno == 2
    assert str(missing) in str(info.value)


@pytest.mark.anyio
async def test_a_non_executable_file_is_a_spawn_error(tmp_path: Path) -> None:
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    plain.chmod(0o644)
    spawned: list[int] = []
    spec = ProcessSpec(argv=[str(plain)], env={}, cwd=tmp_path)
    with anyio.fail_after(BOUND), pytest.raises(SpawnError) as info:
        await run_process(spec, lambda chunk: None, on_spawn=spawned.append)
    assert info.value.errno == 13
    assert "cannot execute" in str(info.value)
    assert spawned == []


# --- group_members --------------------------------------------------------------------------------------------


def test_group_members_lists_a_live_group_and_ignores_its_zombie() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert group_members(proc.pid) == [proc.pid]
        assert group_alive(proc.pid)
        assert proc.stdin is not None
        proc.stdin.close()  # the child reads EOF and exits
        # Block until it is a zombie, without reaping it.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        assert Path(f"/proc/{proc.pid}/stat").read_bytes().rpartition(b")")[2].split()[0] == b"Z"
        os.killpg(proc.pid, 0)  # the kernel still counts the zombie as a group member...
        assert group_members(proc.pid) == []  # ...group_members does not
        assert not group_alive(proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=BOUND)


def test_group_members_of_an_unknown_group_is_empty() -> None:
    assert group_members(2**22 + 4321) == []

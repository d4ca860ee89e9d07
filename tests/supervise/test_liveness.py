"""liveness: a recorded process is alive only while the very same process (pid + start time + boot) runs.

Every process here is real: this test process, or a child that waits on its stdin and is ended by the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gemini_relay.supervise.liveness import ProcessInfo, boot_id, describe, is_alive, signal_if_alive, start_ticks

BOUND = 10.0
WAIT_ON_STDIN = "import sys; sys.stdin.read()"


def gone_process() -> ProcessInfo:
    """The record of a real process that has since exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", WAIT_ON_STDIN], stdin=subprocess.PIPE)
    info = describe(child.pid)
    child.communicate(timeout=BOUND)  # closes stdin: the child exits and is reaped
    return info


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A live child waiting on its stdin; ended and reaped after the test whatever happened."""
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", WAIT_ON_STDIN], stdin=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=BOUND)
        if proc.stdin is not None:
            proc.stdin.close()


def _state(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except OSError:
        return None


def _wait_for_state(pid: int, wanted: bytes) -> None:
    deadline = time.monotonic() + BOUND
    while _state(pid) != wanted:  # no event tells the parent a child became a zombie before it is reaped
        assert time.monotonic() < deadline, f"process {pid} never reached state {wanted!r}"
        time.sleep(0.01)


def test_this_process_is_described_by_its_pid_start_ticks_and_boot_id() -> None:
    me = describe(os.getpid())
    own_stat = Path("/proc/self/stat").read_bytes().rpartition(b")")[2].split()
    assert me.pid == os.getpid()
    assert me.start_ticks == int(own_stat[19])
    assert me.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    assert is_alive(me)


def test_the_right_pid_with_another_start_time_is_not_alive() -> None:
    me = describe(os.getpid())
    assert me.start_ticks is not None
    assert not is_alive(ProcessInfo(pid=me.pid, start_ticks=me.start_ticks + 1, boot_id=me.boot_id))
    assert not is_alive(ProcessInfo(pid=me.pid, start_ticks=me.start_ticks - 1, boot_id=me.boot_id))


def test_the_same_process_recorded_in_another_boot_is_not_alive() -> None:
    me = describe(os.getpid())
    assert not is_alive(ProcessInfo(pid=me.pid, start_ticks=me.start_ticks, boot_id="an-earlier-boot"))


def test_a_record_without_a_start_time_or_boot_id_trusts_the_pid_alone() -> None:
    assert is_alive(ProcessInfo(pid=os.getpid(), start_ticks=None, boot_id=None))


def test_a_process_that_exited_and_was_reaped_is_not_alive() -> None:
    info = gone_process()
    assert info.start_ticks is not None
    assert not is_alive(info)


def test_a_pid_that_does_not_exist_has_no_start_time() -> None:
    info = gone_process()
    if start_ticks(info.pid) is not None:  # the pid was recycled in between: then it must be another start time
        assert start_ticks(info.pid) != info.start_ticks
    assert start_ticks(2**22 + 1) is None  # above the kernel's pid_max limit: never a pid


def test_a_zombie_waiting_to_be_reaped_is_not_alive(child: subprocess.Popen[bytes]) -> None:
    info = describe(child.pid)
    assert child.stdin is not None
    child.stdin.close()
    _wait_for_state(child.pid, b"Z")
    assert not is_alive(info)


def test_a_command_name_with_spaces_and_parentheses_does_not_confuse_the_parser() -> None:
    script = (
        "import sys; open('/proc/self/comm', 'w').write('x) Z 1 2 ('); print('renamed', flush=True); sys.stdin.read()"
    )
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        before = describe(proc.pid)
        assert proc.stdout is not None and proc.stdout.readline() == b"renamed\n"
        assert Path(f"/proc/{proc.pid}/comm").read_text(encoding="utf-8").strip() == "x) Z 1 2 ("
        assert start_ticks(proc.pid) == before.start_ticks
        assert is_alive(before)
    finally:
        proc.kill()
        proc.communicate(timeout=BOUND)


def test_a_live_recorded_process_is_signalled(child: subprocess.Popen[bytes]) -> None:
    assert signal_if_alive(describe(child.pid), signal.SIGTERM) is True
    assert child.wait(timeout=BOUND) == -signal.SIGTERM


def test_a_recycled_pid_is_never_signalled(child: subprocess.Popen[bytes]) -> None:
    real = describe(child.pid)
    assert real.start_ticks is not None
    impostor = ProcessInfo(pid=child.pid, start_ticks=real.start_ticks + 1, boot_id=real.boot_id)
    assert signal_if_alive(impostor, signal.SIGKILL) is False
    assert child.poll() is None and is_alive(real)


def test_a_gone_process_is_not_signalled() -> None:
    assert signal_if_alive(gone_process(), signal.SIGKILL) is False


def test_the_boot_id_is_stable_within_a_boot() -> None:
    assert boot_id() == boot_id() is not None

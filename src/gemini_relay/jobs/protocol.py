"""The relay host's wire protocol: NDJSON over a Unix socket in the state dir (never the network).

Every connection opens with `hello` (protocol and relay version; a server never talks to a host of another
version). Requests are one JSON object per line with an `op`; replies are objects too. `run` answers with a stream
of `{"progress": ...}` lines, each a change of the run's record in the host (its phase, conversation, model and the
answer's text streamed since the previous one: the host folds the run's events once, and a server takes in what its
keepalives show rather than fold them again), and then one `{"result": <RunResult JSON>}` with the whole text
(failures keep their kind through core/result.Failure), with `{"question": ...}` lines where the run asks its caller
(relay_host/questions.py; the server answers with the `answer` op on another connection).
Errors that are not run results are `{"error": {"kind": ..., "message": ...}}`.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

from gemini_relay import __version__
from gemini_relay.backends.asking import Asker, Unasked
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import BackendUnavailable, InputError, RelayError, RunFailed
from gemini_relay.jobs.engine.record import RecordChange
from gemini_relay.jobs.store.job_store import JobConflict
from gemini_relay.jobs.unix_streams import install as _guard_unix_streams

_guard_unix_streams()  # before any channel exists (jobs/unix_streams.py says why)

# 2: a Finished and a result may travel without the text the deltas carried; 3: questions, `answer`; 4: `progress`
# (the host's record) instead of events, the result with its whole text
PROTOCOL = 4
SUN_PATH_MAX = 100  # sockaddr_un.sun_path is 108 bytes with its NUL; keep a margin
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
MAX_LINE = 64 * 1024 * 1024  # a whole answer (the result's text) travels in one line: what a server reads
# What the host reads of one request line: a create carries the prompt (at most 2 MiB inlined, escaped in JSON) and
# the server's environment. A client that sends more (or never ends its line) is cut off, not buffered to 64 MB.
MAX_REQUEST_LINE = 16 * 1024 * 1024
_MIB = 1024 * 1024


def is_newer(protocol: int, version: str, *, than_protocol: int, than_version: str) -> bool:
    """Whether a relay of (`protocol`, `version`) is newer than (`than_protocol`, `than_version`): the protocol
    first, then the release numbers (a pre-release or local suffix sorts before its release). One host serves a
    state dir: an older server defers to a newer host, a newer one drains an older host."""
    return (protocol, _release(version)) > (than_protocol, _release(than_version))


def older_peer(hello: dict[str, Any]) -> bool:
    """Whether a `hello` comes from a relay older than this one (a malformed one counts as older)."""
    try:
        protocol = int(hello.get("protocol") or 0)
    except (TypeError, ValueError):
        return True
    return is_newer(PROTOCOL, __version__, than_protocol=protocol, than_version=str(hello.get("version") or ""))


def _release(version: str) -> tuple[tuple[int, ...], int]:
    match = re.match(r"(\d+(?:\.\d+)*)(.*)", version.strip())
    if match is None:
        return (), 0
    return tuple(int(part) for part in match[1].split(".")), 0 if match[2] else 1


def host_dir(state_dir: Path) -> Path:
    return state_dir / "host"


def socket_path(state_dir: Path) -> Path:
    return host_dir(state_dir) / "host.sock"


@contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address for bind/connect: the path itself, or — past AF_UNIX's 108-byte limit (deep state dirs) — the same
    file reached through an open descriptor of its directory (/proc/self/fd/N/host.sock, Linux)."""
    if len(os.fsencode(path)) < SUN_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def lock_path(state_dir: Path) -> Path:
    return host_dir(state_dir) / "host.lock"


def log_path(state_dir: Path) -> Path:
    return host_dir(state_dir) / "host.log"


# --- values ---------------------------------------------------------------------------------------------------------


def encode_progress(progress: RecordChange) -> dict[str, Any]:
    data = asdict(progress)
    data["state"] = progress.state.value
    return data


def decode_progress(data: dict[str, Any]) -> RecordChange:
    return RecordChange(
        state=RunState(data["state"]),
        session_id=data.get("session_id"),
        model=data.get("model"),
        text=str(data.get("text") or ""),
    )


def ask_terms(asker: Asker | None) -> dict[str, Any] | None:
    """What a `create` request says of the caller: None (nobody waits on this run), why it cannot be asked, or the
    seconds it has to answer."""
    if asker is None:
        return None
    if isinstance(asker, Unasked):
        return {"outcome": asker.outcome.value}
    return {"timeout": asker.timeout}


def encode_spec(spec: RunSpec) -> dict[str, Any]:
    return spec.to_json()


def decode_spec(data: dict[str, Any]) -> RunSpec:
    return RunSpec.from_json(data)


def encode_error(exc: RelayError) -> dict[str, Any]:
    """An error that is not a run result (those travel as RunResult JSON)."""
    kind = "conflict" if isinstance(exc, JobConflict) else "input" if isinstance(exc, InputError) else (
        "unavailable" if isinstance(exc, BackendUnavailable) else "failed")  # fmt: skip
    field = exc.field if isinstance(exc, InputError) else None
    return {"kind": kind, "message": str(exc), "field": field}


def decode_error(data: dict[str, Any]) -> RelayError:
    kind, message = data.get("kind"), str(data.get("message") or "the relay host refused the request")
    if kind == "conflict":
        return JobConflict(message)
    if kind == "input":
        return InputError(message, field=data.get("field"))
    if kind == "unavailable":
        return BackendUnavailable(message)
    return RunFailed(message)


# --- framing --------------------------------------------------------------------------------------------------------


def encode_line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def request_line(message: dict[str, Any]) -> bytes:
    """A server's request as it goes on the wire. Raises InputError (naming the limit) for one past what the host
    reads of a line: the host would cut the connection off, and the call would fail as a lost host."""
    line = encode_line(message)
    if len(line) > MAX_REQUEST_LINE:
        raise InputError(
            f"the request is {len(line) / _MIB:.1f} MiB, over the relay host's limit of {MAX_REQUEST_LINE // _MIB} "
            "MiB per request (the prompt, with any files inlined into it). Nothing was run: shorten the prompt or "
            "split the work across calls.",
            field="prompt",
        )
    return line


class Channel:
    """One connection: JSON objects in, JSON objects out, a line each."""

    def __init__(self, stream: ByteStream, *, max_line: int = MAX_LINE) -> None:
        self.stream = stream
        self._reader = BufferedByteReceiveStream(stream)
        self._max_line = max_line

    async def send(self, message: dict[str, Any]) -> None:
        await self.stream.send(encode_line(message))

    async def send_line(self, line: bytes) -> None:
        """A line encoded already (request_line)."""
        await self.stream.send(line)

    async def receive(self) -> dict[str, Any]:
        """The next message. Raises anyio.EndOfStream (or IncompleteRead) when the peer hung up."""
        line = await self._reader.receive_until(b"\n", self._max_line)
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("a host message must be a JSON object")
        return data  # pyright: ignore[reportUnknownVariableType]

    async def aclose(self) -> None:
        await self.stream.aclose()


class HostLost(RunFailed):
    """The relay host went away (killed, idled out, replaced by another version) before it answered a request."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"The relay host went away before answering ({detail}) [host_lost, retryable].",
            reason=FailureReason.HOST_LOST,
            retryable=True,
            recovery=(
                "Retry the call: the next one reaches (or starts) a new relay host. If this keeps happening, see the "
                "host's log (<state dir>/host/host.log), or set GEMINI_RELAY_HOST=off to run without it."
            ),
        )


class HostUnresponsive(RunFailed):
    """The relay host is there (its socket accepts) but did not answer a request within the bound."""

    def __init__(self, seconds: float, pid: int | None = None) -> None:
        who = f"the relay host (pid {pid})" if pid else "the relay host"
        super().__init__(
            f"{who[0].upper()}{who[1:]} did not answer within {seconds:g}s [host_unresponsive, retryable].",
            reason=FailureReason.HOST_UNRESPONSIVE,
            retryable=True,
            recovery=(
                "Retry the call in a moment (a host that is stopped or swapping may resume; the call may already be "
                "queued there: gemini-jobs lists it). If it stays stuck, end that process and the next call starts a "
                "new one; GEMINI_RELAY_HOST_TIMEOUT sets the bound."
            ),
        )


class HostSuperseded(RunFailed):
    """A newer relay serves this state dir: this (older) server defers to it rather than replace it, which would
    put two hosts, and twice the cap, on one machine."""

    def __init__(self, version: str, protocol: int) -> None:
        super().__init__(
            f"A newer gemini-relay ({version}, protocol {protocol}) runs the relay host of this state dir; this "
            f"server ({__version__}, protocol {PROTOCOL}) defers to it and runs nothing [host_superseded].",
            reason=FailureReason.HOST_SUPERSEDED,
            retryable=False,
            recovery="Restart this MCP server (reconnect it in its client) so that it runs the newer version.",
        )


class HostUntrusted(BackendUnavailable):
    """What answers on the host socket, or the directory it lives in, is not this user's: nothing is sent to it."""


def check_private_dir(path: Path, *, sticky_ok: bool = False) -> None:
    """Raises HostUntrusted unless `path` (when it exists) is a directory of this uid that no one else may write.
    `sticky_ok`: a world-writable directory with the sticky bit (a tmpfs mount point, /tmp-like) passes too: others
    may add entries there but never replace ours, and what we open inside is checked on its own."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    shared = info.st_mode & 0o022 and not (sticky_ok and info.st_mode & stat.S_ISVTX)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or shared:
        raise HostUntrusted(
            f"{path} is not a private directory of this user (owner uid {info.st_uid}, mode "
            f"{stat.S_IMODE(info.st_mode):o}); refusing to talk to a relay host there. Remove it, or set "
            "GEMINI_RELAY_STATE_DIR to a directory of your own."
        )


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket, from the kernel (SO_PEERCRED)."""
    _pid, uid, _gid = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
    return int(uid)


def check_peer(sock: socket.socket, path: Path) -> None:
    """Raises HostUntrusted when the host answering at `path` runs as another user (before anything is sent)."""
    uid = peer_uid(sock)
    if uid != os.getuid():
        raise HostUntrusted(f"the relay host socket {path} is served by uid {uid}, not this user; nothing was sent")

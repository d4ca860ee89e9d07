"""The usage of one Gemini CLI call's turns, as the API's usageMetadata gave it, from the CLI's session recording.

Cold and warm count differently: cold's stream-json `stats` adds up every request the CLI made (with `auto`, the
router's classification request too: 24 in / 16 out for a one-turn answer) and has no thoughts; ACP's `_meta.quota`
counts the agent's turns, input and output only (12 / 8). Both paths record the conversation in
`.gemini/tmp/<project>/chats/session-*.jsonl`, each model message with that response's usageMetadata (`tokens`: input,
output, cached, thoughts, tool, total). Summed over the model messages after the call's prompt it is the usage of the
call's own turn(s), tool round trips included and nothing else, alike on both paths.

The recording also says whether the call's answer was complete (`recorded_call`): the CLI records a model message
only once its stream passed the CLI's checks, and after a failed stream it rolls the history back to before the
prompt. Over ACP that is the only trace of an answer cut short: the CLI ends such a turn as a plain `end_turn`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.gemini_cli.sessions import json_record, latest_chats_file
from gemini_relay.core.events import Finished, Usage
from gemini_relay.streams.coerce import as_dict, as_int

FIRST_TAIL_BYTES = 256 * 1024  # a call's messages are at the end; a longer call (a big answer) widens the read
_SESSION_CONTEXT = "<session_context>"


async def with_call_usage(finished: Finished, home: Path, session_id: str | None) -> Finished:
    """`finished` with the recording's usage of the call, or unchanged when no recording can be read."""
    if not session_id:
        return finished
    usage = await anyio.to_thread.run_sync(call_usage, home, session_id)
    return replace(finished, usage=usage) if usage is not None else finished


def call_usage(home: Path, session_id: str) -> Usage | None:
    """The usage of the session's latest call (the turns after its last prompt); None without a readable one."""
    call = recorded_call(home, session_id)
    return None if call is None else sum_usage(list(call.turns))


@dataclass(frozen=True)
class RecordedCall:
    """What the recording holds of a session's latest call."""

    turns: tuple[dict[str, Any], ...]  # the model messages after its prompt
    answered: bool  # its prompt is recorded (not rolled back) and the recording ends with a model message


def recorded_call(
    home: Path, session_id: str, since: float | None = None, *, path: Path | None = None
) -> RecordedCall | None:
    """The session's latest call; None without a readable recording. With `since` (a Unix time taken before the
    prompt was sent), a last prompt recorded before it is an earlier call's: this call's was rolled back — when the
    file shows this call's prompt at all (None when it does not). `path`: the file the session records into, when
    known (no search of the CLI home)."""
    path = path or latest_chats_file(home, session_id)
    if path is None or (since is not None and _unwritten_since(path, since)):
        return None  # a CLI that stopped recording (a full disk) leaves a file that says nothing of this call
    limit = FIRST_TAIL_BYTES
    while True:
        try:
            lines, whole = _tail(path, limit)
        except OSError:
            return None
        messages = replay(lines)
        prompts = [i for i, message in enumerate(messages) if _is_prompt(message)]
        if prompts or whole:
            break
        limit *= 4
    if not prompts or (since is not None and _recorded_at(messages[prompts[-1]]) < since):
        if since is not None and not _prompted_since(lines, since):
            # The file holds no prompt of this call, not even one rolled back: it is not the call's recording (a CLI
            # starting in the project deleted it mid-turn as prompt-less; the answer went to a new, headless file).
            return None
        return RecordedCall((), answered=False)
    after = messages[prompts[-1] + 1 :]
    turns = tuple(m for m in after if m.get("type") == "gemini")
    return RecordedCall(turns, answered=bool(after) and after[-1].get("type") == "gemini")


def rewind_call(home: Path, session_id: str, since: float) -> bool:
    """Drop from the recording an unanswered prompt sent at or after `since` and all that followed it, as the CLI
    does itself when a turn is cancelled (warm: session/cancel); False when there is none. For a CLI stopped before
    its turn ended, so that continuing the conversation does not send that prompt again (`--resume` would merge it
    into the next one). Appends the CLI's own `$rewindTo` record; no CLI may be writing the file."""
    path = latest_chats_file(home, session_id)
    if path is None:
        return False
    try:
        lines, _whole = _tail(path, FIRST_TAIL_BYTES)
        messages = replay(lines)
        prompts = [i for i, message in enumerate(messages) if _is_prompt(message)]
        # A resumed CLI restamps the history it loads: an answered prompt may carry a time after `since` too.
        if not prompts or _recorded_at(messages[prompts[-1]]) < since or messages[-1].get("type") == "gemini":
            return False
        prompt_id = messages[prompts[-1]].get("id")
        if not isinstance(prompt_id, str):
            return False
        with path.open("ab") as handle:
            ends_line = handle.seek(0, 2) == 0 or _last_byte(path) == b"\n"
            handle.write((b"" if ends_line else b"\n") + json.dumps({"$rewindTo": prompt_id}).encode() + b"\n")
    except OSError:
        return False
    return True


def _unwritten_since(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime < since - 1.0  # file times can lag the clock by a tick
    except OSError:
        return True


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1)


def last_call_turns(lines: list[str]) -> list[dict[str, Any]] | None:
    """The model messages after the last prompt; None when no prompt is in `lines`."""
    ordered = replay(lines)
    prompts = [i for i, message in enumerate(ordered) if _is_prompt(message)]
    if not prompts:
        return None
    return [m for m in ordered[prompts[-1] + 1 :] if m.get("type") == "gemini"]


def replay(lines: list[str]) -> list[dict[str, Any]]:
    """The messages, replaying the recording as the CLI reads it (a message record replaces one with its id in
    place, `$set.messages` rewrites the history, `$rewindTo` cuts it)."""
    messages: dict[str, dict[str, Any]] = {}
    for line in lines:
        record = json_record(line)
        if record is None:
            continue
        rewind, patch, message_id = record.get("$rewindTo"), record.get("$set"), record.get("id")
        if isinstance(rewind, str):
            ids = list(messages)
            for gone in ids[ids.index(rewind) if rewind in messages else 0 :]:
                del messages[gone]
        elif isinstance(patch, dict) and isinstance(patch.get("messages"), list):  # pyright: ignore[reportUnknownMemberType]
            listed: list[Any] = patch["messages"]  # pyright: ignore[reportUnknownVariableType]
            messages = {m["id"]: m for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)}  # pyright: ignore[reportUnknownMemberType]
        elif isinstance(message_id, str):
            messages[message_id] = record
    return list(messages.values())


def sum_usage(turns: list[dict[str, Any]]) -> Usage | None:
    counted = [tokens for tokens in (as_dict(t.get("tokens")) for t in turns) if tokens]
    if not counted:
        return None
    return Usage(
        input_tokens=sum(as_int(t.get("input")) for t in counted),
        output_tokens=sum(as_int(t.get("output")) for t in counted),
        thinking_tokens=sum(as_int(t.get("thoughts")) for t in counted),
        cached_tokens=sum(as_int(t.get("cached")) for t in counted),
        total_tokens=sum(as_int(t.get("total")) for t in counted),
    )


def _recorded_at(message: dict[str, Any]) -> float:
    """A message's `timestamp` (the CLI's ISO time, in milliseconds) as Unix time; 0 when it has none."""
    stamp = message.get("timestamp")
    try:
        return datetime.fromisoformat(stamp).timestamp() if isinstance(stamp, str) else 0.0
    except ValueError:
        return 0.0


def _is_prompt(message: dict[str, Any]) -> bool:
    """A user message the caller wrote: text, not the CLI's workspace context, not a tool's answer."""
    if message.get("type") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return not content.lstrip().startswith(_SESSION_CONTEXT)
    parts = [as_dict(p) for p in content] if isinstance(content, list) else []  # pyright: ignore[reportUnknownVariableType]
    if any("functionResponse" in p for p in parts):
        return False
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    return any(not text.lstrip().startswith(_SESSION_CONTEXT) for text in texts)


def _prompted_since(lines: list[str], since: float) -> bool:
    """Whether a prompt stamped at or after `since` was ever recorded in `lines` (kept or since rolled back)."""
    for line in lines:
        if '"user"' not in line:  # most lines are the model's: not parsed
            continue
        record = json_record(line)
        if record is not None and _is_prompt(record) and _recorded_at(record) >= since:
            return True
    return False


def _tail(path: Path, limit: int) -> tuple[list[str], bool]:
    """The file's last `limit` bytes as whole lines, and whether that is the whole file."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - limit))
        lines = handle.read().decode("utf-8", errors="replace").splitlines()
    whole = size <= limit
    return (lines if whole else lines[1:]), whole  # the first line of a tail may be cut

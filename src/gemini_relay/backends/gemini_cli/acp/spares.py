"""Spare sessions: a session/new made in the background, so a new conversation does not pay its ~30-70 ms.

A spare is made once no prompt has run for SPARE_QUIET: the CLI is one event loop, and a session/new beside a
prompt (calls back to back, or a second spare queued on new_lock ahead of the prompt that took the first) held
that prompt up by the whole session/new (the shared bench's "call sent -> first API request" was 76 ms, against
4 ms for the ACP floor).
"""

from __future__ import annotations

from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from gemini_relay.backends.gemini_cli.acp.connection import (
    REQUEST_TIMEOUT,
    AcpConnection,
    AcpConnectionLost,
    AcpRpcError,
)
from gemini_relay.backends.gemini_cli.acp.sessions import (
    SPARE_KEYS,
    SessionState,
    SpareKey,
    WarmProcess,
    close_when_idle,
    configure,
    session_state,
    take_spare,
)
from gemini_relay.errors import RunFailed

SPARE_QUIET = 0.05  # seconds without a lease before a spare's session/new is sent


async def fresh(warm: WarmProcess, connection: AcpConnection, key: SpareKey, max_spares: int) -> SessionState:
    """A session for a new conversation. A caller that finds no spare raises the spare count for its key (up to
    `max_spares`), so a burst of fresh asks is served from spares the next time."""
    state = await take_spare(warm, key)
    if state is None and key in warm.spare_target:  # spares were kept for this key, and too few
        warm.spare_target[key] = min(max_spares, warm.spare_target[key] + 1)
        with anyio.move_on_after(REQUEST_TIMEOUT):
            # A spare in flight is closer to done than a session/new started now (they queue on new_lock). One
            # not sent yet waits for the leases to end (make_spare): this caller makes its own instead.
            while state is None and warm.spare_sent.get(key, 0) > 0:
                await warm.spare_done.wait()
                state = await take_spare(warm, key)
    if state is None:
        state = await take_spare(warm, key, any_settings=True) or await new_session(warm, connection, key[0])
    return state  # its replacement is made once the lease ends (replenish)


async def new_session(warm: WarmProcess, connection: AcpConnection, cwd: Path) -> SessionState:
    async with warm.new_lock:
        result = await connection.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    session_id = result.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise RunFailed("gemini --acp answered session/new without a session id")
    warm.created.add(session_id)
    return session_state(session_id, cwd, result)


def replenish(warm: WarmProcess, key: SpareKey, tg: TaskGroup) -> None:
    """Keep `spare_target` sessions ready (or being made) for `key`, made in the background."""
    if warm.draining:
        return
    target = warm.spare_target.pop(key, 1)
    warm.spare_target[key] = target  # most recent last
    while len(warm.spare_target) > SPARE_KEYS:
        # Only the few most recent keys are refilled: each spare costs the CLI memory it never gives back.
        del warm.spare_target[next(iter(warm.spare_target))]
    while len(warm.spares.get(key, [])) + warm.spare_making.get(key, 0) < target:
        warm.spare_making[key] = warm.spare_making.get(key, 0) + 1
        tg.start_soon(make_spare, warm, key)


async def make_spare(warm: WarmProcess, key: SpareKey) -> None:
    """A session for a next fresh conversation in the key's cwd, already set to the key's mode and model."""
    state: SessionState | None = None
    sent = False
    try:
        await _quiet(warm)
        if warm.connection is not None and warm.usable:
            warm.spare_sent[key] = warm.spare_sent.get(key, 0) + 1
            sent = True
            state = await new_session(warm, warm.connection, key[0])
            await configure(warm.connection, state, key[1], key[2])
    except (AcpRpcError, AcpConnectionLost, TimeoutError, RunFailed):
        pass  # the next fresh conversation creates its own session and reports what goes wrong
    finally:
        if sent:
            warm.spare_sent[key] = warm.spare_sent.get(key, 1) - 1
        warm.spare_making[key] = warm.spare_making.get(key, 1) - 1
        if state is not None and warm.usable:
            warm.spares.setdefault(key, []).append(state)
            state = None
        done, warm.spare_done = warm.spare_done, anyio.Event()
        done.set()  # waiters take the spare, or make their own session when there is none
        if warm.draining:
            close_when_idle(warm)  # it waited for this spare's id (see close_when_idle)
    # A spare dropped here (its process is draining) is swept with the process's other unused recordings.


async def _quiet(warm: WarmProcess) -> None:
    """Until no lease has been active for SPARE_QUIET (or the process is no longer usable)."""
    while warm.usable:
        if warm.active:
            await warm.leases_ended.wait()
            continue
        seen = warm.prompts
        await anyio.sleep(SPARE_QUIET)
        if not warm.active and warm.prompts == seen:
            return

"""Spare sessions: a session/new made in the background, so a new conversation does not pay its ~30-70 ms.

A spare's session/new is never queued ahead of a prompt: the CLI is one event loop, and a second spare waiting on
new_lock while a caller took the first was sent just before that caller's prompt, holding it up by a whole
session/new (the shared bench's "call sent -> first API request" was 76 ms, against 4 ms for the ACP floor). So a
maker sends only when no lease is active, checked once it holds new_lock; the first spare right after a lease ends
is sent at once, before a cold CLI the user starts next could leave its projects.json lock behind (a 10 s stall).

Two spares are kept per key, and only the first is sent at once: the second waits for SPARE_QUIET without a
prompt. An agent's back-to-back asks arrive milliseconds apart; the next one takes the ready spare while the CLI is
idle, instead of waiting for a session/new sent as the previous ask ended (the bench's back-to-back ask took 8x the
ACP floor).
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from gemini_relay.backends.gemini_cli.acp.connection import (
    REQUEST_TIMEOUT,
    AcpConnection,
    AcpConnectionLost,
    AcpRpcError,
)
from gemini_relay.backends.gemini_cli.acp.session_files import snapshot
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
from gemini_relay.backends.gemini_cli.settings import gemini_home
from gemini_relay.errors import RunFailed

SPARES_START = 2  # spares kept per key at first; a burst of fresh asks raises it (fresh)
SPARE_QUIET = 0.25  # seconds without a prompt before a spare beyond the first ready one is sent


def _quiet_left(warm: WarmProcess, key: SpareKey) -> float:
    """How long a spare for `key` still waits: 0 when none is ready (it is sent at once), else what is left of
    SPARE_QUIET since the last prompt ended."""
    if not warm.spares.get(key):
        return 0.0
    return warm.last_used + SPARE_QUIET - time.monotonic()


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
        return await _request_new(warm, connection, cwd)


async def _request_new(warm: WarmProcess, connection: AcpConnection, cwd: Path) -> SessionState:
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
    target = warm.spare_target.pop(key, SPARES_START)
    warm.spare_target[key] = target  # most recent last
    while len(warm.spare_target) > SPARE_KEYS:
        # Only the few most recent keys are refilled: each spare costs the CLI memory it never gives back.
        del warm.spare_target[next(iter(warm.spare_target))]
    while len(warm.spares.get(key, [])) + warm.spare_making.get(key, 0) < target:
        warm.spare_making[key] = warm.spare_making.get(key, 0) + 1
        tg.start_soon(make_spare, warm, key)


async def make_spare(warm: WarmProcess, key: SpareKey, *, eager: bool = False) -> None:
    """A session for a next fresh conversation in the key's cwd, already set to the key's mode and model. `eager`
    (the prewarmed process's first spare, which the first call waits for): sent whatever leases are active."""
    state: SessionState | None = None
    sent = False
    try:
        while warm.usable and warm.connection is not None:
            if warm.active and not eager:
                await warm.leases_ended.wait()
                continue
            if not eager and (left := _quiet_left(warm, key)) > 0:
                await anyio.sleep(left)  # a prompt may start meanwhile: the loop looks again
                continue
            async with warm.new_lock:
                if not eager and (warm.active or _quiet_left(warm, key) > 0):
                    continue  # a lease began, or another spare got ready, while this one queued
                if not warm.usable or warm.connection is None:
                    continue
                warm.spare_sent[key] = warm.spare_sent.get(key, 0) + 1
                sent = True
                state = await _request_new(warm, warm.connection, key[0])
            break
        if state is not None and warm.connection is not None:
            await configure(warm.connection, state, key[1], key[2])
            state.recording = await anyio.to_thread.run_sync(snapshot, gemini_home(warm.launch.env), state.session_id)
    except (AcpRpcError, AcpConnectionLost, TimeoutError, RunFailed):
        state = None  # the next fresh conversation creates its own session and reports what goes wrong
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


async def first_spare(warm: WarmProcess, key: SpareKey) -> None:
    """The prewarmed process's spares, made before it counts as ready: the first call takes one, and an ask sent as
    it ends the other. Made once the first prompt ended, that one held such an ask up by a whole session/new (the
    shared bench's second ask after a start: 76 ms, against 25 ms for the next ones); the first call pays it instead,
    beside the CLI's ~1.2 s start."""
    target = warm.spare_target.setdefault(key, SPARES_START)
    for _ in range(target):
        warm.spare_making[key] = warm.spare_making.get(key, 0) + 1
        await make_spare(warm, key, eager=True)

"""The warm Gemini CLI backend: one prompt of a conversation on a warm `gemini --acp` process.

`run(spec)` yields SessionStarted (the ACP session id is the conversation id), the answer's deltas, tool events and
notices, then Finished; it raises RunFailed (classified like the cold path), RunTimedOut, InputError, or
AcpHandshakeError when no warm process can start (the caller then runs the cold `-p` path, with a notice once).
Closing the generator or cancelling its task sends `session/cancel`; a turn that does not settle within
CANCEL_SETTLE gets its process stopped. Its failures carry no partial text: the deltas did, and the run's record (the
engine folds them) gives a failure the text so far.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import replace
from pathlib import Path

import anyio

from gemini_relay.backends.advice import CUT_ADVICE, EMPTY_ADVICE
from gemini_relay.backends.checks import check_spec
from gemini_relay.backends.gemini_cli.acp.connection import AcpConnectionLost, AcpRpcError, Inbound
from gemini_relay.backends.gemini_cli.acp.errors import prompt_failure
from gemini_relay.backends.gemini_cli.acp.permissions import acp_mode, answer_permission, in_session_folder
from gemini_relay.backends.gemini_cli.acp.pool import WarmPool
from gemini_relay.backends.gemini_cli.acp.sessions import Launch, Lease, configure
from gemini_relay.backends.gemini_cli.acp.updates import UpdateTranslator
from gemini_relay.backends.gemini_cli.args import SESSION_ID, resolve_model, with_schema_instruction
from gemini_relay.backends.gemini_cli.auth import with_auth_fix
from gemini_relay.backends.gemini_cli.cli_config import read_cli_view
from gemini_relay.backends.gemini_cli.errors import MAX_SESSION_TURNS, loop_failure, no_answer_after_tools
from gemini_relay.backends.gemini_cli.settings import NAME, GeminiCliSettings, cli_env, gemini_home
from gemini_relay.backends.gemini_cli.usage import recorded_call, sum_usage
from gemini_relay.backends.literal_prompt import neutralise_prompt
from gemini_relay.backends.model_names import served_notice
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, Finished, RunNotice, SessionStarted
from gemini_relay.core.spec import MediaRef, RunSpec
from gemini_relay.errors import BackendUnavailable, InputError, RunFailed, RunTimedOut

CANCEL_SETTLE = 2.0  # session/cancel answers in milliseconds; a turn still open after this is stuck
LAUNCH_TTL = 30.0  # seconds a resolved launch is reused (the PATH search took ~0.1 ms of every warm ask)
INLINE_RECORDING = 64 * 1024  # bytes: a recording up to this is read in the event loop (a longer one in a thread)
CUT_SHORT = (
    "Gemini returned no usable answer: the answer stopped before the model finished it (over ACP the Gemini CLI "
    "does not say why: a stream that ended without a finish reason, or a malformed tool call)"
)

__all__ = ["AcpBackend", "takes_literally"]


def takes_literally(spec: RunSpec) -> bool:
    """Whether a warm session treats the prompt as the cold path does. Not one starting with `/`: ACP mode has its
    own command handling (built-ins like /help answer differently, project commands do not run when allowed), so
    such a prompt runs cold. `@` is escaped alike on both paths (see _prepare) and reads no file on either."""
    return not spec.prompt.lstrip().startswith("/")


class AcpBackend:
    """Serves runs from `pool` (entered by the owner: `async with WarmPool() as pool`)."""

    name = NAME
    command = "gemini"
    max_concurrent: int | None = None

    def __init__(self, settings: Settings, pool: WarmPool) -> None:
        self._settings = settings
        self.section = GeminiCliSettings.from_env(settings.env)
        self._pool = pool
        self._launch: tuple[Launch, float] | None = None

    @property
    def pool(self) -> WarmPool:
        return self._pool

    def env(self) -> dict[str, str]:
        env = cli_env(self._settings.env, self._settings.state_dir)
        # An explicit heap limit makes V8 collect what finished sessions leave (settings.DEFAULT_WARM_HEAP_MB).
        env["NODE_OPTIONS"] = f"--max-old-space-size={self.section.warm_heap_mb}"
        return env

    def launch(self) -> Launch:
        """How this backend starts its warm CLI, resolved again once LAUNCH_TTL has passed or the binary is gone
        (a CLI installed elsewhere on PATH meanwhile is picked up by the next resolution)."""
        now = time.monotonic()
        if self._launch is not None:
            launch, resolved = self._launch
            if now - resolved < LAUNCH_TTL and os.access(launch.binary, os.X_OK):
                return launch
        binary = self.section.require_binary(self._settings.env)
        env = self.env()
        home = gemini_home(env)
        launch = Launch(str(binary), env, home if home.is_dir() else self._settings.project_root)
        self._launch = (launch, now)
        return launch

    def check(self, spec: RunSpec) -> None:
        """Refuse what this backend could never run, before a job exists (InputError naming the field)."""
        check_spec(spec)
        self.refuse_file_uris(spec)
        self._prepare(spec)

    @staticmethod
    def refuse_file_uris(spec: RunSpec) -> None:
        if any(ref.kind == "file_uri" for ref in spec.images):
            raise InputError(
                "Files API uris reach only the api backend; give the Gemini CLI a local path or an https URL",
                field="images",
            )

    def prewarm(self) -> None:
        """Start a warm process in the background (a missing binary is reported by the first run instead)."""
        with contextlib.suppress(BackendUnavailable):
            # The first new conversation's session too: a plain ask in the project root, on the default model.
            model = resolve_model(None, self.section.default_model)
            self._pool.prewarm(self.launch(), (self._settings.project_root, "default", model))

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        prompt, model, notices = self._prepare(spec)
        mode = acp_mode(spec)
        for notice in notices:
            yield RunNotice(notice)
        deadline = anyio.current_time() + spec.timeout_seconds
        launch = self.launch()
        try:
            async with self._pool.lease(launch, spec.conversation_id, spec.cwd, mode=mode, model=model) as lease:
                await _configure(lease, mode, model)
                session_id = lease.session.session_id
                started = SessionStarted(session_id=session_id, model=model or lease.session.model, warm=lease.warm)
                translator = UpdateTranslator(session_id)
                # aclosing: a caller closing this generator must close the turn now, not when the GC gets to it.
                blocks = [{"type": "text", "text": prompt}, *image_blocks(spec.images)]
                turn = _prompt(lease, blocks, started, mode, model, translator, deadline, spec.timeout_seconds)
                async with contextlib.aclosing(turn):
                    async for event in turn:
                        yield event
        except TurnsStopped:
            # Over ACP the CLI ends a loop it detected and a session past model.maxSessionTurns alike: the settings
            # tell which (loop detection is the only one when no limit is set).
            if _session_turns_limit(launch.env, spec.cwd) is not None:
                raise RunFailed(MAX_SESSION_TURNS) from None
            raise loop_failure() from None
        except RunFailed as exc:
            with_auth_fix(exc, launch.env, spec.cwd, warm=True)  # the generic auth advice becomes the precise fix
            raise

    def _prepare(self, spec: RunSpec) -> tuple[str, str | None, list[str]]:
        """The prompt text, the model id (None: the CLI's default) and the notices for options not honoured."""
        notices: list[str] = []
        model = resolve_model(spec.model, self.section.default_model)
        if model is not None and model.startswith("-"):
            raise InputError(f"model {model!r} is not a model id; see gemini-models for the ids this backend accepts")
        if spec.conversation_id is not None and not SESSION_ID.fullmatch(spec.conversation_id):
            raise InputError(
                "conversationId must be letters, digits, '-' or '_', starting with a letter or digit "
                "(as printed after 🧵 conversationId)"
            )
        if spec.effort is not None and "effort" in spec.explicit:
            notices.append(
                f"effort {spec.effort} has no Gemini CLI equivalent; the model's default reasoning was used."
            )
        if spec.mode == "plan" and spec.skip_permissions:
            notices.append("skipPermissions was ignored: plan mode is read-only.")
        notices.extend(
            f"addDirs {directory} is not supported by warm Gemini CLI sessions; it was ignored."
            for directory in spec.add_dirs
        )
        if spec.agent is not None:
            notices.append(f"agent {spec.agent} is an agy feature; the Gemini CLI ran without it.")
        if spec.sandbox:
            notices.append("sandbox true is not supported by warm Gemini CLI sessions; it was ignored.")
        prompt = spec.prompt
        if spec.json_schema is not None:
            prompt = with_schema_instruction(spec.prompt, spec.json_schema)
            notices.append(
                "jsonSchema: the Gemini CLI has no schema flag; the schema was given to the model as an instruction."
            )
        # As on the cold path, last and over the whole text: no `@` expands, a leading `/name` runs only when allowed.
        return neutralise_prompt(prompt, allow_slash_commands=spec.allow_slash_commands), model, notices


async def _configure(lease: Lease, mode: str, model: str | None) -> None:
    try:
        await configure(lease.connection, lease.session, mode, model)
    except AcpRpcError as exc:
        raise RunFailed(f"gemini --acp refused the session settings: {exc.details or exc.message}") from None
    except AcpConnectionLost as exc:
        raise RunFailed(f"{exc.description} before the prompt", retryable=True) from None
    except TimeoutError:
        lease.discard()
        raise RunFailed("gemini --acp did not apply the session settings in time", retryable=True) from None


class TurnsStopped(RunFailed):
    """The CLI stopped the turn (stopReason max_turn_requests): loop detection, or model.maxSessionTurns."""


def _session_turns_limit(env: Mapping[str, str], cwd: Path) -> int | None:
    model = read_cli_view(env, cwd).settings.get("model")
    limit = model.get("maxSessionTurns") if isinstance(model, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def image_blocks(images: tuple[MediaRef, ...]) -> list[dict[str, str]]:
    """ACP image content blocks (the CLI declares promptCapabilities.image): base64 data and its MIME type."""
    return [
        {"type": "image", "data": base64.b64encode(Path(ref.value).read_bytes()).decode(), "mimeType": ref.mime_type}
        for ref in images
        if ref.kind == "path" and ref.mime_type
    ]


async def _prompt(
    lease: Lease,
    blocks: list[dict[str, str]],
    started: SessionStarted,
    mode: str,
    model: str | None,
    translator: UpdateTranslator,
    deadline: float,
    timeout: float,
) -> AsyncGenerator[AgentEvent, None]:
    """The turn's events, `started` first, once the prompt is on its way: what the caller does with the session
    (the host records it and tells the servers attached) happens while the CLI works, not before it starts."""
    connection, session_id = lease.connection, lease.session.session_id
    settled = False
    async with connection.listen(session_id) as inbox:
        try:
            # The CLI's recording stamps the prompt in whole milliseconds, at or after this.
            sent_at = math.floor(time.time() * 1000) / 1000
            try:
                await connection.send_prompt(session_id, blocks)
            except AcpConnectionLost as exc:
                settled = True
                raise RunFailed(f"{exc.description} before the prompt", retryable=True) from None
            yield started
            while True:
                item: Inbound | None = None
                with anyio.move_on_after(max(deadline - anyio.current_time(), 0)):
                    item = await inbox.receive()
                if item is None:
                    settled = await _cancel_turn(lease, inbox)
                    raise RunTimedOut("gemini", timeout)
                if item.kind == "update":
                    for event in translator.update(item.payload):
                        yield event
                    _track_mode(lease, translator)
                elif item.kind == "permission":
                    params = in_session_folder(item.payload, lease.process_cwd, lease.session.cwd)
                    for event in await answer_permission(
                        connection, item.request_id, params, mode, translator, deadline
                    ):
                        yield event
                elif item.kind == "closed":
                    settled = True
                    reason = str(item.payload.get("reason") or "gemini --acp exited")
                    raise RunFailed(f"{reason} during the run", retryable=True)
                else:
                    settled = True
                    finished = _finish(item, translator)
                    # ACP's model_usage names the model that answered, as cold's per-model stats do.
                    fell_back = served_notice("gemini", model, finished.models)
                    if fell_back:
                        yield RunNotice(fell_back)
                    finished = await _recorded(finished, lease, sent_at, translator)
                    if finished.status == "SUCCESS" and not translator.answered:  # tools ran, see _finish
                        yield RunNotice(no_answer_after_tools(translator.tool_names))
                    yield finished
                    return
        finally:
            if not settled:
                with anyio.CancelScope(shield=True):
                    await _cancel_turn(lease, inbox)


def _size(path: Path) -> float:
    try:
        return path.stat().st_size
    except OSError:
        return math.inf


def _finish(item: Inbound, translator: UpdateTranslator) -> Finished:
    if item.error is not None:
        raise prompt_failure(item.error)
    stop = item.payload.get("stopReason")
    if stop == "cancelled":
        raise RunFailed("gemini --acp cancelled the turn", retryable=True)
    if stop == "max_turn_requests":
        raise TurnsStopped("gemini --acp stopped the turn")
    if stop == "end_turn" and not translator.answered and not translator.tool_names:
        # Failed as cold fails it, but unnamed: over ACP the CLI ends an empty answer, a SAFETY/RECITATION block
        # and a missing finish reason alike, as a plain end_turn (cold's stream-json names which). After tools,
        # the recording tells an empty answer the CLI took (a notice) from a failed one (_recorded).
        raise _empty()
    return translator.finished(item.payload)


def _empty() -> RunFailed:
    return RunFailed(
        "Gemini returned no usable answer: the model sent an empty or blocked response (over ACP the Gemini CLI "
        "does not say which: an empty answer, a safety or recitation block, or no finish reason)",
        recovery=EMPTY_ADVICE,
    )


async def _recorded(finished: Finished, lease: Lease, sent_at: float, translator: UpdateTranslator) -> Finished:
    """`finished` checked against the CLI's recording of the turn, with the recording's usage of it (as cold reports
    it: ACP's own count has no thoughts or totals).

    Raises:
        RunFailed: an end_turn whose answer the CLI did not record: its stream failed the CLI's checks (cold's
            stream-json names which; over ACP the CLI ends the turn as if it were complete).
    """
    session_id = lease.session.session_id
    kept = lease.session.recording  # a spare's: where its session records
    if kept is not None and _size(kept.path) <= INLINE_RECORDING:
        # Read here: a worker thread costs the call more than reading a short recording does.
        call = recorded_call(lease.home, session_id, sent_at, path=kept.path)
    else:
        call = await anyio.to_thread.run_sync(recorded_call, lease.home, session_id, sent_at)
    if call is None:
        return finished
    if finished.status == "SUCCESS" and not call.answered:
        if not translator.answered:
            raise _empty()
        raise RunFailed(CUT_SHORT, retryable=True, recovery=CUT_ADVICE)
    usage = sum_usage(list(call.turns))
    return replace(finished, usage=usage) if usage is not None else finished


def _track_mode(lease: Lease, translator: UpdateTranslator) -> None:
    # The CLI may switch a session's mode itself (an `allow_always` answer, enter_plan_mode); the next run resets it.
    if translator.mode_changes:
        lease.session.mode = translator.mode_changes[-1]


async def _cancel_turn(lease: Lease, inbox: anyio.abc.ObjectReceiveStream[Inbound]) -> bool:
    """session/cancel, then wait (bounded) for the prompt's answer; a turn that will not settle costs its process."""
    connection, session_id = lease.connection, lease.session.session_id
    try:
        await connection.notify("session/cancel", {"sessionId": session_id})
    except AcpConnectionLost:
        return True
    with anyio.move_on_after(CANCEL_SETTLE):
        async for item in inbox:
            if item.kind == "permission":
                with contextlib.suppress(AcpConnectionLost):
                    await connection.respond(item.request_id, {"outcome": {"outcome": "cancelled"}})
            elif item.kind in ("response", "closed"):
                return True
    lease.discard()
    return False

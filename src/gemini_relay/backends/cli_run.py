"""What every CLI backend does once its argv is built: spawn, decode stdout into events, classify spawn errors."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path

from gemini_relay.core.events import AgentEvent, Finished, Spawned
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed
from gemini_relay.log import logger, redact_argv
from gemini_relay.streams.framing import NdjsonDecoder
from gemini_relay.streams.transcript import Transcript
from gemini_relay.supervise.group import open_group
from gemini_relay.supervise.process import ProcessExit, ProcessSpec, SpawnError


@dataclass
class CliRun:
    """Filled in by `stream_cli` as it goes: the process's exit, once it has one."""

    exit: ProcessExit | None = None


async def stream_cli(
    seen: Transcript,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdin: bytes | None,
    decoder: NdjsonDecoder,
    grace: float,
    install_hint: str,
    run: CliRun,
) -> AsyncGenerator[AgentEvent, None]:
    """Run one CLI process: its decoded events are folded into `seen` and yielded as they arrive — except the
    upstream's own `Finished`, which is only folded: the backend yields the verdict once it has classified the exit.

    Raises:
        RunFailed: the binary could not be executed (SPAWN_FAILED, with the install hint).
    """
    logger.info("Spawning: %s", redact_argv(argv))
    try:
        async with open_group(ProcessSpec(argv=argv, env=env, cwd=cwd, stdin=stdin), grace=grace) as proc:
            yield seen.apply(Spawned(proc.pid))
            async with aclosing(proc.chunks()) as chunks:
                async for chunk in chunks:
                    for event in decoder.push(chunk):
                        seen.apply(event)
                        if not isinstance(event, Finished):
                            yield event
            for event in decoder.flush():
                seen.apply(event)
                if not isinstance(event, Finished):
                    yield event
            run.exit = await proc.finish()
    except SpawnError as exc:
        raise RunFailed(f"{exc.strerror}. {install_hint}", reason=FailureReason.SPAWN_FAILED) from exc


def verdict(seen: Transcript, *, partial: bool = False) -> Finished:
    """The terminal event of a run whose exit was classified as success."""
    finished = seen.finished or Finished(ok=True, status="SUCCESS")
    return replace(
        finished,
        ok=True,
        text=seen.text,
        denied_actions=tuple(seen.denied_actions),
        session_id=seen.session_id,
        partial=partial or finished.partial,
    )

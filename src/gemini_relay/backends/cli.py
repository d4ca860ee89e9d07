"""What every CLI backend does once its argv is built: spawn, decode stdout into the record, classify spawn errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import RunFailed
from gemini_relay.jobs.models import RunRecord
from gemini_relay.log import logger, redact_argv
from gemini_relay.streams.framing import NdjsonDecoder
from gemini_relay.supervise.process import ProcessExit, ProcessSpec, SpawnError, run_process


async def run_cli(
    record: RunRecord,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdin: bytes | None,
    decoder: NdjsonDecoder,
    grace: float,
    install_hint: str,
) -> ProcessExit:
    """Run one CLI process for `record`: events go into the record as they arrive, the tail is flushed at exit.

    Raises:
        RunFailed: the binary could not be executed (SPAWN_FAILED, with the install hint).
    """

    def on_stdout(chunk: bytes) -> None:
        for event in decoder.push(chunk):
            record.apply(event)

    def on_spawn(pid: int) -> None:
        record.pid = pid
        record.state = RunState.RUNNING

    logger.info("Spawning: %s", redact_argv(argv))
    try:
        return await run_process(
            ProcessSpec(argv=argv, env=env, cwd=cwd, stdin=stdin), on_stdout, grace=grace, on_spawn=on_spawn
        )
    except SpawnError as exc:
        raise RunFailed(f"{exc.strerror}. {install_hint}", reason=FailureReason.SPAWN_FAILED) from exc
    finally:
        for event in decoder.flush():
            record.apply(event)

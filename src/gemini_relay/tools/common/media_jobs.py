"""Every generation is a durable job: start it on the engine, wait within the caller's budget, answer with files.

`async` answers with the job id at once, `maxWaitMs` waits up to a budget and then hands back the job id, an
`idempotencyKey` returns the recorded result (`reused: true`) instead of billing again, and two identical calls in
flight merge into one job through an automatic key that is released once that job has ended.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason
from gemini_relay.errors import InputError, RunFailed
from gemini_relay.format import with_notices
from gemini_relay.jobs import JobOptions, request_hash
from gemini_relay.tools.common.context import Deps, Link, Reply
from gemini_relay.tools.common.progress import CallProgress

INLINE_CAP = 8 * 1024 * 1024  # inline media only on request, and never past this (a video is a link, not bytes)


@dataclass(frozen=True)
class Controls:
    async_: bool = False
    max_wait_ms: int | None = None
    idempotency_key: str | None = None
    inline: bool = False


async def run_media(
    deps: Deps, call: CallProgress, spec: RunSpec, controls: Controls, extra: dict[str, Any] | None = None
) -> Reply:
    if deps.jobs is None or deps.background is None:
        if controls.async_ or controls.max_wait_ms is not None or controls.idempotency_key:
            raise InputError("async, maxWaitMs and idempotencyKey need the job store (this server has none)")
        record = await deps.runs.register(spec, deps.registry.media().name)
        call.watch(record)
        return media_reply(await deps.runs.execute(record), record.run_id, controls, reused=False, extra=extra)
    store = deps.jobs.store
    auto = controls.idempotency_key is None
    # Without a key, identical calls in flight merge: the key is the request itself, released when its job ends.
    backend = deps.registry.media().name
    key = controls.idempotency_key or "in-flight:" + _digest(spec, backend)
    record = await deps.runs.register(spec, backend, JobOptions(idempotency_key=key))
    if record.reused_job and auto and deps.jobs.status(record.run_id).state.terminal:
        store.unbind_idempotency(_hashed(key))  # that twin has ended: this is a new request, billed anew
        record = await deps.runs.register(spec, backend, JobOptions(idempotency_key=key))
    reused = record.reused_job
    job_id = record.run_id
    if not reused:
        call.watch(record)
        deps.background.start_soon(deps.run_detached, record)
    if controls.async_:
        budget = 0.0
    elif controls.max_wait_ms is not None:
        budget = controls.max_wait_ms / 1000
    else:
        budget = spec.timeout_seconds + deps.jobs.deadline_margin

    def on_tail(tail: str) -> None:
        call.output = tail

    status = await deps.jobs.wait(job_id, budget, on_tail=on_tail)
    if not status.state.terminal:
        return _pending(job_id, status.state.value, reused, auto, controls)
    stored = store.result(job_id)
    if auto:
        store.unbind_idempotency(_hashed(key))
    store.mark_collected(job_id)
    if stored is None:  # a supervisor that vanished without a result: the failure derived from disk
        if status.outcome is not None:
            status.outcome.raise_for_failure()
        raise RunFailed(f"job {job_id} ended without a result", reason=FailureReason.UNKNOWN)
    merged = reused and auto
    return media_reply(stored.result, job_id, controls, reused=reused and not auto, merged=merged, extra=extra)


def _digest(spec: RunSpec, backend: BackendName) -> str:
    from gemini_relay.jobs import RunRecord  # noqa: PLC0415 - only for the request digest

    digest: str = request_hash(RunRecord(spec=spec, backend=backend))
    return digest


def _hashed(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()  # as the job store keeps it (JobManager.create)


def _pending(job_id: str, state: str, reused: bool, auto: bool, controls: Controls) -> Reply:
    data: dict[str, Any] = {"job_id": job_id, "state": state}
    if reused:
        data["merged" if auto else "reused"] = True
    data["next"] = (
        f'Collect it with gemini-status {{"jobId": "{job_id}"}} (or gemini-wait); the files are written '
        "even if nobody collects them."
    )
    note = "Started as a job" if controls.async_ else f"Still {state} after {controls.max_wait_ms} ms"
    again = {"reused": " (the job of this idempotencyKey)", "merged": " (an identical call's, in flight)"}
    shared = next((again[key] for key in again if data.get(key)), "")
    text = f"{note}: job `{job_id}` ({state}){shared}.\n\nNext: {data['next']}"
    return Reply(text, data, structured=data)


def media_reply(
    result: RunResult,
    job_id: str,
    controls: Controls,
    *,
    reused: bool,
    merged: bool = False,
    extra: dict[str, Any] | None = None,
) -> Reply:
    """The files as absolute paths, `file:///` markdown embeds and resource links, then a line of facts; the facts
    as data (structuredContent, and `_meta` as before)."""
    result.raise_for_failure()
    info: dict[str, Any] = result.structured_output if isinstance(result.structured_output, dict) else {}
    links: list[Link] = []
    lines: list[str] = []
    for raw in result.files:
        path = Path(raw)
        mime = mimetypes.guess_type(path.name)[0]
        size = path.stat().st_size if path.is_file() else None
        inline = None
        if controls.inline and size is not None and size <= INLINE_CAP:
            inline = base64.b64encode(path.read_bytes()).decode()
        links.append(Link(path.as_uri(), path.name, mime, size, inline))
        embed = (
            f"![{path.name}]({path.as_uri()})"
            if (mime or "").startswith("image/")
            else f"[{path.name}]({path.as_uri()})"
        )
        lines.append(f"{embed}\n\nSaved to: {path}")
    data: dict[str, Any] = {"job_id": job_id, "state": "done", "files": list(result.files), "model": info.get("model")}
    if len(result.files) == 1:
        data["path"] = result.files[0]
    data.update(extra or {})
    for key in ("interaction_id", "chain_recovered", "continued_from_sidecar"):
        if info.get(key):
            data[key] = info[key]
    if reused:
        data["reused"] = True
    if merged:
        data["merged"] = True
    if result.usage is not None:
        data["usage"] = {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens}
    if result.notices:
        data["notices"] = list(dict.fromkeys(result.notices))
    if data.get("interaction_id"):
        data["next"] = f'Refine it with previousInteractionId "{data["interaction_id"]}" (or continueLast: true).'
    if info.get("text"):
        lines.append(f"Gemini said: {info['text']}")
    lines.append(_facts(data))
    receipts = (result.receipt,) if result.receipt is not None else ()
    return Reply(
        with_notices(result.notices, "\n\n".join(lines)), data, structured=data, links=tuple(links), receipts=receipts
    )


def _facts(data: dict[str, Any]) -> str:
    """One line of what a person may want besides the files: the model, the job, the tokens, a reuse."""
    facts = [f"Model: {data['model']}"] if data.get("model") else []
    facts.append(f"job `{data['job_id']}`")
    usage = data.get("usage")
    if usage:
        facts.append(f"📊 [Tokens: {usage['input_tokens']} in, {usage['output_tokens']} out]")
    if data.get("reused"):
        facts.append("the recorded result of this idempotencyKey (not billed again)")
    if data.get("merged"):
        facts.append("shared with an identical call in flight (billed once)")
    recovered = ("chain_recovered", "continued_from_sidecar")
    facts += [f"{key}: {json.dumps(data[key], ensure_ascii=False)}" for key in recovered if key in data]
    return " · ".join(facts) + (f"\n\nNext: {data['next']}" if data.get("next") else "")

"""The relay host's job operations, whoever asks over which connection: create a job and start it, attach a server
to a run (or hand it the recorded result), cancel, answer a run's question, and adopt the queued jobs of a host that
died. RelayHost (host.py) owns the socket and the lifecycle and hands each request here.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from gemini_relay.backends.asking import Answer
from gemini_relay.backends.backend_registry import BackendRegistry, relevant_env
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.errors import RelayError, RunFailed
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.protocol import Channel, decode_spec, encode_error
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.jobs.store.job_store import JobNotFound
from gemini_relay.jobs.store.maintenance import orphaned_queued
from gemini_relay.log import logger
from gemini_relay.relay_host.executor import JobExecutor, LiveJob
from gemini_relay.relay_host.questions import asker_for
from gemini_relay.relay_host.warm_pools import WarmPools
from gemini_relay.supervise.liveness import is_alive

UNDERWAY_WAIT = 0.1  # seconds a create's reply waits for its run to be underway (a warm prompt takes ~1 ms)


@dataclass(eq=False)  # one per host: compared by identity
class JobService:
    settings: Settings
    store: FileJobStore
    runner: JobExecutor
    engine: RunEngine
    registries: WarmPools
    draining: bool = False  # set by the host: no new job, no adoption
    tasks: TaskGroup | None = None  # where the jobs run: the host's, for as long as it serves
    streams: int = 0  # servers attached to a run right now: a draining host lets them get their results
    streams_idle: anyio.Event = field(default_factory=anyio.Event)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """A run's question, answered by the caller of the server attached to it."""
        live = self.runner.live.get(str(request["job_id"]))
        answer = Answer.from_json(dict(request.get("answer") or {}))
        found = live is not None and live.questions.answer(str(request.get("question")), answer)
        return {"answered": found}

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        """Create the job and start it. One without an idempotency key is written once its run is underway
        (executor.create_later): the reply waits for that (UNDERWAY_WAIT at most), so the prompt goes out first."""
        if self.draining:
            return {"error": {"kind": "draining", "message": "the relay host is draining"}}
        try:
            spec = decode_spec(request["spec"])
            backend = BackendName(request["backend"])
            env = relevant_env(dict(request.get("env") or {}))
            registry = self.registries.get(env, spec.cwd)
            registry.backend(backend)  # BackendUnavailable for a name this relay has no backend for
            options = JobOptions(**(request.get("options") or {}))
            record = RunRecord(spec=spec, backend=backend, run_id=request["run_id"])
            later = not options.idempotency_key
            record = (
                self.runner.create_later(record, options, env) if later else self.runner.create(record, options, env)
            )
        except RelayError as exc:
            return {"error": encode_error(exc)}
        if record.reused_job:
            return {"job_id": record.run_id, "reused": True}
        if not later:
            self.runner.claim(record.run_id)  # a fresh job: nobody else can hold it yet
        self._start(record, registry)
        live = self.runner.live[record.run_id]  # its task has not started yet: the asker is in place before it
        live.asker = asker_for(request.get("ask"), live.questions, live.publish_question)
        if later:
            with anyio.move_on_after(UNDERWAY_WAIT):
                await live.underway.wait()
            if record.run_id in self.runner.unborn:  # not underway yet (a cold start): written as it stands now
                with contextlib.suppress(RunFailed):
                    self.runner.materialize(record, started=record.state is not RunState.QUEUED)
            refused = self.runner.refused.pop(record.run_id, None)
            if refused is not None:
                self.engine.cancel(record.run_id, "the state dir refused its job")  # nobody will know its id
                return {"error": encode_error(refused)}
        return {"job_id": record.run_id, "reused": False}

    def _start(self, record: RunRecord, registry: BackendRegistry) -> None:
        assert self.tasks is not None
        self.runner.backends[record.run_id] = registry.backends[record.backend]
        self.runner.live[record.run_id] = LiveJob(record)
        self.registries.acquire(registry)
        self.tasks.start_soon(self._execute, record, registry)

    async def _execute(self, record: RunRecord, registry: BackendRegistry) -> None:
        try:
            await self.runner.execute(self.engine, record)
        finally:
            self.registries.release(registry)

    async def attach(self, channel: Channel, job_id: str, *, progress: bool = True) -> None:
        """Stream the run's changes (`progress`: False when nobody watches them: only its questions) and its result
        to the server attached."""
        live = self.runner.live.get(job_id)
        if live is None:
            live = self.adopt(job_id)
        if live is None:
            try:
                stored = self.runner.unrecorded.get(job_id) or self.store.result(job_id)
            except JobNotFound as exc:  # its directory was removed (or swept) and this host kept no result
                await channel.send({"error": encode_error(exc)})
                return
            if stored is not None:
                await channel.send({"result": stored.result.to_json()})
            else:
                await channel.send({"follow": True})  # another supervisor runs it: the server follows the store
            return
        self.streams += 1
        try:
            await live.stream(channel, progress=progress)
        finally:
            self.streams -= 1
            if not self.streams:
                self.streams_idle.set()
                self.streams_idle = anyio.Event()

    def adopt(self, job_id: str) -> LiveJob | None:
        """A queued job nobody runs (its host died before admitting it): run it here, with the environment it was
        created with (never the asking server's: another project's key and endpoint are not this job's)."""
        try:
            if self.draining or job_id in self.runner.live:
                return self.runner.live.get(job_id)
            if derive_status(self.store, job_id).state is not RunState.QUEUED:
                return None
            meta = self.store.meta(job_id)
            if meta.owner is not None and meta.owner.pid != os.getpid() and is_alive(meta.owner):
                return None  # its own host (or supervisor's server) still has it queued
            if not self.runner.claim(job_id):
                return None  # another executor took it up first
            record = RunRecord(spec=meta.spec, backend=meta.backend, run_id=job_id)
            env = dict(meta.env) if meta.env is not None else relevant_env(dict(self.settings.env))
            try:
                self.runner.lock_for(job_id, meta.spec.conversation_id)
                registry = self.registries.get(env, meta.spec.cwd)
            except BaseException:  # cleanup, re-raised: a job that cannot start holds no lock
                self.runner.release(job_id)
                raise
            self._start(record, registry)
        except (RelayError, RunFailed):
            return None
        logger.info("Adopted queued job %s", job_id)
        return self.runner.live.get(job_id)

    async def adopt_orphans(self) -> None:
        """Queued jobs of a host that died: run at once by this one (their servers re-attach), not left queued
        until some server's maintenance pass notices them."""
        for job_id in await anyio.to_thread.run_sync(orphaned_queued, self.store):
            if self.draining:
                return
            self.adopt(job_id)

    async def cancel(self, job_id: str) -> dict[str, Any]:
        live = self.runner.live.get(job_id)
        if live is None:
            return {"found": False}
        self.engine.cancel(job_id, f"{live.record.spec.tool} was cancelled")
        await live.ended(self.settings.kill_grace + 5.0)
        return {"found": True}

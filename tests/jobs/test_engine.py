"""RunEngine admission, deadlines and cancellation, and RunRecord.apply, with a real in-test backend.

`ScriptedBackend` is a working Backend: each run emits the events its script names, reports that it is
running, then waits until the test releases it (or fails it). Tests synchronise on those events only.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus

from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    SessionStarted,
    Spawned,
    StreamNotice,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.errors import BackendUnavailable, RunCancelled, RunFailed, RunTimedOut
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.streams.transcript import TAIL_CHARS

BOUND = 5.0
USAGE = Usage(input_tokens=12, output_tokens=8, thinking_tokens=3, total_tokens=23)


@dataclass
class Script:
    """What one run does: emit `before`, wait for release, then emit `after` (or raise `error`)."""

    before: Sequence[AgentEvent] = ()
    after: Sequence[AgentEvent] = (Finished(ok=True, status="SUCCESS", text="ok"),)
    error: BaseException | None = None
    started: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)


class ScriptedBackend:
    """A real Backend whose runs are driven by per-prompt scripts and anyio events."""

    def __init__(self, name: BackendName, *, max_concurrent: int | None = None) -> None:
        self._name = name
        self._max = max_concurrent
        self.scripts: dict[str, Script] = {}
        self.admitted: list[str] = []
        self.running = 0
        self.peak = 0

    @property
    def name(self) -> BackendName:
        return self._name

    @property
    def command(self) -> str:
        return "fake"

    @property
    def max_concurrent(self) -> int | None:
        return self._max

    def check(self, spec: RunSpec) -> None:
        """Scripted runs accept every request."""

    def script(self, prompt: str, **kwargs: Any) -> Script:
        self.scripts[prompt] = Script(**kwargs)
        return self.scripts[prompt]

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        script = self.scripts[spec.prompt]
        self.admitted.append(spec.prompt)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            yield Spawned(4242)
            for event in script.before:
                yield event
            script.started.set()
            await script.release.wait()
            if script.error is not None:
                raise script.error
            for event in script.after:
                yield event
        finally:
            self.running -= 1


def spec(prompt: str, *, tool: str = "gemini-ask", timeout: float = 45 * 60.0) -> RunSpec:
    return RunSpec(tool=tool, prompt=prompt, cwd=Path("/work/proj"), timeout_seconds=timeout)


@dataclass
class Submitted:
    record: RunRecord
    outcome: RunResult | None = None
    error: BaseException | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


async def submit(engine: RunEngine, record: RunRecord, *, task_status: TaskStatus[Submitted]) -> None:
    """Execute `record`; `started` fires once it is registered (and queued, if it must wait) in the engine."""
    result = Submitted(record)
    task_status.started(result)  # execute() registers and queues without yielding, before anything else runs
    try:
        result.outcome = await engine.execute(record)
    except RunFailed as exc:
        result.error = exc
    finally:
        result.done.set()


async def start(tg: anyio.abc.TaskGroup, engine: RunEngine, prompt: str, **kwargs: Any) -> Submitted:
    record = engine.new_record(spec(prompt, **kwargs), BackendName("gemini"))
    submitted: Submitted = await tg.start(submit, engine, record)
    return submitted


async def started(tg: anyio.abc.TaskGroup, engine: RunEngine, *scripts: Script, queued: int = 0) -> list[Submitted]:
    """One run per script (its prompt is the script's key), in order; returns once all but the last `queued` run."""
    backend = engine.backend(BackendName("gemini"))
    assert isinstance(backend, ScriptedBackend)
    prompts = {id(script): prompt for prompt, script in backend.scripts.items()}
    runs = [await start(tg, engine, prompts[id(script)]) for script in scripts]
    for script in scripts[: len(scripts) - queued]:
        await script.started.wait()
    return runs


# --- admission ------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_third_run_waits_for_a_free_slot_and_runs_in_fifo_order() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    a, b, c = (backend.script(p) for p in "abc")
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=2)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            run_a = await start(tg, engine, "a")
            run_b = await start(tg, engine, "b")
            run_c = await start(tg, engine, "c")
            await a.started.wait()
            await b.started.wait()
            assert run_c.record.state is RunState.QUEUED
            assert not c.started.is_set()
            assert backend.admitted == ["a", "b"]
            assert {r.run_id for r in engine.active} == {run_a.record.run_id, run_b.record.run_id, run_c.record.run_id}

            b.release.set()  # the slot b frees goes to c
            await run_b.done.wait()
            await c.started.wait()
            assert run_a.record.state is RunState.RUNNING
            assert backend.admitted == ["a", "b", "c"]

            a.release.set()
            c.release.set()
    assert backend.peak == 2
    assert [s.record.state for s in (run_a, run_b, run_c)] == [RunState.DONE] * 3
    assert engine.active == []


@pytest.mark.anyio
async def test_queued_runs_are_admitted_in_the_order_they_arrived() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    prompts = [f"p{i}" for i in range(6)]
    scripts = [backend.script(p) for p in prompts]
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for p in prompts:
                await start(tg, engine, p)
            for script in scripts:
                await script.started.wait()
                script.release.set()
    assert backend.admitted == prompts
    assert backend.peak == 1


@pytest.mark.anyio
async def test_a_backends_own_cap_beats_the_server_wide_one_and_backends_do_not_share_slots() -> None:
    capped = ScriptedBackend(BackendName("agy"), max_concurrent=1)
    other = ScriptedBackend(BackendName("gemini"))
    x, y = capped.script("x"), capped.script("y")
    z = other.script("z")
    engine = RunEngine({BackendName("agy"): capped, BackendName("gemini"): other}, max_concurrent=5)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            run_x = await tg.start(submit, engine, engine.new_record(spec("x"), BackendName("agy")))
            run_y = await tg.start(submit, engine, engine.new_record(spec("y"), BackendName("agy")))
            await tg.start(submit, engine, engine.new_record(spec("z"), BackendName("gemini")))
            await x.started.wait()
            await z.started.wait()  # a busy agy does not hold up gemini
            assert run_y.record.state is RunState.QUEUED
            x.release.set()
            await y.started.wait()
            y.release.set()
            z.release.set()
    assert run_x.record.state is RunState.DONE
    assert capped.peak == 1


def test_an_unknown_backend_is_unavailable() -> None:
    engine = RunEngine({BackendName("gemini"): ScriptedBackend(BackendName("gemini"))}, max_concurrent=1)
    with pytest.raises(BackendUnavailable, match="The agy backend is not available in this server"):
        engine.new_record(spec("p"), BackendName("agy"))
    assert engine.backend(BackendName("gemini")).name is BackendName("gemini")


# --- outcomes and state ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_successful_run_goes_queued_starting_running_done_and_reports_its_outcome() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    script = backend.script(
        "p",
        before=[SessionStarted("sess-1", "gemini-2.5-pro"), TextDelta("Hello "), TextDelta("world")],
        after=[Finished(ok=True, status="SUCCESS", usage=USAGE, num_turns=2)],
    )
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    record = engine.new_record(spec("p"), BackendName("gemini"))
    record.note("a notice")
    initial = record.state
    assert initial is RunState.QUEUED
    assert record.started_at is None
    states: list[RunState] = []
    record.listener = lambda _event: states.append(record.state)
    script.release.set()
    with anyio.fail_after(BOUND):
        outcome = await engine.execute(record)
    assert states[0] is RunState.RUNNING  # the spawn is folded first; the record was STARTING until then
    assert record.state is RunState.DONE
    assert record.started_at is not None
    assert record.ended_at is not None
    assert record.ended_at >= record.started_at
    assert record.elapsed == record.ended_at - record.started_at
    assert record.failure is None
    assert record.error is None
    assert outcome.receipt is not None and outcome.receipt.run_id == record.run_id  # its fields: the receipt tests
    assert replace(outcome, receipt=None) == RunResult(
        state=RunState.DONE,
        text="Hello world",
        conversation_id="sess-1",
        model="gemini-2.5-pro",
        usage=USAGE,
        notices=("a notice",),
        status="SUCCESS",
        num_turns=2,
    )
    assert engine.active == []


@pytest.mark.anyio
async def test_the_upstreams_full_text_and_structured_output_win_over_the_deltas() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    finished = Finished(
        ok=True,
        status="SUCCESS",
        text='{"a": 1}',
        structured_output={"a": 1},
        has_structured_output=True,
        session_id="from-result",
    )
    script = backend.script("p", before=[SessionStarted("from-init"), TextDelta("draft")], after=[finished])
    script.release.set()
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND):
        outcome = await engine.execute(engine.new_record(spec("p"), BackendName("gemini")))
    assert outcome.text == '{"a": 1}'
    assert outcome.structured_output == {"a": 1}
    assert outcome.has_structured_output is True
    assert outcome.conversation_id == "from-result"
    assert outcome.usage is None
    assert outcome.partial is False


@pytest.mark.anyio
async def test_a_run_that_ends_without_a_terminal_event_fails_and_keeps_its_streamed_text() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    backend.script("p", before=[TextDelta("only deltas")], after=[]).release.set()
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND), pytest.raises(RunFailed) as caught:
        await engine.execute(engine.new_record(spec("p"), BackendName("gemini")))
    assert "without a final result" in caught.value.message
    assert caught.value.partial_text == "only deltas"


@pytest.mark.anyio
async def test_a_backend_failure_marks_the_record_failed_and_attaches_the_partial_text() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    script = backend.script(
        "p",
        before=[TextDelta("half an ")],
        error=RunFailed("quota gone", reason=FailureReason.QUOTA_EXHAUSTED, retryable=False),
    )
    script.release.set()
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    record = engine.new_record(spec("p"), BackendName("gemini"))
    with anyio.fail_after(BOUND), pytest.raises(RunFailed) as info:
        await engine.execute(record)
    assert info.value.partial_text == "half an "
    assert info.value.retryable is False
    assert record.state is RunState.FAILED
    assert record.failure is FailureReason.QUOTA_EXHAUSTED
    assert record.error == "quota gone"
    assert record.ended_at is not None
    assert engine.active == []


@pytest.mark.anyio
async def test_a_partial_text_the_backend_set_itself_is_kept() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    script = backend.script("p", before=[TextDelta("streamed")], error=RunFailed("x", partial_text="own"))
    script.release.set()
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND), pytest.raises(RunFailed) as info:
        await engine.execute(engine.new_record(spec("p"), BackendName("gemini")))
    assert info.value.partial_text == "own"


@pytest.mark.anyio
async def test_a_backend_that_cannot_start_fails_the_record_and_frees_its_slot() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    backend.script("bad", error=BackendUnavailable("gemini is not installed")).release.set()
    backend.script("good", after=[Finished(ok=True, status="SUCCESS", text="ok")]).release.set()
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    record = engine.new_record(spec("bad"), BackendName("gemini"))
    with anyio.fail_after(BOUND):
        with pytest.raises(BackendUnavailable):
            await engine.execute(record)
        assert record.state is RunState.FAILED
        assert record.error == "gemini is not installed"
        await engine.execute(engine.new_record(spec("good"), BackendName("gemini")))


# --- deadline -------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_run_past_its_deadline_raises_run_timed_out_with_the_partial_text() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    backend.script("slow", before=[SessionStarted("s"), TextDelta("so far")])  # never released
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    record = engine.new_record(spec("slow", timeout=0.2), BackendName("gemini"))
    with anyio.fail_after(BOUND), pytest.raises(RunTimedOut) as info:
        await engine.execute(record)
    assert info.value.message == "fake timed out after 0.2s"
    assert info.value.partial_text == "so far"
    assert info.value.reason is FailureReason.TIMEOUT
    assert info.value.seconds == 0.2
    assert record.state is RunState.FAILED
    assert record.failure is FailureReason.TIMEOUT
    assert record.error == "fake timed out after 0.2s"
    assert backend.running == 0


@pytest.mark.anyio
async def test_the_deadline_starts_when_the_run_is_admitted_not_while_it_queues() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    first = backend.script("first")
    backend.script("second", after=[TextDelta("ok"), Finished(ok=True, status="SUCCESS")])
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            await start(tg, engine, "first")
            second = await start(tg, engine, "second", timeout=0.1)
            await first.started.wait()
            queued_at = time.monotonic()
            with anyio.move_on_after(0.3):  # three times the second run's whole timeout, spent in the queue
                await second.done.wait()
            assert not second.done.is_set()
            assert time.monotonic() - queued_at >= 0.1
            first.release.set()
            await backend.scripts["second"].started.wait()
            backend.scripts["second"].release.set()
    assert second.error is None
    assert second.outcome is not None
    assert second.outcome.text == "ok"


# --- cancellation ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_cancel_all_stops_running_and_queued_runs_with_a_message_naming_the_tool() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    running = backend.script("running", before=[TextDelta("partial answer")])
    backend.script("queued")
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            run_1 = await start(tg, engine, "running", tool="gemini-ask")
            run_2 = await start(tg, engine, "queued", tool="gemini-brainstorm")
            await running.started.wait()
            assert run_2.record.state is RunState.QUEUED
            assert engine.cancel_all("was cancelled by gemini-cancel") == 2
            assert engine.cancel_all("was cancelled by gemini-cancel") == 0  # already on their way out
            await run_1.done.wait()
            await run_2.done.wait()
    assert isinstance(run_1.error, RunCancelled)
    assert run_1.error.message == "gemini-ask was cancelled by gemini-cancel"
    assert run_1.error.partial_text == "partial answer"
    assert run_1.error.reason is None
    assert isinstance(run_2.error, RunCancelled)
    assert run_2.error.message == "gemini-brainstorm was cancelled by gemini-cancel"
    assert run_2.error.partial_text == ""
    for run in (run_1, run_2):
        assert isinstance(run.error, RunCancelled)
        assert run.record.state is RunState.CANCELLED
        assert run.record.failure is None
        assert run.record.error == run.error.message
    assert backend.admitted == ["running"]  # the queued run never reached the backend
    assert backend.running == 0
    assert engine.active == []


@pytest.mark.anyio
async def test_cancel_all_with_nothing_active_cancels_nothing() -> None:
    engine = RunEngine({BackendName("gemini"): ScriptedBackend(BackendName("gemini"))}, max_concurrent=1)
    assert engine.cancel_all("was cancelled by gemini-cancel") == 0


@pytest.mark.anyio
async def test_runs_that_already_finished_are_not_counted_by_cancel_all() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    backend.script("done").release.set()
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND):
        await engine.execute(engine.new_record(spec("done"), BackendName("gemini")))
    assert engine.cancel_all("was cancelled by gemini-cancel") == 0


@pytest.mark.anyio
async def test_cancelling_the_caller_cancels_the_run_and_propagates() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    script = backend.script("p", before=[TextDelta("x")])
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    record = engine.new_record(spec("p"), BackendName("gemini"))
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:

            async def caller() -> None:
                await engine.execute(record)

            tg.start_soon(caller)
            await script.started.wait()
            tg.cancel_scope.cancel()  # e.g. the MCP client cancelled its request
    assert record.state is RunState.CANCELLED
    assert record.ended_at is not None
    assert engine.active == []
    assert backend.running == 0


# --- RunRecord.apply ------------------------------------------------------------------------------------------


def new_record() -> RunRecord:
    return RunRecord(spec=spec("p"), backend=BackendName("gemini"))


def test_session_started_sets_the_session_and_model_and_an_empty_one_keeps_them() -> None:
    record = new_record()
    record.apply(SessionStarted("s1", "gemini-2.5-pro"))
    assert (record.session_id, record.model) == ("s1", "gemini-2.5-pro")
    record.apply(SessionStarted("", None))
    assert (record.session_id, record.model) == ("s1", "gemini-2.5-pro")
    record.apply(SessionStarted("s2", "m2"))
    assert (record.session_id, record.model) == ("s2", "m2")


def test_text_deltas_join_into_the_text_and_the_tail_keeps_the_latest_150_chars() -> None:
    record = new_record()
    record.apply(TextDelta("a" * 100))
    record.apply(TextDelta("b" * 100))
    assert record.text == "a" * 100 + "b" * 100
    assert record.streamed_text == record.text
    assert TAIL_CHARS == 150
    assert record.tail == "a" * 50 + "b" * 100
    record.apply(TextDelta(""))
    assert record.tail == "a" * 50 + "b" * 100


def test_a_refused_tool_is_a_denied_action_named_by_its_tool() -> None:
    record = new_record()
    record.apply(ToolCall("w1", "write_file", {"file_path": "x"}))
    record.apply(ToolResult("w1", ok=False, output="denied", error_type="policy_violation", error_message="no"))
    record.apply(ToolCall("s1", "run_shell_command"))
    record.apply(ToolResult("s1", ok=False, error_type="tool_not_registered"))
    record.apply(ToolResult("unknown-id", ok=False, error_type="permission_denied"))
    record.apply(ToolResult("x", ok=False, error_type="denied"))
    assert record.denied_actions == ["write_file", "run_shell_command", "unknown-id", "x"]


def test_tool_results_that_succeeded_or_failed_for_other_reasons_are_not_denials() -> None:
    record = new_record()
    record.apply(ToolCall("r1", "read_file"))
    record.apply(ToolResult("r1", ok=True, output=""))
    record.apply(ToolResult("r1", ok=False, error_type="file_not_found"))
    record.apply(ToolResult("r1", ok=False))
    record.apply(ToolResult("r2", ok=True, error_type="policy_violation"))  # ok wins over a stray type
    assert record.denied_actions == []
    assert record.text == ""


def test_only_error_notices_are_stream_errors() -> None:
    record = new_record()
    record.apply(StreamNotice("loop detected", severity="warning"))
    record.apply(StreamNotice("The model returned an empty response", severity="error"))
    assert record.stream_errors == ["The model returned an empty response"]
    assert record.notices == []


def test_finished_is_kept_and_may_name_the_session_and_more_denied_actions() -> None:
    record = new_record()
    record.apply(SessionStarted("s1"))
    record.apply(ToolCall("w1", "write_file"))
    record.apply(ToolResult("w1", ok=False, error_type="policy_violation"))
    finished = Finished(ok=False, status="ERROR", session_id="s9", denied_actions=("write_file", "shell", "shell"))
    record.apply(finished)
    assert record.finished is finished
    assert record.session_id == "s9"
    assert record.denied_actions == ["write_file", "shell"]


def test_a_finished_without_session_keeps_the_known_one() -> None:
    record = new_record()
    record.apply(SessionStarted("s1"))
    record.apply(Finished(ok=True, status="SUCCESS"))
    assert record.session_id == "s1"


def test_the_finished_text_is_the_answer_when_present_even_if_empty() -> None:
    record = new_record()
    record.apply(TextDelta("streamed"))
    record.apply(Finished(ok=True, status="SUCCESS", text=""))
    assert record.text == ""
    assert record.streamed_text == "streamed"


def test_notes_are_kept_once_in_order() -> None:
    record = new_record()
    for notice in ("b", "a", "b"):
        record.note(notice)
    assert record.notices == ["b", "a"]


def test_a_run_that_never_spawns_is_running_from_its_first_event_of_any_kind() -> None:
    # A warm session and the API stream text without a Spawned: such a run was `starting` for its whole life.
    for first in (TextDelta("Hel"), SessionStarted("s", "m"), StreamNotice("slow", "warning")):
        record = new_record()
        record.state = RunState.STARTING
        record.apply(first)
        assert record.state is RunState.RUNNING, first


def test_an_event_after_the_end_does_not_revive_the_record() -> None:
    record = new_record()
    record.state = RunState.CANCELLED
    record.apply(TextDelta("late"))
    assert record.state is RunState.CANCELLED


def test_records_get_distinct_short_ids_and_start_queued() -> None:
    one, two = new_record(), new_record()
    assert one.run_id != two.run_id
    assert len(one.run_id) == 12
    assert one.state is RunState.QUEUED
    assert not one.state.terminal
    assert all(s.terminal for s in (RunState.DONE, RunState.FAILED, RunState.CANCELLED))
    assert not any(s.terminal for s in (RunState.QUEUED, RunState.STARTING, RunState.RUNNING))


def test_elapsed_counts_from_creation_until_the_run_is_admitted() -> None:
    record = new_record()
    record.created_at = 100.0
    record.started_at = None
    record.ended_at = 130.0
    assert record.elapsed == 30.0
    record.started_at = 110.0
    assert record.elapsed == 20.0


@pytest.mark.anyio
async def test_cancelling_one_run_by_id_leaves_the_others_running() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    a, b = backend.script("a"), backend.script("b")
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=2)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            run_a, run_b = await started(tg, engine, a, b)
            assert engine.cancel(run_a.record.run_id, "gemini-ask was cancelled by its job")
            assert not engine.cancel("no-such-run", "x")
            await run_a.done.wait()
            assert run_b.record.state is RunState.RUNNING
            b.release.set()
    assert isinstance(run_a.error, RunCancelled) and run_a.error.message == "gemini-ask was cancelled by its job"
    assert run_b.record.state is RunState.DONE


# --- receipts -------------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_receipt_times_the_queue_the_first_answer_event_and_the_whole_run() -> None:
    backend = ScriptedBackend(BackendName("gemini"))
    first = backend.script("first")
    second = backend.script("second", after=(TextDelta("hi"), Finished(ok=True, status="SUCCESS", usage=USAGE)))
    engine = RunEngine({BackendName("gemini"): backend}, max_concurrent=1)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            run_first, run_second = await started(tg, engine, first, second, queued=1)
            assert run_second.record.state is RunState.QUEUED
            first.release.set()  # the second waited in the queue for this
            await second.started.wait()
            second.release.set()
    assert run_first.outcome is not None and run_second.outcome is not None
    receipt = run_second.outcome.receipt
    assert receipt is not None and receipt.run_id == run_second.record.run_id
    record = run_second.record
    assert record.started_at is not None and record.first_output_at is not None
    assert receipt.queued_seconds == record.started_at - record.created_at > 0
    assert receipt.first_byte_seconds == record.first_output_at - record.started_at
    assert receipt.total_seconds >= receipt.queued_seconds + receipt.first_byte_seconds
    assert (receipt.tokens, receipt.backend, receipt.warm, receipt.job_id) == (USAGE, "gemini", False, None)


def test_a_process_that_served_the_run_says_warm_or_cold_and_the_first_answer_event_is_timed_once() -> None:
    record = new_record()
    record.apply(Spawned(7, warm=True))
    record.apply(SessionStarted("s", "m"))  # the session is not an answer: not timed
    assert (record.warm, record.first_output_at) == (True, None)
    record.apply(TextDelta("a"))
    first = record.first_output_at
    record.apply(TextDelta("b"))
    assert first is not None and record.first_output_at == first
    warm_session = new_record()
    warm_session.apply(SessionStarted("s", "m", warm=False))  # the warm CLI's word for a process booted for it
    assert warm_session.warm is False
    assert new_record().warm is None  # no process said anything: the API

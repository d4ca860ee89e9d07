"""The JobStore contract, as tests any store implementation must pass.

Subclass `StoreContract` in a test module that provides a `store` fixture (one fresh, empty store per test); every
test method then runs against that store. Helpers here (`full_meta`, `full_result`) build records with every field
set, so a round trip that drops or mangles a field fails.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from gemini_relay.core.events import Usage
from gemini_relay.core.result import Failure, FailureKind, RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.jobs.store.job_store import JobConflict, JobMeta, JobNotFound, JobResult, JobStore, Progress
from gemini_relay.supervise.liveness import ProcessInfo

CLOCK_SLACK = 1.0  # file timestamps come from a coarse kernel clock that may lag time.time() by a tick


def full_meta(job_id: str = "job-1", *, key: str | None = None, request_hash: str | None = "hash-1") -> JobMeta:
    spec = RunSpec(
        tool="gemini-run",
        prompt="Review café ✓ and the \u201cquoted\u201d parts",
        cwd=Path("/srv/project with space"),
        model="gemini-2.5-pro",
        effort="high",
        mode="plan",
        json_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        add_dirs=(Path("/srv/shared"), Path("/opt/other dir")),
        conversation_id=None,
        session_id="0f1e2d3c-aaaa-bbbb-cccc-000000000001",
        agent="reviewer",
        allow_slash_commands=True,
        skip_permissions=True,
        sandbox=True,
        timeout_seconds=90.5,
        explicit=frozenset({"model", "effort", "mode"}),
    )
    return JobMeta(
        job_id=job_id,
        tool="gemini-run",
        backend=BackendName("gemini"),
        spec=spec,
        created_at=1_700_000_000.25,
        priority="optional",
        idempotency_key=key,
        request_hash=request_hash,
        owner=ProcessInfo(pid=4242, start_ticks=987654, boot_id="b00t-1d"),
    )


def full_result(state: RunState = RunState.DONE) -> JobResult:
    failed = state is RunState.FAILED
    failure = None
    if state is not RunState.DONE:
        failure = Failure(
            kind=FailureKind.TIMED_OUT if failed else FailureKind.CANCELLED,
            message="it timed out" if failed else "cancelled",
            reason=FailureReason.TIMEOUT if failed else None,
            recovery="Retry with a longer timeout." if failed else None,
            retryable=failed,
            error_id="err-7" if failed else None,
            timeout_seconds=30.0 if failed else None,
        )
    result = RunResult(
        state=state,
        text="The whole answer, with ünïcode and\nnewlines.",
        partial=state is not RunState.DONE,
        conversation_id="0f1e2d3c-aaaa-bbbb-cccc-000000000001",
        model="gemini-2.5-pro",
        usage=Usage(input_tokens=12, output_tokens=8, thinking_tokens=3, total_tokens=23),
        num_turns=2,
        status="SUCCESS",
        structured_output={"ok": True, "items": [1, "two", None]},
        has_structured_output=True,
        notices=("first notice", "second notice"),
        failure=failure,
    )
    return JobResult(
        result,
        started_at=1_700_000_001.5,
        ended_at=1_700_000_009.75,
        exit_code=0 if state is RunState.DONE else 1,
    )


class StoreContract:
    """Every JobStore keeps these promises. Needs a `store` fixture."""

    def test_a_created_job_reads_back_its_whole_meta(self, store: JobStore) -> None:
        meta = full_meta(key="k" * 64)
        store.create(meta)
        assert store.meta("job-1") == meta
        assert store.job_ids() == ["job-1"]

    def test_a_meta_without_optional_parts_reads_back_unchanged(self, store: JobStore) -> None:
        bare = JobMeta(
            job_id="bare",
            tool="gemini-ask",
            backend=BackendName("agy"),
            spec=RunSpec(tool="gemini-ask", prompt="p", cwd=Path("/p")),
            created_at=5.0,
        )
        store.create(bare)
        assert store.meta("bare") == bare

    def test_creating_an_existing_job_id_is_a_conflict_and_keeps_the_first_meta(self, store: JobStore) -> None:
        store.create(full_meta())
        with pytest.raises(JobConflict):
            store.create(full_meta(request_hash="another"))
        assert store.meta("job-1").request_hash == "hash-1"

    def test_job_ids_lists_every_created_job(self, store: JobStore) -> None:
        for job_id in ("a", "b", "c"):
            store.create(full_meta(job_id))
        assert sorted(store.job_ids()) == ["a", "b", "c"]

    def test_an_empty_store_has_no_jobs(self, store: JobStore) -> None:
        assert store.job_ids() == []

    @pytest.mark.parametrize("job_id", ["nope", "", "a/b", "../escape", ".hidden"])
    def test_every_record_of_an_unknown_or_path_like_job_id_is_not_found(self, store: JobStore, job_id: str) -> None:
        store.create(full_meta())
        readers = (store.meta, store.supervisor, store.progress, store.text, store.result)
        writers = (store.request_cancel, store.mark_collected)
        for call in (*readers, *writers):
            with pytest.raises(JobNotFound):
                call(job_id)
        with pytest.raises(JobNotFound):
            store.write_supervisor(job_id, ProcessInfo(pid=1, start_ticks=1))
        with pytest.raises(JobNotFound):
            store.write_progress(job_id, Progress(state=RunState.RUNNING))
        with pytest.raises(JobNotFound):
            store.append_text(job_id, "x")
        with pytest.raises(JobNotFound):
            store.write_result(job_id, full_result())

    def test_the_flags_of_an_unknown_job_read_as_unset(self, store: JobStore) -> None:
        assert store.cancel_requested("nope") is False
        assert store.collected("nope") is False
        assert store.finished_at("nope") is None

    def test_a_new_job_has_no_supervisor_progress_text_or_result(self, store: JobStore) -> None:
        store.create(full_meta())
        assert store.supervisor("job-1") is None
        assert store.progress("job-1") is None
        assert store.text("job-1") == ""
        assert store.result("job-1") is None
        assert store.finished_at("job-1") is None
        assert store.cancel_requested("job-1") is False
        assert store.collected("job-1") is False

    @pytest.mark.parametrize(
        "info",
        [ProcessInfo(pid=31337, start_ticks=123456789, boot_id="boot-a"), ProcessInfo(pid=7, start_ticks=None)],
    )
    def test_the_supervisor_reads_back_as_written(self, store: JobStore, info: ProcessInfo) -> None:
        store.create(full_meta())
        store.write_supervisor("job-1", info)
        assert store.supervisor("job-1") == info

    def test_progress_reads_back_as_written_and_the_latest_write_wins(self, store: JobStore) -> None:
        store.create(full_meta())
        first = Progress(state=RunState.STARTING, started_at=10.0, updated_at=10.0)
        later = Progress(
            state=RunState.RUNNING,
            session_id="sess-1",
            model="gemini-2.5-flash",
            cli_pid=5150,
            cli_start_ticks=424242,
            started_at=10.0,
            updated_at=12.5,
        )
        store.write_progress("job-1", first)
        assert store.progress("job-1") == first
        store.write_progress("job-1", later)
        assert store.progress("job-1") == later

    def test_appended_text_reads_back_as_one_string_in_order(self, store: JobStore) -> None:
        store.create(full_meta())
        pieces = ["Hello ", "wörld 👋", "\nline two", ""]
        for piece in pieces:
            store.append_text("job-1", piece)
        assert store.text("job-1") == "".join(pieces)

    def test_text_of_one_job_never_shows_in_another(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        store.create(full_meta("b"))
        store.append_text("a", "only a")
        assert store.text("b") == ""

    @pytest.mark.parametrize("state", [RunState.DONE, RunState.FAILED, RunState.CANCELLED])
    def test_a_result_reads_back_whole(self, store: JobStore, state: RunState) -> None:
        store.create(full_meta())
        result = full_result(state)
        store.write_result("job-1", result)
        assert store.result("job-1") == result

    def test_a_result_is_invisible_until_it_is_written(self, store: JobStore) -> None:
        store.create(full_meta())
        store.write_supervisor("job-1", ProcessInfo(pid=1, start_ticks=1))
        store.write_progress("job-1", Progress(state=RunState.RUNNING))
        store.append_text("job-1", "The whole answer")
        assert store.result("job-1") is None
        assert store.finished_at("job-1") is None
        store.write_result("job-1", full_result())
        assert store.result("job-1") is not None

    def test_finished_at_is_when_the_result_was_written(self, store: JobStore) -> None:
        store.create(full_meta())
        before = time.time()
        store.write_result("job-1", full_result())
        after = time.time()
        finished = store.finished_at("job-1")
        assert finished is not None
        assert before - CLOCK_SLACK <= finished <= after + CLOCK_SLACK

    def test_a_stored_result_cannot_be_changed_through_an_object_read_from_it(self, store: JobStore) -> None:
        store.create(full_meta())
        store.write_result("job-1", full_result())
        read = store.result("job-1")
        assert read is not None and isinstance(read.result.structured_output, dict)
        read.result.structured_output["ok"] = False
        again = store.result("job-1")
        assert again is not None and again.result == full_result().result

    def test_a_cancel_request_is_seen_and_touches_nothing_else(self, store: JobStore) -> None:
        store.create(full_meta())
        store.request_cancel("job-1")
        store.request_cancel("job-1")
        assert store.cancel_requested("job-1") is True
        assert store.result("job-1") is None
        assert store.collected("job-1") is False

    def test_marking_a_job_collected_is_seen(self, store: JobStore) -> None:
        store.create(full_meta())
        store.mark_collected("job-1")
        assert store.collected("job-1") is True
        assert store.cancel_requested("job-1") is False

    def test_a_bound_key_names_its_job_only_while_the_job_is_kept(self, store: JobStore) -> None:
        store.create(full_meta())
        assert store.bound_job("key") is None
        store.bind_idempotency("key", "job-1", "hash")
        assert store.bound_job("key") == "job-1"
        store.delete("job-1")
        assert store.bound_job("key") is None

    def test_marking_a_job_dismissed_is_seen_and_is_not_collecting_it(self, store: JobStore) -> None:
        store.create(full_meta())
        assert store.dismissed("job-1") is False
        store.mark_dismissed("job-1")
        assert (store.dismissed("job-1"), store.collected("job-1"), store.dismissed("nope")) == (True, False, False)

    def test_forgetting_a_jobs_environment_drops_only_it_and_forgetting_again_is_harmless(
        self, store: JobStore
    ) -> None:
        meta = replace(full_meta(), env={"GEMINI_API_KEY": "secret"})
        store.create(meta)
        assert store.meta("job-1").env == {"GEMINI_API_KEY": "secret"}
        store.forget_env("job-1")
        store.forget_env("job-1")
        assert store.meta("job-1") == meta and store.meta("job-1").env is None  # env is not part of equality

    def test_a_deleted_job_is_gone_and_deleting_again_is_harmless(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        store.create(full_meta("b"))
        store.append_text("a", "text")
        store.write_result("a", full_result())
        store.delete("a")
        store.delete("a")
        store.delete("never-existed")
        assert store.job_ids() == ["b"]
        with pytest.raises(JobNotFound):
            store.meta("a")
        assert store.finished_at("a") is None

    def test_a_deleted_job_id_can_be_created_afresh(self, store: JobStore) -> None:
        store.create(full_meta())
        store.append_text("job-1", "old text")
        store.write_result("job-1", full_result())
        store.delete("job-1")
        store.create(full_meta())
        assert store.text("job-1") == ""
        assert store.result("job-1") is None


class IdempotencyContract:
    """The idempotency-key bindings of every JobStore. Needs a `store` fixture."""

    def test_the_first_binding_of_a_key_names_its_own_job(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        assert store.bind_idempotency("key", "a", "h1") == "a"

    def test_the_same_key_for_the_same_request_returns_the_existing_job(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        store.create(full_meta("b"))
        store.bind_idempotency("key", "a", "h1")
        assert store.bind_idempotency("key", "b", "h1") == "a"

    def test_the_same_key_for_a_different_request_is_a_conflict(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        store.create(full_meta("b"))
        store.bind_idempotency("key", "a", "h1")
        with pytest.raises(JobConflict, match="already bound to a different request"):
            store.bind_idempotency("key", "b", "h2")
        assert store.bind_idempotency("key", "b", "h1") == "a"  # the refused attempt changed nothing

    def test_different_keys_bind_independently(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        store.create(full_meta("b"))
        assert store.bind_idempotency("k1", "a", "h") == "a"
        assert store.bind_idempotency("k2", "b", "h") == "b"

    def test_a_binding_whose_job_is_gone_is_replaced(self, store: JobStore) -> None:
        store.create(full_meta("a"))  # its meta names no key, so deleting it leaves the binding behind
        store.bind_idempotency("key", "a", "h1")
        store.delete("a")
        store.create(full_meta("b"))
        assert store.bind_idempotency("key", "b", "h2") == "b"
        store.create(full_meta("c"))
        assert store.bind_idempotency("key", "c", "h2") == "b"

    def test_a_binding_to_a_job_that_never_existed_is_replaced(self, store: JobStore) -> None:
        store.bind_idempotency("key", "ghost", "h1")
        store.create(full_meta("real"))
        assert store.bind_idempotency("key", "real", "h2") == "real"

    def test_deleting_a_job_removes_its_own_binding(self, store: JobStore) -> None:
        store.create(full_meta("a", key="key", request_hash="h1"))
        store.bind_idempotency("key", "a", "h1")
        store.delete("a")
        store.create(full_meta("b"))
        assert store.bind_idempotency("key", "b", "h2") == "b"

    def test_deleting_a_job_leaves_a_binding_that_names_another_job(self, store: JobStore) -> None:
        store.create(full_meta("loser", key="key", request_hash="h1"))  # lost the race for the key
        store.create(full_meta("winner", key="key", request_hash="h1"))
        store.bind_idempotency("key", "winner", "h1")
        assert store.bind_idempotency("key", "loser", "h1") == "winner"
        store.delete("loser")
        store.create(full_meta("later"))
        assert store.bind_idempotency("key", "later", "h1") == "winner"
        with pytest.raises(JobConflict):
            store.bind_idempotency("key", "later", "h2")

    def test_an_unbound_key_can_be_bound_to_another_request(self, store: JobStore) -> None:
        store.create(full_meta("a"))
        store.create(full_meta("b"))
        store.bind_idempotency("key", "a", "h1")
        store.unbind_idempotency("key")
        store.unbind_idempotency("key")
        store.unbind_idempotency("never-bound")
        assert store.bind_idempotency("key", "b", "h2") == "b"

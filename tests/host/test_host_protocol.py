"""The host protocol's values: a run's progress, its spec and errors cross the socket unchanged in kind and data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import BackendUnavailable, InputError, RunFailed, RunTimedOut
from gemini_relay.jobs.engine.record import RecordChange
from gemini_relay.jobs.protocol import (
    SUN_PATH_MAX,
    decode_error,
    decode_progress,
    decode_spec,
    encode_error,
    encode_progress,
    encode_spec,
    socket_address,
)
from gemini_relay.jobs.store.job_store import JobConflict


@pytest.mark.parametrize(
    "progress",
    [RecordChange(RunState.QUEUED), RecordChange(RunState.RUNNING, "s-1", "gemini-2.5-pro", "héllo")],
    ids=["queued", "running with text"],
)
def test_a_runs_progress_survives_the_wire(progress: RecordChange) -> None:
    assert decode_progress(json.loads(json.dumps(encode_progress(progress)))) == progress


def test_a_spec_survives_the_wire(tmp_path: Path) -> None:
    spec = RunSpec(tool="gemini-ask", prompt="p", cwd=tmp_path, model="pro", add_dirs=(tmp_path,),
                   explicit=frozenset({"model"}), timeout_seconds=12.5)  # fmt: skip
    assert decode_spec(json.loads(json.dumps(encode_spec(spec)))) == spec


@pytest.mark.parametrize(
    "error",
    [JobConflict("busy"), InputError("bad", field="cwd"), BackendUnavailable("gone"), RunFailed("broke")],
    ids=lambda e: type(e).__name__,
)
def test_an_error_keeps_its_kind_and_field(error: Exception) -> None:
    assert isinstance(error, (InputError, BackendUnavailable, RunFailed))
    back = decode_error(json.loads(json.dumps(encode_error(error))))
    assert type(back) is type(error) and str(back) == str(error)
    assert getattr(back, "field", None) == getattr(error, "field", None)


def test_a_timed_out_result_is_raised_again_as_a_timeout() -> None:
    result = RunResult.from_error(RunTimedOut("gemini", 30, partial_text="so far"))
    with pytest.raises(RunTimedOut) as raised:
        RunResult.from_json(json.loads(json.dumps(result.to_json()))).raise_for_failure()
    assert raised.value.partial_text == "so far" and "timed out after 30s" in raised.value.message


def test_a_socket_path_past_the_af_unix_limit_is_reached_through_its_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * SUN_PATH_MAX)
    deep.mkdir()
    with socket_address(deep / "host.sock") as address:
        assert len(address) < SUN_PATH_MAX and address.endswith("/host.sock")
        assert Path(address).parent.resolve() == deep.resolve()
    with socket_address(tmp_path / "s.sock") as address:
        assert address == str(tmp_path / "s.sock") or len(str(tmp_path)) >= SUN_PATH_MAX

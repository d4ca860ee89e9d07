"""AgyBackend.run through the real RunEngine against the fake agy (tests/fakes/fake_agy.py): real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from gemini_relay.backends.agy.backend import AgyBackend
from gemini_relay.backends.agy.errors import PRINT_TIMEOUT_NOTICE
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason
from gemini_relay.errors import BackendUnavailable, ConfigError, RelayError, RunFailed, RunTimedOut
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.supervise.groups import group_members
from tests.backends.agy.conftest import FAKE_AGY, AgyWorld

pytestmark = pytest.mark.anyio
WAIT = 20.0  # generous bound on every run: each spawns a Python fake two or three times


def spec_for(world: AgyWorld, prompt: str, **fields: object) -> RunSpec:
    return replace(RunSpec(tool="gemini-ask", prompt=prompt, cwd=world.project), **fields)  # type: ignore[arg-type]


async def execute(backend: AgyBackend, spec: RunSpec) -> tuple[RunResult, RunRecord]:
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=3)
    record = engine.new_record(spec, BackendName("agy"))
    with anyio.fail_after(WAIT):
        return await engine.execute(record), record


async def fail(backend: AgyBackend, spec: RunSpec) -> tuple[RunFailed, RunRecord]:
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=3)
    record = engine.new_record(spec, BackendName("agy"))
    with anyio.fail_after(WAIT), pytest.raises(RunFailed) as caught:
        await engine.execute(record)
    return caught.value, record


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


async def test_a_run_answers_names_its_conversation_and_a_continuation_counts_turns(world: AgyWorld) -> None:
    backend = world.backend()
    first, _ = await execute(backend, spec_for(world, "hello"))
    assert first.text == "Hello from fake agy! You said: hello"
    assert first.status == "SUCCESS" and first.num_turns == 1 and first.notices == ()
    assert first.usage is not None and first.usage.thinking_tokens == 3 and first.usage.cached_tokens == 7
    cid = first.conversation_id
    assert cid is not None
    store = json.loads((world.state_dir / "cache" / "last_conversations.json").read_text(encoding="utf-8"))
    assert store == {str(world.project.resolve()): cid}
    second, _ = await execute(backend, spec_for(world, "again", conversation_id=cid))
    assert (second.conversation_id, second.num_turns) == (cid, 2)
    argv = world.runs()[-1]["argv"]
    assert argv[argv.index("--conversation") + 1] == cid


async def test_no_prompt_bytes_reach_argv_when_stream_json_input_is_supported(world: AgyWorld) -> None:
    await execute(world.backend(), spec_for(world, "a secret-ish prompt ✓"))
    start = world.runs()[-1]
    assert not any("secret-ish" in arg for arg in start["argv"])
    assert start["argv"][start["argv"].index("--input-format") + 1] == "stream-json"
    stdin = [e["data"] for e in world.log() if e["event"] == "stdin"]
    assert json.loads(stdin[0])["message"]["content"] == "a secret-ish prompt ✓"


async def test_an_older_agy_gets_dash_p_with_stdin_closed(world: AgyWorld) -> None:
    world.install(help="old")
    outcome, _ = await execute(world.backend(), spec_for(world, "plain"))
    assert outcome.text == "Hello from fake agy! You said: plain"
    argv = world.runs()[-1]["argv"]
    assert argv[-2:] == ["-p", "plain"] and "--input-format" not in argv
    assert [e["data"] for e in world.log() if e["event"] == "stdin"] == [""]  # /dev/null: EOF at once


async def test_the_fake_blocks_on_an_open_stdin_pipe_like_agy(world: AgyWorld) -> None:
    env = {"HOME": str(world.home), "PATH": "/usr/bin:/bin"}
    process = await anyio.open_process(
        [sys.executable, str(FAKE_AGY), "--output-format", "stream-json", "-p", "hi"],
        stdin=subprocess.PIPE,
        env=env,
        cwd=world.project,
    )
    async with process:
        with anyio.move_on_after(1.0):
            await process.wait()
        assert process.returncode is None  # still blocked reading stdin
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.fail_after(WAIT):
            assert await process.wait() == 0


async def test_an_unknown_conversation_id_starts_a_new_one_with_a_notice(world: AgyWorld) -> None:
    outcome, _ = await execute(world.backend(), spec_for(world, "x", conversation_id="not-a-real-conversation"))
    assert outcome.conversation_id != "not-a-real-conversation"
    assert any("did not continue conversation not-a-real-conversation" in n for n in outcome.notices)


async def test_quota_is_classified_with_reset_text_retryable_and_error_id(world: AgyWorld) -> None:
    error, record = await fail(world.backend(), spec_for(world, "go [[agy:quota]]"))
    assert error.reason is FailureReason.QUOTA_EXHAUSTED
    assert "Resets in 3h46m46s" in error.message
    assert error.retryable is True and error.error_id is not None and error.error_id.endswith("-1")
    assert error.recovery is not None and str(record.session_id) in error.recovery


async def test_a_region_failure_is_redacted(world: AgyWorld) -> None:
    error, _ = await fail(world.backend(), spec_for(world, "go [[agy:model_not_found]]"))
    assert "gemini-3.1-pro-preview" in error.message and error.retryable is False
    assert "my-gcp-proj-4711" not in error.message and "europe-west4" not in error.message


async def test_a_background_abort_turns_success_into_a_failure_with_the_narration_attached(world: AgyWorld) -> None:
    error, _ = await fail(world.backend(), spec_for(world, "check [[agy:background_abort]]"))
    assert error.reason is FailureReason.BACKGROUND_ABORTED
    assert "in the background" in error.partial_text and "foreground" in error.message


async def test_a_print_timeout_returns_the_partial_text_marked_partial(world: AgyWorld) -> None:
    outcome, record = await execute(world.backend(), spec_for(world, "long [[agy:print_timeout]]"))
    assert outcome.text == "Partial analysis: the first two modules look"
    assert PRINT_TIMEOUT_NOTICE in outcome.notices and record.partial


async def test_agys_print_timeout_really_cuts_a_slow_turn(world: AgyWorld) -> None:
    outcome, record = await execute(world.backend(), spec_for(world, "slow [[agy:slow:30]]", timeout_seconds=3.0))
    assert PRINT_TIMEOUT_NOTICE in outcome.notices and record.partial
    argv = world.runs()[-1]["argv"]
    assert argv[argv.index("--print-timeout") + 1] == "1s"


async def test_an_invalid_model_reaches_the_caller_verbatim(world: AgyWorld) -> None:
    error, _ = await fail(world.backend(), spec_for(world, "x", model="gemini-9"))
    assert 'invalid model selection "gemini-9"' in error.message
    assert "Available models: gemini-3.8-flash-high, gemini-3.8-flash-medium" in error.message


async def test_model_and_effort_resolve_to_one_pair_from_the_live_catalog(world: AgyWorld) -> None:
    outcome, _ = await execute(world.backend(), spec_for(world, "x", model="gemini-3.8-flash-high", effort="low"))
    argv = world.runs()[-1]["argv"]
    assert argv[argv.index("--model") + 1] == "gemini-3.8-flash-low" and "--effort" not in argv
    assert outcome.model == "gemini-3.8-flash-low"


async def test_a_timeout_leaves_no_process_behind(world: AgyWorld) -> None:
    backend = world.backend()
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=3)
    record = engine.new_record(spec_for(world, "wait [[agy:hang]]", timeout_seconds=2.0), BackendName("agy"))
    with anyio.fail_after(WAIT), pytest.raises(RunTimedOut) as caught:
        await engine.execute(record)
    assert caught.value.reason is FailureReason.TIMEOUT and "Thinking about it" in caught.value.partial_text
    assert record.pid is not None and group_members(record.pid) == []


async def test_a_child_ignoring_sigterm_and_its_grandchild_are_killed_after_the_grace(world: AgyWorld) -> None:
    backend = world.backend(GEMINI_RELAY_KILL_GRACE="0.3")
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=3)
    prompt = "wait [[agy:ignore_sigterm_with_grandchild]]"
    record = engine.new_record(spec_for(world, prompt, timeout_seconds=2.0), BackendName("agy"))
    with anyio.fail_after(WAIT), pytest.raises(RunTimedOut):
        await engine.execute(record)
    assert record.pid is not None and group_members(record.pid) == []
    grandchildren = [e["pid"] for e in world.log() if e["event"] == "grandchild"]
    assert len(grandchildren) == 1 and not alive(grandchildren[0])


async def test_runs_are_serialized_one_at_a_time(world: AgyWorld) -> None:
    backend = world.backend()
    assert backend.max_concurrent == 1
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=3)
    records = [engine.new_record(spec_for(world, f"r{i} [[agy:slow:0.3]]"), BackendName("agy")) for i in range(2)]
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for record in records:
                tg.start_soon(engine.execute, record)
    first, second = sorted(records, key=lambda r: r.started_at or 0)
    assert first.ended_at is not None and second.started_at is not None and first.ended_at <= second.started_at


async def test_a_huge_answer_and_a_non_ascii_answer_arrive_intact(world: AgyWorld) -> None:
    backend = world.backend()
    big, record = await execute(backend, spec_for(world, "[[agy:big:2048]]"))
    assert len(big.text) >= 2048 * 1024 and big.text.endswith("lazy dog")
    assert record.streamed_text.rstrip("\n") == big.text
    uni, _ = await execute(backend, spec_for(world, "[[agy:unicode]]"))
    assert "👩‍💻 你好世界" in uni.text and "\ufffd" not in uni.text


async def test_a_schema_run_returns_structured_output_and_fails_closed_without_it(world: AgyWorld) -> None:
    backend = world.backend()
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    outcome, _ = await execute(backend, spec_for(world, "x", json_schema=schema))
    assert outcome.has_structured_output and outcome.structured_output == {"answer": "fake", "prompt_chars": 1}
    error, _ = await fail(backend, spec_for(world, "x [[agy:schema_missing]]", json_schema=schema))
    assert "without structured_output" in error.message


async def test_an_error_result_and_denied_actions_are_reported(world: AgyWorld) -> None:
    backend = world.backend()
    error, _ = await fail(backend, spec_for(world, "x [[agy:error_result]]"))
    assert error.message == "agy reported an error: model unavailable"
    outcome, _ = await execute(backend, spec_for(world, "x [[agy:denied]]"))
    assert any("agy denied 1 action(s): run_command" in n for n in outcome.notices)


async def test_a_non_zero_exit_after_output_fails_with_the_exit_code(world: AgyWorld) -> None:
    error, _ = await fail(world.backend(), spec_for(world, "x [[agy:exit:7]]"))
    assert "exit 7" in error.message


async def test_sandbox_skip_permissions_and_dirs_reach_argv(world: AgyWorld, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    spec = spec_for(world, "x", sandbox=True, skip_permissions=True, add_dirs=(extra,), mode="plan")
    outcome, _ = await execute(world.backend(), spec)
    argv = world.runs()[-1]["argv"]
    assert argv[0] == "--dangerously-skip-permissions" and "--sandbox" in argv
    assert argv.count("--add-dir") == 2 and str(extra) in argv and "--disable-slash-commands" in argv
    assert any("does not isolate" in n for n in outcome.notices)


@pytest.mark.parametrize(
    ("env", "project_rules", "workspace"),
    [({}, None, True), ({}, False, False), ({"AGY_PROJECT_RULES": "off"}, None, False),
     ({"AGY_PROJECT_RULES": "off"}, True, True)],
)  # fmt: skip
async def test_project_rules_send_the_cwd_as_add_dir_unless_the_call_or_agy_project_rules_opts_out(
    world: AgyWorld, env: dict[str, str], project_rules: bool | None, workspace: bool
) -> None:
    await execute(world.backend(**env), spec_for(world, "x", project_rules=project_rules))
    argv = world.runs()[-1]["argv"]
    assert (str(world.project) in argv) is workspace
    assert argv.count("--add-dir") == int(workspace)


async def test_with_project_rules_off_a_dir_given_as_is_still_goes_even_when_it_is_the_cwd(world: AgyWorld) -> None:
    await execute(world.backend(), spec_for(world, "x", project_rules=False, add_dirs=(world.project,)))
    argv = world.runs()[-1]["argv"]
    assert argv[argv.index("--add-dir") + 1] == str(world.project) and argv.count("--add-dir") == 1


async def test_a_broken_help_falls_back_to_the_floor_flags_with_a_notice(world: AgyWorld) -> None:
    world.install(help="broken")
    outcome, _ = await execute(world.backend(), spec_for(world, "x"))
    assert outcome.text == "Hello from fake agy! You said: x"
    assert any("--help` could not be read" in n for n in outcome.notices)
    assert world.runs()[-1]["argv"][-2] == "-p"


async def test_a_too_old_agy_is_refused_with_version_and_path(world: AgyWorld) -> None:
    world.install(version="1.1.14")
    engine = RunEngine({BackendName("agy"): world.backend()}, max_concurrent=3)
    record = engine.new_record(spec_for(world, "x"), BackendName("agy"))
    with anyio.fail_after(WAIT), pytest.raises(BackendUnavailable) as caught:
        await engine.execute(record)
    assert "found 1.1.14 at" in str(caught.value) and str(world.agy) in str(caught.value)


async def test_a_tolerant_version_text_passes_the_gate_once(world: AgyWorld) -> None:
    world.install(version_text="agy version 1.2.9\n  A new version 1.3.1 is available\n")
    backend = world.backend()
    await execute(backend, spec_for(world, "a"))
    await execute(backend, spec_for(world, "b"))
    assert sum(1 for e in world.log() if e["event"] == "start" and e["argv"] == ["--version"]) == 1


async def test_a_missing_agy_is_actionable_and_one_installed_later_is_picked_up(world: AgyWorld) -> None:
    world.agy.unlink()
    backend = AgyBackend(world.settings(AGY_CLI_PATH=""))
    with pytest.raises(BackendUnavailable, match="agy \\(the Antigravity CLI\\) was not found on PATH"):
        await execute(backend, spec_for(world, "x"))
    world.install()
    outcome, _ = await execute(backend, spec_for(world, "x"))
    assert outcome.text.startswith("Hello from fake agy!")


def test_an_explicit_agy_cli_path_that_is_missing_or_not_executable_fails_fast(world: AgyWorld) -> None:
    with pytest.raises(ConfigError, match="missing or not executable"):
        world.backend(AGY_CLI_PATH=str(world.base / "nope")).validate_config()
    world.agy.chmod(0o644)
    with pytest.raises(ConfigError):
        world.backend().validate_config()


def test_a_malformed_agy_print_timeout_fails_fast(world: AgyWorld) -> None:
    with pytest.raises(ConfigError, match="AGY_PRINT_TIMEOUT"):
        world.backend(AGY_PRINT_TIMEOUT="forever").validate_config()
    world.backend(AGY_PRINT_TIMEOUT="30m").validate_config()


async def test_agy_print_timeout_overrides_the_derived_value(world: AgyWorld) -> None:
    await execute(world.backend(AGY_PRINT_TIMEOUT="30m"), spec_for(world, "x"))
    argv = world.runs()[-1]["argv"]
    assert argv[argv.index("--print-timeout") + 1] == "30m0s"


async def test_the_default_model_comes_from_agy_default_model(world: AgyWorld) -> None:
    outcome, _ = await execute(world.backend(AGY_DEFAULT_MODEL="pro"), spec_for(world, "x"))
    argv = world.runs()[-1]["argv"]
    assert argv[argv.index("--model") + 1] == "gemini-3.1-pro-high" and outcome.model == "gemini-3.1-pro-high"


def test_the_child_env_keeps_auth_and_drops_the_relays_own_settings(world: AgyWorld) -> None:
    env = world.backend(USE_ADC="1", GEMINI_MCP_BACKEND="agy", HTTPS_PROXY="http://proxy:3128").env()
    assert env["USE_ADC"] == "1" and env["HTTPS_PROXY"] == "http://proxy:3128" and env["HOME"] == str(world.home)
    assert "GEMINI_MCP_BACKEND" not in env and "AGY_CLI_PATH" not in env


async def test_malformed_stdout_lines_are_skipped_counted_and_noticed(world: AgyWorld) -> None:
    outcome, _ = await execute(world.backend(), spec_for(world, "x [[agy:garbage]]"))
    assert outcome.text.startswith("Hello from fake agy!")
    assert "gemini-relay skipped 3 unreadable line(s) in agy's stream-json output." in outcome.notices


async def test_the_invalid_model_scenario_refuses_before_any_conversation(world: AgyWorld) -> None:
    error, record = await fail(world.backend(), spec_for(world, "x [[agy:invalid_model]]"))
    assert "is not recognized as a known model. Available models: gemini-3.8-flash-high" in error.message
    assert record.session_id is None and error.recovery == "Pick a model id from gemini-models."


@pytest.mark.parametrize(
    ("marker", "reason", "words"),
    [
        ("exit:1", FailureReason.BACKEND_ERROR, "agy failed (exit 1)"),
        ("exit:124", FailureReason.TIMEOUT, "exit 124"),
        ("exit:127", FailureReason.SPAWN_FAILED, "agy exited 127"),
        ("exit:143", None, "SIGTERM (exit 143)"),
        ("exit:130", None, "SIGINT (exit 130)"),
        ("signal:9", FailureReason.BACKEND_ERROR, "killed by SIGKILL"),
        ("signal:11", FailureReason.BACKEND_ERROR, "killed by SIGSEGV"),
    ],
)
async def test_exit_codes_and_signal_deaths_map_as_the_table_says(
    world: AgyWorld, marker: str, reason: FailureReason | None, words: str
) -> None:
    error, record = await fail(world.backend(), spec_for(world, f"x [[agy:{marker}]]"))
    assert error.reason is reason and words in error.message
    assert record.state.value == ("cancelled" if reason is None else "failed")


async def test_an_empty_success_after_a_print_timeout_names_agys_reason_and_the_fix(world: AgyWorld) -> None:
    error, _ = await fail(world.backend(), spec_for(world, "long [[agy:print_timeout:empty]]"))
    assert error.message.startswith("agy reported SUCCESS without any answer text: agy's --print-timeout expired")
    assert "AGY_PRINT_TIMEOUT" in error.message and error.reason is FailureReason.TIMEOUT


async def test_an_empty_success_after_denied_actions_names_them_and_the_option_that_allows_them(
    world: AgyWorld,
) -> None:
    error, _ = await fail(world.backend(), spec_for(world, "x [[agy:denied]] [[agy:empty]]"))
    assert "agy was refused the action(s) the task needed (run_command)" in error.message, error.message
    assert "skipPermissions" in error.message


async def test_a_model_agy_fell_back_from_is_named_with_the_model_that_ran(world: AgyWorld) -> None:
    outcome, _ = await execute(
        world.backend(), spec_for(world, "x [[agy:model_fallback]]", model="gemini-3.1-pro-high")
    )
    assert any("agy ran gemini-3-flash, not the requested gemini-3.1-pro-high" in n for n in outcome.notices), (
        outcome.notices
    )
    assert outcome.model == "gemini-3-flash"


async def test_a_model_that_ran_as_requested_adds_no_notice(world: AgyWorld) -> None:
    outcome, _ = await execute(world.backend(), spec_for(world, "x", model="gemini-3.1-pro-high"))
    assert not any("fell back" in n for n in outcome.notices), outcome.notices


async def test_a_signed_out_agy_fails_runs_with_the_way_to_sign_in(world: AgyWorld) -> None:
    world.install(scenario="signed_out")
    error, _ = await fail(world.backend(), spec_for(world, "hi"))
    assert "you are not signed in" in error.message
    assert error.recovery is not None and error.recovery.startswith("agy is not signed in: run `agy` once")


async def test_a_signed_out_agy_is_not_ready_in_the_doctor_and_it_says_how_to_sign_in(world: AgyWorld) -> None:
    world.install(scenario="signed_out")
    section = await world.backend().doctor_section()
    assert section.problems and "run `agy` once in a terminal" in section.problems[0], section.problems


@pytest.mark.parametrize(
    ("status", "fix"),
    [
        ("PERMISSION_DENIED", "The credentials may not do this"),
        ("UNAUTHENTICATED", "agy is not signed in: run `agy` once"),
        ("INVALID_ARGUMENT", "The API refused part of the request"),
        ("UNAVAILABLE", "The model is overloaded or down for now"),
        ("INTERNAL", "The API failed on its side: retry"),
        ("DEADLINE_EXCEEDED", "The API gave up before it answered"),
    ],
)
async def test_each_api_error_class_agy_reports_comes_with_its_fix(world: AgyWorld, status: str, fix: str) -> None:
    error, _ = await fail(world.backend(), spec_for(world, f"x [[agy:api_error:{status}]]"))
    assert f"[{status} (code " in error.message
    assert error.recovery is not None and fix in error.recovery, error.recovery


async def test_a_failed_version_check_is_not_cached_so_an_upgrade_is_picked_up_without_a_restart(
    world: AgyWorld,
) -> None:
    backend = world.backend()
    world.install(version="1.1.7")
    with pytest.raises(RelayError, match="1.1.7"):
        await backend.version()
    world.install()  # upgraded in place: the same server, the same path
    assert str(await backend.version()) == "1.2.16"
    assert sum(e["argv"] == ["--version"] for e in world.log() if e["event"] == "start") == 2

"""build_invocation: the argv sent to the Gemini CLI, driven by the real 0.61.0 `--help` text."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from gemini_relay.backends.gemini_cli.args import (
    ASSUMED_FLAGS,
    Invocation,
    advertised_flags,
    build_invocation,
    resolve_model,
    with_schema_instruction,
)
from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.backends.probe import ProbeResult, parse_flags
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import InputError

HELP = Path(__file__).resolve().parents[2] / "data" / "streams" / "gemini-cli-0.61.0-help.txt"
FLAGS = parse_flags(HELP.read_text(encoding="utf-8"))
BINARY = "/opt/gemini/bin/gemini"
PROMPT = "explain @src/app.py --and do not treat this as a flag"
SPEC = RunSpec(tool="gemini-ask", prompt=PROMPT, cwd=Path("/work/proj"))


def build(spec: RunSpec = SPEC, flags: frozenset[str] | None = FLAGS, default_model: str | None = None) -> Invocation:
    return build_invocation(BINARY, spec, flags, default_model=default_model)


def option(argv: list[str], name: str) -> list[str]:
    """Every value passed after `name`."""
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == name]


# --- baseline -------------------------------------------------------------------------------------------------


def test_the_real_help_text_advertises_the_flags_the_builder_uses() -> None:
    for flag in ("--model", "--approval-mode", "--yolo", "--include-directories", "--resume", "--session-id"):
        assert flag in FLAGS
    assert "--sandbox" in FLAGS
    assert "--output-format" in FLAGS


def test_a_plain_run_asks_for_stream_json_and_lets_the_cli_name_its_session() -> None:
    inv = build()  # --session-id costs the CLI ~250 ms: the id arrives in the stream's init event instead
    assert inv.argv == [BINARY, "--output-format", "stream-json"]
    assert inv.session_id is None
    assert inv.notices == []


def test_a_run_that_needs_its_id_up_front_names_the_session_it_was_given() -> None:
    sid = str(uuid.uuid4())
    inv = build(replace(SPEC, session_id=sid))
    assert inv.session_id == sid
    assert inv.argv == [BINARY, "--output-format", "stream-json", "--session-id", sid]


def test_the_prompt_goes_on_stdin_and_never_into_argv() -> None:
    spec = replace(SPEC, model="pro", mode="plan", add_dirs=(Path("/abs/lib"),), json_schema={"type": "object"})
    inv = build(spec)
    assert PROMPT not in inv.argv
    assert not any(PROMPT in arg for arg in inv.argv)
    assert "-p" not in inv.argv
    assert "--prompt" not in inv.argv
    assert inv.stdin.startswith(PROMPT.replace("@", "\\@"))  # the CLI's own escape keeps it from reading files


def test_without_a_successful_probe_no_optional_flag_is_sent() -> None:
    spec = replace(SPEC, model="gemini-2.5-pro", mode="plan", add_dirs=(Path("/x"),), sandbox=True)
    inv = build(spec, flags=None)
    assert inv.argv == [BINARY, "--output-format", "stream-json"]
    assert inv.session_id is None
    assert inv.notices == [
        "model gemini-2.5-pro is not supported by the installed Gemini CLI; it was ignored.",
        "mode plan is not supported by the installed Gemini CLI; it was ignored.",
        "addDirs /x is not supported by the installed Gemini CLI; it was ignored.",
        "sandbox true is not supported by the installed Gemini CLI; it was ignored.",
    ]


# --- model ----------------------------------------------------------------------------------------------------


def test_a_help_probe_that_timed_out_is_not_taken_for_a_cli_without_flags() -> None:
    # A loaded machine: `gemini --help` past its bound said nothing of the flags; the run keeps its model and mode.
    late = advertised_flags(ProbeResult(ok=False, text="gemini --help did not answer within 15s", timed_out=True))
    assert late == ASSUMED_FLAGS
    assert late <= FLAGS  # every assumed flag is one the real CLI advertises
    inv = build(replace(SPEC, model="gemini-2.5-pro", mode="plan"), flags=late)
    assert option(inv.argv, "-m") == ["gemini-2.5-pro"]
    assert option(inv.argv, "--approval-mode") == ["plan"]
    assert inv.notices == []
    assert advertised_flags(ProbeResult(ok=False, text="exit 1", returncode=1)) is None  # a failed probe: none


def test_a_model_id_is_passed_with_m() -> None:
    assert option(build(replace(SPEC, model="gemini-2.5-pro")).argv, "-m") == ["gemini-2.5-pro"]


@pytest.mark.parametrize(("alias", "model"), sorted(GEMINI_ALIASES.items()))
def test_aliases_become_gemini_cli_model_ids(alias: str, model: str) -> None:
    assert option(build(replace(SPEC, model=alias)).argv, "-m") == [model]
    assert resolve_model(alias.upper(), None) == model


def test_the_alias_table_maps_pro_flash_and_flash_lite() -> None:
    assert GEMINI_ALIASES == {
        "pro": "gemini-3.1-pro-preview",
        "flash": "gemini-3.8-flash",
        "flash-lite": "gemini-3.5-flash-lite",
    }


def test_the_default_model_applies_when_the_caller_names_none() -> None:
    assert option(build(default_model="flash").argv, "-m") == ["gemini-3.8-flash"]
    assert option(build(replace(SPEC, model="gemini-2.5-pro"), default_model="flash").argv, "-m") == ["gemini-2.5-pro"]


@pytest.mark.parametrize("model", ["auto", "AUTO", " auto ", "", "   "])
def test_auto_or_no_model_lets_the_cli_route(model: str) -> None:
    inv = build(replace(SPEC, model=model))
    assert "-m" not in inv.argv
    assert inv.notices == []


def test_auto_overrides_a_configured_default() -> None:
    assert "-m" not in build(replace(SPEC, model="auto"), default_model="gemini-2.5-pro").argv


def test_a_pasted_models_table_row_is_reduced_to_its_id() -> None:
    assert resolve_model("gemini-2.5-pro\tGemini 2.5 Pro (stable)", None) == "gemini-2.5-pro"
    assert resolve_model("  flash \tFast model", None) == "gemini-3.8-flash"
    assert resolve_model("auto\tLet the CLI choose", None) is None


def test_an_unknown_model_id_is_passed_through_verbatim() -> None:
    assert resolve_model("gemini-9-experimental", None) == "gemini-9-experimental"


@pytest.mark.parametrize("model", ["--yolo", "-y", "--approval-mode=yolo"])
def test_a_model_that_looks_like_a_flag_is_refused_so_it_cannot_inject_options(model: str) -> None:
    with pytest.raises(InputError, match="is not a model id"):
        build(replace(SPEC, model=model))


def test_a_cli_without_model_flag_gets_a_notice_instead() -> None:
    inv = build(replace(SPEC, model="pro"), flags=FLAGS - {"--model"})
    assert "-m" not in inv.argv
    assert inv.notices == ["model gemini-3.1-pro-preview is not supported by the installed Gemini CLI; it was ignored."]


# --- approval modes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "skip", "expected"),
    [
        ("plan", False, "plan"),
        ("accept-edits", False, "auto_edit"),
        (None, True, "yolo"),
        ("accept-edits", True, "yolo"),
    ],
)
def test_modes_map_to_approval_modes(mode: str | None, skip: bool, expected: str) -> None:
    inv = build(replace(SPEC, mode=mode, skip_permissions=skip))
    assert option(inv.argv, "--approval-mode") == [expected]
    assert "--yolo" not in inv.argv
    assert inv.notices == []


def test_no_mode_sends_no_approval_flag() -> None:
    inv = build()
    assert "--approval-mode" not in inv.argv
    assert "--yolo" not in inv.argv


def test_skip_permissions_never_lifts_plan_mode() -> None:
    inv = build(replace(SPEC, mode="plan", skip_permissions=True))
    assert option(inv.argv, "--approval-mode") == ["plan"]
    assert inv.notices == ["skipPermissions was ignored: plan mode is read-only."]


def test_skip_permissions_falls_back_to_yolo_flag_without_approval_mode() -> None:
    inv = build(replace(SPEC, skip_permissions=True), flags=FLAGS - {"--approval-mode"})
    assert "--yolo" in inv.argv
    assert "--approval-mode" not in inv.argv
    assert inv.notices == []


def test_an_unsupported_mode_is_a_notice_naming_what_the_caller_asked_for() -> None:
    flags = FLAGS - {"--approval-mode", "--yolo"}
    assert build(replace(SPEC, mode="accept-edits"), flags=flags).notices == [
        "mode accept-edits is not supported by the installed Gemini CLI; it was ignored."
    ]
    assert build(replace(SPEC, skip_permissions=True), flags=flags).notices == [
        "skipPermissions is not supported by the installed Gemini CLI; it was ignored."
    ]
    assert build(replace(SPEC, mode="accept-edits", skip_permissions=True), flags=flags).notices == [
        "skipPermissions is not supported by the installed Gemini CLI; it was ignored."
    ]


def test_plan_mode_without_approval_mode_is_not_downgraded_to_yolo() -> None:
    inv = build(replace(SPEC, mode="plan"), flags=FLAGS - {"--approval-mode"})
    assert "--yolo" not in inv.argv
    assert inv.notices == ["mode plan is not supported by the installed Gemini CLI; it was ignored."]


# --- sessions -------------------------------------------------------------------------------------------------


def test_a_conversation_id_resumes_that_session_instead_of_naming_a_new_one() -> None:
    sid = "aaecb6d9-2899-4567-b93c-7386039cb1ef"
    inv = build(replace(SPEC, conversation_id=sid))
    assert option(inv.argv, "--resume") == [sid]
    assert "--session-id" not in inv.argv
    assert inv.session_id == sid


@pytest.mark.parametrize("bad", ["latest; rm -rf /", "a b", "", "x" * 129, "../etc", "id\n", "ünïcode", "-abc", "_abc"])
def test_a_conversation_id_that_is_not_a_plain_token_is_refused(bad: str) -> None:
    with pytest.raises(InputError, match="conversationId must be letters, digits"):
        build(replace(SPEC, conversation_id=bad))


@pytest.mark.parametrize("flag", ["--yolo", "--list-sessions", "-y", "--delete-session"])
def test_a_conversation_id_that_looks_like_a_flag_is_refused_so_it_cannot_inject_options(flag: str) -> None:
    with pytest.raises(InputError, match="starting with a letter or digit"):
        build(replace(SPEC, conversation_id=flag))


def test_resuming_needs_a_cli_that_can_resume() -> None:
    with pytest.raises(InputError, match="cannot resume conversations"):
        build(replace(SPEC, conversation_id="abc"), flags=FLAGS - {"--resume"})


def test_a_cli_without_session_id_starts_an_unnamed_session() -> None:
    inv = build(replace(SPEC, session_id=str(uuid.uuid4())), flags=FLAGS - {"--session-id"})
    assert inv.session_id is None
    assert "--session-id" not in inv.argv


# --- directories, sandbox, schema, notices --------------------------------------------------------------------


def test_each_extra_directory_is_included_with_its_own_flag() -> None:
    inv = build(replace(SPEC, add_dirs=(Path("/abs/one"), Path("/abs/two"))))
    assert option(inv.argv, "--include-directories") == ["/abs/one", "/abs/two"]


def test_sandbox_is_forwarded_when_advertised() -> None:
    assert "--sandbox" in build(replace(SPEC, sandbox=True)).argv
    assert "--sandbox" not in build().argv


def test_effort_set_on_purpose_is_a_notice_and_sends_no_flag() -> None:
    inv = build(replace(SPEC, effort="high", explicit=frozenset({"effort"})))
    assert inv.notices == ["effort high has no Gemini CLI equivalent; the model's default reasoning was used."]
    assert not any("effort" in arg or arg == "high" for arg in inv.argv)


def test_a_default_effort_the_caller_did_not_choose_is_silent() -> None:
    assert build(replace(SPEC, effort="high")).notices == []


def test_an_agent_is_a_notice_because_only_agy_has_agents() -> None:
    inv = build(replace(SPEC, agent="reviewer"))
    assert inv.notices == ["agent reviewer is an agy feature; the Gemini CLI ran without it."]
    assert "reviewer" not in inv.argv


def test_a_json_schema_becomes_an_instruction_on_stdin_and_a_notice() -> None:
    schema: dict[str, object] = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    inv = build(replace(SPEC, prompt="explain app.py", json_schema=schema))
    assert inv.stdin == with_schema_instruction("explain app.py", schema)
    assert inv.stdin.startswith("explain app.py\n\n")
    assert inv.stdin.endswith(json.dumps(schema))
    assert inv.notices == [
        "jsonSchema: the Gemini CLI has no schema flag; the schema was given to the model as an instruction."
    ]


def test_the_schema_instruction_keeps_non_ascii_readable() -> None:
    assert with_schema_instruction("p", {"description": "café"}).endswith('{"description": "café"}')


def test_notices_come_in_option_order() -> None:
    spec = replace(
        SPEC,
        model="pro",
        effort="low",
        explicit=frozenset({"effort"}),
        mode="accept-edits",
        add_dirs=(Path("/d"),),
        agent="a",
        sandbox=True,
        json_schema={},
    )
    notices = build(spec, flags=frozenset({"--output-format"})).notices
    assert [n.split()[0] for n in notices] == ["model", "effort", "mode", "addDirs", "agent", "sandbox", "jsonSchema:"]

"""agy argv and stdin: help-gated flags, prompt delivery, print-timeout, model + effort, notices (agy.md §1)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gemini_relay.backends.agy.args import (
    FLOOR_CAPABILITIES,
    Capabilities,
    Invocation,
    build_invocation,
    go_duration,
    parse_go_duration,
    parse_help,
    print_timeout_arg,
    reduce_model,
    resolve_model,
    stream_json_user_line,
)
from gemini_relay.backends.agy.catalogs import FALLBACK_MODELS
from gemini_relay.backends.model_names import ModelInfo
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import ConfigError, InputError
from tests.fakes.fake_agy import HELP_LEVELS, MODELS, help_text

CATALOG = tuple(ModelInfo(i, label) for i, label in MODELS)
FULL = parse_help(help_text(HELP_LEVELS["full"]))
OLD = parse_help(help_text(HELP_LEVELS["old"]))
MINIMAL = parse_help(help_text(HELP_LEVELS["minimal"]))


@pytest.fixture
def spec(tmp_path: Path) -> RunSpec:
    return RunSpec(tool="gemini-ask", prompt="explain this", cwd=tmp_path, timeout_seconds=45 * 60.0)


def build(
    spec: RunSpec, caps: Capabilities = FULL, *, default_model: str | None = None, override: str | None = None
) -> Invocation:
    return build_invocation(
        "/bin/agy", spec, caps, default_model=default_model, print_timeout_override=override, catalog=CATALOG
    )


# --- capability detection ----------------------------------------------------------------------------------------


def test_help_parsing_finds_every_listed_flag_and_stream_json_input() -> None:
    assert {"--output-format", "--model", "--effort", "--add-dir", "--conversation", "--json-schema"} <= FULL.flags
    assert FULL.stream_json_input and FULL.probed


def test_an_agy_without_input_format_has_no_stream_json_input() -> None:
    assert not OLD.stream_json_input
    assert "--output-format" in OLD.flags  # its help still mentions stream-json, for the output format


def test_go_style_single_dash_help_counts_too() -> None:
    caps = parse_help("Usage of agy:\n  -model string\n\tmodel id\n  -input-format string\n\ttext | stream-json\n")
    assert {"--model", "--input-format"} <= caps.flags and caps.stream_json_input


def test_words_with_inner_dashes_in_prose_are_not_flags() -> None:
    assert parse_help("Output format: text | stream-json; non-interactive use").flags == frozenset()


# --- prompt delivery and fixed flags -----------------------------------------------------------------------------


def test_with_stream_json_input_the_prompt_goes_on_stdin_and_never_into_argv(spec: RunSpec, tmp_path: Path) -> None:
    inv = build(spec)
    assert inv.argv == [
        "/bin/agy",
        "--print-timeout",
        "44m0s",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--disable-slash-commands",
        "--add-dir",
        str(tmp_path.resolve()),
    ]
    assert inv.prompt_on_stdin and inv.stdin is not None
    assert json.loads(inv.stdin) == {"event": "user", "message": {"role": "user", "content": "explain this"}}
    assert inv.stdin.endswith(b"\n") and inv.stdin.count(b"\n") == 1
    assert not any("explain this" in arg for arg in inv.argv)


def test_without_stream_json_input_the_prompt_is_dash_p_and_stdin_is_closed(spec: RunSpec) -> None:
    inv = build(spec, OLD)
    assert inv.argv[-2:] == ["-p", "explain this"]
    assert inv.stdin is None and not inv.prompt_on_stdin
    assert "--input-format" not in inv.argv


def test_a_slash_prompt_the_caller_allows_goes_on_argv_without_disable_slash_commands(spec: RunSpec) -> None:
    inv = build(replace(spec, prompt="/usage", allow_slash_commands=True))
    assert inv.argv[-2:] == ["-p", "/usage"] and inv.stdin is None
    assert "--disable-slash-commands" not in inv.argv and "--input-format" not in inv.argv


def test_slash_commands_are_disabled_by_default(spec: RunSpec) -> None:
    assert "--disable-slash-commands" in build(replace(spec, prompt="/usage")).argv


def test_skip_permissions_is_sent_only_when_asked(spec: RunSpec) -> None:
    assert "--dangerously-skip-permissions" not in build(spec).argv
    assert build(replace(spec, skip_permissions=True)).argv[1] == "--dangerously-skip-permissions"


def test_unicode_prompts_travel_as_utf8_json(spec: RunSpec) -> None:
    line = stream_json_user_line('héllo 👋 "quoted"\nnext')
    assert json.loads(line)["message"]["content"] == 'héllo 👋 "quoted"\nnext'
    assert "👋".encode() in line


# --- print-timeout -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [(45 * 60.0, "44m0s"), (3600.0 * 2, "1h59m0s"), (121.0, "1m1s"), (120.0, "1m0s"), (90.0, "45s"), (1.0, "1s")],
)
def test_print_timeout_is_the_server_timeout_minus_a_minute_or_half_when_short(timeout: float, expected: str) -> None:
    assert print_timeout_arg(timeout, None) == expected


@pytest.mark.parametrize(("override", "expected"), [("44m", "44m0s"), ("1h30m", "1h30m0s"), ("90", "1m30s")])
def test_agy_print_timeout_overrides_in_go_duration_form(override: str, expected: str) -> None:
    assert print_timeout_arg(60.0, override) == expected


@pytest.mark.parametrize("bad", ["soon", "-5m", "0", "5 minutes"])
def test_a_malformed_agy_print_timeout_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_go_duration(bad)


def test_go_duration_matches_go_duration_string() -> None:
    assert [go_duration(s) for s in (30 * 60, 3600, 59, 61.9)] == ["30m0s", "1h0m0s", "59s", "1m1s"]


# --- models and effort -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("flash", "gemini-3.8-flash-high"),
        ("PRO", "gemini-3.1-pro-high"),
        ("gemini-3.1-pro-high\tGemini 3.1 Pro (High)", "gemini-3.1-pro-high"),
        ("Gemini 3.1 Pro (High)", "gemini-3.1-pro-high"),
        ("gemini 3.1 pro (low)", "gemini-3.1-pro-low"),
        ("auto", None),
        ("  ", None),
        ("some-new-model", "some-new-model"),
    ],
)
def test_aliases_rows_and_labels_reduce_to_an_id(raw: str, expected: str | None) -> None:
    assert reduce_model(raw, CATALOG) == expected


def test_the_default_model_applies_only_when_the_call_names_none(spec: RunSpec) -> None:
    assert build(spec, default_model="pro").model == "gemini-3.1-pro-high"
    assert build(replace(spec, model="flash"), default_model="pro").model == "gemini-3.8-flash-high"


def test_a_tiered_id_with_a_different_effort_becomes_the_sibling_id_without_effort() -> None:
    choice = resolve_model("gemini-3.8-flash-high", "low", None, CATALOG)
    assert (choice.model, choice.effort) == ("gemini-3.8-flash-low", None)
    assert choice.notices == [
        "effort low was applied by running gemini-3.8-flash-low (agy model ids carry their effort tier)."
    ]


def test_an_alias_with_an_effort_picks_that_tier_quietly() -> None:
    choice = resolve_model("flash", "medium", None, CATALOG)
    assert (choice.model, choice.effort, choice.notices) == ("gemini-3.8-flash-medium", None, [])


def test_a_family_name_with_an_effort_becomes_the_tiered_id() -> None:
    assert resolve_model("gemini-3.8-flash", "low", None, CATALOG).model == "gemini-3.8-flash-low"


def test_a_tier_agy_does_not_offer_keeps_the_model_and_says_why_effort_was_dropped() -> None:
    choice = resolve_model("gemini-3.1-pro-high", "medium", None, CATALOG)
    assert (choice.model, choice.effort) == ("gemini-3.1-pro-high", None)
    assert "agy lists no gemini-3.1-pro-medium; it offers low, high" in choice.notices[0]


def test_the_same_tier_sends_no_redundant_effort() -> None:
    choice = resolve_model("gemini-3.8-flash-low", "low", None, CATALOG)
    assert (choice.model, choice.effort, choice.notices) == ("gemini-3.8-flash-low", None, [])


def test_an_untiered_id_keeps_both_model_and_effort(spec: RunSpec) -> None:
    inv = build(replace(spec, model="claude-sonnet-4-6", effort="high"))
    assert inv.argv[inv.argv.index("--model") : inv.argv.index("--model") + 4] == [
        "--model",
        "claude-sonnet-4-6",
        "--effort",
        "high",
    ]


def test_a_label_is_sent_as_its_id_so_effort_still_applies(spec: RunSpec) -> None:
    inv = build(replace(spec, model="Claude Sonnet 4.6 (Thinking)", effort="low"))
    assert "claude-sonnet-4-6" in inv.argv and "Claude Sonnet 4.6 (Thinking)" not in inv.argv


def test_an_unknown_label_with_effort_drops_the_effort_with_a_reason() -> None:
    choice = resolve_model("Fancy Model (Max)", "high", None, CATALOG)
    assert choice.effort is None and "refuses a display label together with --effort" in choice.notices[0]


def test_effort_alone_is_passed_through(spec: RunSpec) -> None:
    inv = build(replace(spec, effort="low"))
    assert "--effort" in inv.argv and "--model" not in inv.argv


def test_the_fallback_catalog_resolves_the_documented_ids() -> None:
    assert resolve_model("pro", "low", None, FALLBACK_MODELS).model == "gemini-3.1-pro-low"


# Every argv without stream-json input starts so (the default deadline of 45 minutes, less a minute).
FIXED_WITHOUT_STDIN = ["--print-timeout", "44m0s", "--output-format", "stream-json", "--disable-slash-commands"]


# --- the other options -------------------------------------------------------------------------------------------


def test_every_option_lands_in_the_documented_order(spec: RunSpec, tmp_path: Path) -> None:
    extra = tmp_path / "lib"
    extra.mkdir()
    full = replace(
        spec,
        model="flash",
        effort="high",
        mode="plan",
        agent="reviewer",
        sandbox=True,
        add_dirs=(extra, tmp_path),
        conversation_id="11111111-2222-3333-4444-555555555555",
        json_schema={"type": "object", "properties": {"k": {"type": "integer"}}},
    )
    inv = build(full, OLD)
    assert inv.argv[1:] == [
        *FIXED_WITHOUT_STDIN,
        "--model",
        "gemini-3.8-flash-high",
        "--mode",
        "plan",
        "--agent",
        "reviewer",
        "--sandbox",
        "--add-dir",
        str(tmp_path.resolve()),
        "--add-dir",
        str(extra.resolve()),
        "--conversation",
        "11111111-2222-3333-4444-555555555555",
        "--json-schema",
        '{"type":"object","properties":{"k":{"type":"integer"}}}',
        "-p",
        "explain this",
    ]
    assert inv.schema_run
    assert any("agy does not isolate tool execution" in n for n in inv.notices)


def test_the_cwd_is_added_as_its_physical_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    inv = build(RunSpec(tool="t", prompt="p", cwd=link))
    assert inv.argv[inv.argv.index("--add-dir") + 1] == str(real)


def test_options_the_installed_agy_does_not_list_become_notices(spec: RunSpec, tmp_path: Path) -> None:
    asked = replace(spec, model="pro", effort="low", mode="plan", agent="x", add_dirs=(tmp_path / "d",), sandbox=True)
    inv = build(asked, MINIMAL)
    assert inv.argv[1:] == [
        *FIXED_WITHOUT_STDIN,
        "-p",
        "explain this",
    ]
    joined = "\n".join(inv.notices)
    for option in ("model gemini-3.1-pro-low", "mode plan", "agent x", f"addDirs {tmp_path / 'd'}", "sandbox is"):
        assert option in joined


def test_a_failed_help_probe_sends_only_what_the_floor_guarantees(spec: RunSpec) -> None:
    inv = build(replace(spec, model="pro", add_dirs=(Path("/tmp"),)), FLOOR_CAPABILITIES)
    assert "--model" in inv.argv and "--print-timeout" not in inv.argv and "--add-dir" not in inv.argv
    assert inv.argv[-2] == "-p"


def test_json_schema_without_the_flag_becomes_an_instruction_that_is_not_fail_closed(spec: RunSpec) -> None:
    inv = build(replace(spec, json_schema={"type": "object"}), MINIMAL)
    assert not inv.schema_run and "--json-schema" not in inv.argv
    assert 'JSON Schema:\n{"type": "object"}' in inv.argv[-1]


@pytest.mark.parametrize("bad", ["--evil", "a b", "", "x" * 129])
def test_a_conversation_id_that_is_not_an_id_is_refused(spec: RunSpec, bad: str) -> None:
    with pytest.raises(InputError):
        build(replace(spec, conversation_id=bad))


def test_continuing_needs_the_conversation_flag(spec: RunSpec) -> None:
    with pytest.raises(InputError, match="cannot continue conversations"):
        build(replace(spec, conversation_id="abc"), MINIMAL)


@pytest.mark.parametrize("asked", [{"agent": "--yolo"}, {"model": "-x"}])
def test_values_that_look_like_flags_are_refused(spec: RunSpec, asked: dict[str, str]) -> None:
    with pytest.raises(InputError):
        build(replace(spec, agent=asked.get("agent"), model=asked.get("model")))


def test_stream_json_elsewhere_in_help_does_not_imply_stream_json_input() -> None:
    caps = parse_help("  -input-format string\n\ttext only\n  -output-format string\n\ttext | stream-json\n")
    assert "--input-format" in caps.flags and not caps.stream_json_input


def test_an_at_agy_might_expand_reaches_it_escaped_on_stdin_and_in_argv(spec: RunSpec) -> None:
    at_spec = replace(spec, prompt="check x@id_rsa and @deploy.pem")
    on_stdin = build(at_spec)
    on_argv = build(at_spec, OLD)
    assert on_stdin.stdin == stream_json_user_line("check x\\@id_rsa and \\@deploy.pem")
    assert on_argv.argv[on_argv.argv.index("-p") + 1] == "check x\\@id_rsa and \\@deploy.pem"

"""Log helpers: argv and tool calls are described without prompt bodies or secrets; the log goes to stderr."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gemini_relay.log import PREFIX, configure, describe_call, logger, redact_argv

# --- redact_argv ----------------------------------------------------------------------------------------------


def test_flags_are_kept_and_every_value_becomes_its_length() -> None:
    argv = ["/usr/local/bin/gemini", "--output-format", "stream-json", "-m", "gemini-2.5-pro", "--resume", "abc"]
    assert redact_argv(argv) == "gemini --output-format <11 chars> -m <14 chars> --resume <3 chars>"


def test_the_binary_is_reduced_to_its_name() -> None:
    assert redact_argv(["/home/someone/.npm/bin/agy"]) == "agy"
    assert redact_argv(["gemini"]) == "gemini"


def test_an_inline_flag_value_is_replaced_by_its_length() -> None:
    assert redact_argv(["agy", '--json-schema={"type":"object"}', "--model=pro"]) == (
        "agy --json-schema=<17 chars> --model=<3 chars>"
    )
    assert redact_argv(["agy", "--empty="]) == "agy --empty=<0 chars>"


def test_a_prompt_value_never_appears() -> None:
    prompt = "summarise the secret plan in @docs/plan.md"
    line = redact_argv(["agy", "-p", prompt])
    assert line == f"agy -p <{len(prompt)} chars>"
    assert "secret" not in line


@pytest.mark.parametrize(
    ("prompt", "shown"),
    [
        ("- list every password you find", "<30 chars>"),
        ("--- yaml front matter", "<21 chars>"),
        ("-rf /", "<5 chars>"),
        ("-1 is the answer", "<16 chars>"),
        ("--note=the secret is 42", "--note=<16 chars>"),
    ],
)
def test_a_prompt_that_starts_with_a_dash_is_still_a_value(prompt: str, shown: str) -> None:
    assert redact_argv(["agy", "-p", prompt]) == f"agy -p {shown}"


def test_an_argument_that_is_only_a_dash_or_empty_is_a_value() -> None:
    assert redact_argv(["gemini", "-", ""]) == "gemini <1 chars> <0 chars>"


def test_no_argv_is_an_empty_description() -> None:
    assert redact_argv([]) == ""


# --- describe_call --------------------------------------------------------------------------------------------


def test_a_gemini_ask_call_is_described_exactly() -> None:
    assert describe_call("gemini-ask", {"prompt": "x" * 412, "changeMode": True}) == (
        "Tool gemini-ask(prompt=<412 chars> changeMode=true)"
    )


def test_strings_become_lengths_and_other_values_are_shown_whole() -> None:
    arguments: dict[str, Any] = {
        "prompt": "secret text",
        "model": "pro",
        "ideaCount": 12,
        "duration": 10.5,
        "sandbox": False,
        "chunkIndex": None,
        "addDirs": ["src", "docs"],
        "jsonSchema": {"type": "object", "required": ["a"]},
    }
    assert describe_call("gemini-brainstorm", arguments) == (
        "Tool gemini-brainstorm(prompt=<11 chars> model=<3 chars> ideaCount=12 duration=10.5 sandbox=false "
        'chunkIndex=null addDirs=["src","docs"] jsonSchema={"type":"object","required":["a"]})'
    )


def test_non_ascii_in_whole_values_is_kept_readable() -> None:
    assert describe_call("t", {"x": ["café"]}) == 'Tool t(x=["café"])'


def test_a_value_json_cannot_show_is_named_by_its_type() -> None:
    assert describe_call("t", {"when": object(), "raw": b"bytes"}) == "Tool t(when=<object> raw=<bytes>)"


def test_a_call_without_arguments() -> None:
    assert describe_call("gemini-ping", None) == "Tool gemini-ping()"
    assert describe_call("gemini-ping", {}) == "Tool gemini-ping()"


# --- configure ------------------------------------------------------------------------------------------------


def test_configure_adds_one_prefixed_stderr_handler_however_often_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    saved = (list(logger.handlers), logger.level, logger.propagate)
    try:
        configure(logging.DEBUG)
        configure(logging.INFO)
        ours = [h for h in logger.handlers if getattr(h, "_gemini_relay", False)]
        assert len(ours) == 1
        logger.debug("hello %s", "there")
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"{PREFIX}hello there\n"
        assert logger.propagate is False
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]

"""Log helpers: argv and tool calls are described without prompt bodies or secrets; the log goes to stderr, every
line escaped and capped, and the lines a request can cause rate-limited."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest

from gemini_relay.log import (
    MAX_LINE,
    PREFIX,
    FloodGate,
    SafeFormatter,
    configure,
    describe_call,
    escape,
    logger,
    redact_argv,
    requests_log,
    shown,
)

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


def test_strings_become_lengths_numbers_and_flags_are_shown_and_arrays_and_objects_become_sizes() -> None:
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
        "chunkIndex=null addDirs=<array of 2> jsonSchema=<object of 2>)"
    )


@pytest.mark.parametrize(
    "prompt", [["the secret plan"], {"text": "the secret plan"}, [{"parts": ["the secret plan"]}], ("the secret plan",)]
)
def test_a_prompt_sent_as_another_json_type_never_appears(prompt: Any) -> None:
    line = describe_call("gemini-ask", {"prompt": prompt})
    assert "secret" not in line and line.startswith("Tool gemini-ask(prompt=<")


def test_an_argument_name_that_is_not_a_name_is_reduced_to_its_length() -> None:
    line = describe_call("gemini-ask", {"the secret plan is here": 1, "a\x1bb": 2, "x" * 65: 3, "ok_name-1.a": 4})
    assert line == "Tool gemini-ask(<name of 23 chars>=1 <name of 3 chars>=2 <name of 65 chars>=3 ok_name-1.a=4)"


def test_a_huge_number_is_shown_by_its_size() -> None:
    assert describe_call("t", {"n": 10**5000}) == "Tool t(n=<integer of ~5001 digits>)"


def test_a_value_json_cannot_show_is_named_by_its_type() -> None:
    assert describe_call("t", {"when": object(), "raw": b"bytes"}) == "Tool t(when=<object> raw=<bytes>)"


def test_a_call_without_arguments() -> None:
    assert describe_call("gemini-ping", None) == "Tool gemini-ping()"
    assert describe_call("gemini-ping", {}) == "Tool gemini-ping()"


# --- configure ------------------------------------------------------------------------------------------------


def test_configure_adds_one_prefixed_stderr_handler_however_often_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = (list(logger.handlers), logger.level, logger.propagate, list(root.handlers), root.level)
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
        logger.info("Host %s", "evil\x1b[2J\r\n[GMCPT] forged")
        logging.getLogger("mcp.server.transport_security").warning("Invalid Host header: %s", "\x1b]0;t\x07")
        assert capsys.readouterr().err == (
            f"{PREFIX}Host evil\\x1b[2J\\r\\n[GMCPT] forged\n{PREFIX}Invalid Host header: \\x1b]0;t\\x07\n"
        )
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
        root.handlers[:] = saved[3]
        root.setLevel(saved[4])


# --- escaping ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ("\x1b[31mred", "\\x1b[31mred"),
        ("bell\x07", "bell\\x07"),
        ("nul\x00", "nul\\x00"),
        ("line\nforged", "line\\nforged"),
        ("cr\rover", "cr\\rover"),
        ("c1 \x9b2J", "c1 \\x9b2J"),
        ("del\x7f", "del\\x7f"),
        ("bidi \u202egnp.exe", "bidi \\u202egnp.exe"),
        ("bom\ufeff", "bom\\ufeff"),
        ("tab\tstays, so do é and 日本", "tab\tstays, so do é and 日本"),
    ],
)
def test_every_control_character_is_written_out(raw: str, written: str) -> None:
    assert escape(raw) == written


def test_a_traceback_keeps_its_line_breaks_and_loses_its_escapes() -> None:
    try:
        raise ValueError("bad \x1b[2J value")
    except ValueError:
        record = logging.LogRecord("gemini_relay", logging.ERROR, __file__, 1, "crashed", (), sys.exc_info())
    text = SafeFormatter().format(record)
    assert text.startswith(f"{PREFIX}crashed\nTraceback (most recent call last):\n")
    assert "ValueError: bad \\x1b[2J value" in text and "\x1b" not in text


def test_a_long_message_is_cut_and_says_by_how_much() -> None:
    record = logging.LogRecord("gemini_relay", logging.INFO, __file__, 1, "%s", ("y" * (MAX_LINE + 50),), None)
    assert SafeFormatter().format(record) == f"{PREFIX}{'y' * MAX_LINE}…(+50 chars)"


def test_a_value_from_a_request_is_quoted_escaped_and_cut() -> None:
    assert shown('a"b\\c\x1b') == '"a\\"b\\\\c\\x1b"'
    assert shown("h" * 200, limit=5) == '"hhhhh"…(+195 chars)'
    assert shown(None) == "null" and shown(7) == "7" and shown(10**5000) == "<integer of ~5001 digits>"


# --- rate limit ---------------------------------------------------------------------------------------------------


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def gated(limit: int = 3) -> tuple[Collected, list[float]]:
    now = [0.0]
    handler = Collected()
    handler.addFilter(FloodGate(handler, limit=limit, window=60.0, clock=lambda: now[0], timers=False))
    return handler, now


def record(name: str, msg: str, *args: object, line: int = 1) -> logging.LogRecord:
    return logging.LogRecord(name, logging.INFO, __file__, line, msg, args, None)


def test_a_flood_of_one_kind_of_request_line_is_cut_to_the_limit_then_summed_up_when_the_window_ends() -> None:
    handler, now = gated()
    for n in range(100):
        handler.handle(record(requests_log.name, "Refused Host %s", n))
    handler.handle(record(requests_log.name, "Another kind %s", 1, line=2))
    assert handler.lines == ["Refused Host 0", "Refused Host 1", "Refused Host 2", "Another kind 1"]
    now[0] = 61.0
    handler.handle(record(requests_log.name, "Refused Host %s", 100))
    assert handler.lines[4:] == ["suppressed 97 similar lines in 61s (Refused Host %s)", "Refused Host 100"]


def test_library_lines_are_rate_limited_and_the_relays_own_lines_never_are() -> None:
    handler, _ = gated()
    for n in range(10):
        handler.handle(record("mcp.server.transport_security", f"Invalid Host header: {n}"))  # formatted in
        handler.handle(record(logger.name, "Tool gemini-ask(%s)", n, line=2))
        handler.handle(record("gemini_relay.tools", "Run %s done", n, line=3))
    assert sum(line.startswith("Invalid Host") for line in handler.lines) == 3
    assert sum(line.startswith("Tool") for line in handler.lines) == 10
    assert sum(line.startswith("Run") for line in handler.lines) == 10


def test_what_is_still_suppressed_is_counted_when_the_gate_is_flushed_as_at_exit() -> None:
    handler, _ = gated(limit=1)
    for n in range(5):
        handler.handle(record(requests_log.name, "Refused %s", n))
    gate = handler.filters[0]
    assert isinstance(gate, FloodGate)
    gate.flush()
    assert handler.lines == ["Refused 0", "suppressed 4 similar lines in 0s (Refused %s)"]

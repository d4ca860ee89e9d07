"""Every line on the server's stdin gets JSON-RPC's answer or a clean drop, never a crash: huge numeric ids, bytes
that are not UTF-8, a byte order mark, floats, NaN or Infinity as ids, lines nested past every parser, ids of the
wrong type. Parse errors are -32700 and invalid requests -32600, with the id when it is readable (else null), and
the server answers a ping after each line. Lines that reach the stdio front while the SDK loads are held to the same.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness import Relay
from tests.transports.bad_lines import DROP, INVALID, LINES, PARSE, Expected, error, result
from tests.transports.raw_stdio import INIT, converse

pytestmark = pytest.mark.anyio


def outcome(replies: list[dict[str, Any]]) -> Expected | str:
    if not replies:
        return DROP
    if len(replies) > 1:
        return f"{len(replies)} replies: {[json.dumps(r)[:120] for r in replies]}"
    reply = replies[0]
    if "error" in reply:
        return error(reply["error"]["code"], reply["id"])
    return result(reply["id"])


async def test_every_bad_line_gets_its_json_rpc_answer_or_is_dropped_and_the_server_keeps_serving(
    relay: Relay,
) -> None:
    talk = await converse(relay.env, relay.project, relay.stderr_path, [line for _, line, _ in LINES])
    assert talk.died_after is None, f"no ping answered after {LINES[talk.died_after][0]}:\n{relay.stderr()[-3000:]}"
    wrong = []
    for (what, _, expected), replies in zip(LINES, talk.answers[1:], strict=True):
        got = outcome(replies)
        if got != expected:
            wrong.append(f"{what}: expected {expected}, got {str(got)[:200]}")
    assert wrong == []
    assert talk.exit_code == 0
    errors = [r for replies in talk.answers for r in replies if "error" in r]
    assert all(isinstance(r["error"]["message"], str) and r["error"]["message"] for r in errors)


async def test_bad_lines_reaching_the_stdio_front_while_the_sdk_loads_are_answered_the_same(relay: Relay) -> None:
    listing = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    init = json.loads(INIT)
    array_params = b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}'
    talk = await converse(relay.env, relay.project, relay.stderr_path, [], burst=[INIT, array_params, listing])
    assert "Answered initialize from the shipped answers" in relay.stderr()
    assert talk.died_after is None and talk.exit_code == 0, relay.stderr()[-3000:]
    first, refused, tools = talk.answers[0]
    assert first["id"] == "init" and first["result"]["serverInfo"]["name"] == "gemini-relay"
    assert refused["id"] == 5 and refused["error"]["code"] == INVALID
    assert tools["id"] == 1 and tools["result"]["tools"]

    odd_ids = [json.dumps({**init, "id": value}).encode() for value in (1.5, True, None)]
    nan_id = json.dumps({**init, "id": float("nan")}).encode()  # Python writes NaN, which is not JSON
    talk = await converse(relay.env, relay.project, relay.stderr_path, [], burst=[*odd_ids, nan_id, INIT])
    assert talk.died_after is None and talk.exit_code == 0, relay.stderr()[-3000:]
    *refusals, answered = talk.answers[0]
    assert [(r["id"], r["error"]["code"]) for r in refusals] == [(None, INVALID)] * 3 + [(None, PARSE)]
    assert answered["id"] == "init" and "result" in answered


async def test_a_prompt_sent_as_an_array_or_an_object_is_refused_and_its_body_stays_out_of_the_log(
    relay: Relay,
) -> None:
    secret = "the secret plan nobody may log"
    calls = [
        {"jsonrpc": "2.0", "id": 40, "method": "tools/call",
         "params": {"name": "gemini-ask", "arguments": {"prompt": [secret]}}},
        {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
         "params": {"name": "gemini-ask", "arguments": {"prompt": {"text": secret}, secret: 1}}},
    ]  # fmt: skip
    talk = await converse(relay.env, relay.project, relay.stderr_path, [json.dumps(c).encode() for c in calls])
    assert talk.died_after is None
    for replies in talk.answers[1:]:
        assert len(replies) == 1 and replies[0]["result"]["isError"] is True
    log = relay.stderr()
    assert "Tool gemini-ask(prompt=" in log
    assert "secret" not in log
    assert relay.api.requests == []

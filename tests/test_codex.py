"""The real Codex CLI (0.169.0), its model a fake Responses API on loopback (tests/real_codex.py): on the relay's very
first start Codex's first model request lists the relay's tools; `gemini-relay setup --yes` writes an entry Codex
reads, whose read-only tools run without a prompt while the others follow the user's policy (with `--approve all`
`codex exec` runs gemini-ask too); and a test reads exactly what Codex's model received from a tool."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import gemini_relay
from gemini_relay.tools.registry import registry
from tests.executables import relay_command
from tests.fakes.fake_responses_api import Call, FakeResponsesApi
from tests.harness import Relay, stop_host
from tests.real_clients import installed_version
from tests.real_codex import NAMESPACE, Codex, CodexRun, codex_name, provider_config

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
JSON_ASK = {"prompt": "give me a", "jsonSchema": SCHEMA}  # the fake Gemini answers {"a": "fake"}
CHOICE_NOTICE = "Using the api backend"  # the first reply's notice: which backend the automatic choice took, and why
PACKAGE = Path(gemini_relay.__file__).parent
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def state_dir(relay: Relay) -> Path:
    return relay.home / ".local" / "state" / "gemini-relay"


@pytest.fixture
def codex(relay: Relay) -> Iterator[Codex]:
    client = Codex(relay.base, relay.env)
    yield client
    stop_host(client.home / ".local" / "state" / "gemini-relay")  # a relay setup's entry started, if it made one


def api_chosen(relay: Relay) -> dict[str, str]:
    """The relay with nothing but the fake Gemini API's key: the automatic choice takes the api backend and the
    first reply says so (no Node, nothing to spawn)."""
    empty = relay.base / "no-binaries"
    empty.mkdir(exist_ok=True)
    gone = ("GEMINI_CLI_PATH", "GEMINI_MCP_BACKEND")
    kept = {k: v for k, v in relay.env.items() if k not in gone}
    return {**kept, "PATH": str(empty), "GEMINI_RELAY_HOST": "off"}  # no relay host to start: the run is in-process


def through_codex(
    relay: Relay, codex: Codex, turns: list[Call | str], *approved: str, relay_env: dict[str, str] | None = None
) -> CodexRun:
    """One `codex exec` whose model makes the scripted `turns`, with the relay added as `codex mcp add` writes it
    (not `required`, so not waited for) and the `approved` tools run without a prompt (keyed by their MCP names, as
    setup writes them)."""
    with FakeResponsesApi(turns) as api:
        codex.config.write_text(provider_config(api), encoding="utf-8")
        codex.add_relay(relay_env or relay.env, relay.project)
        with codex.config.open("a", encoding="utf-8") as config:
            config.writelines(f'\n[mcp_servers.gemini-relay.tools.{t}]\napproval_mode = "approve"\n' for t in approved)
        run = codex.exec(api, "do it", relay.project)
    assert run.completed.returncode == 0, run.why()
    return run


def codex_setup(relay: Relay, codex: Codex, *options: str) -> subprocess.CompletedProcess[str]:
    """`gemini-relay setup --client codex` as a user runs it, in the project, with Codex's environment."""
    setup = relay_command(
        "setup", "--client", "codex", *options, "--yes", env=codex.env, cwd=relay.project, timeout=120
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    return setup


def fresh_checkout(relay: Relay) -> dict[str, str]:
    """The relay as a fresh clone runs it: the source alone, no bytecode yet (each start compiles what it imports)."""
    copy = relay.base / "checkout"
    shutil.copytree(PACKAGE, copy / "gemini_relay", ignore=shutil.ignore_patterns("__pycache__"))
    return {"PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.mark.parametrize("checkout", [False, True], ids=["installed", "fresh-checkout"])
def test_on_a_first_start_the_first_model_request_codex_sends_lists_the_relays_tools(
    relay: Relay, codex: Codex, checkout: bool
) -> None:
    assert not state_dir(relay).exists()  # nothing from an earlier start
    run = through_codex(relay, codex, [], relay_env={**relay.env, **(fresh_checkout(relay) if checkout else {})})
    expected = [codex_name(tool.name) for tool in registry(test_tools=False)]
    listed = run.relay_tools(0)
    assert listed is not None, f"the first turn's namespaces: {list(run.requests[0].namespaces())}"
    assert sorted(listed) == sorted(expected)  # Codex lists them by name
    namespace = run.requests[0].namespace(NAMESPACE)
    assert namespace is not None and namespace["description"].startswith("gemini-relay hands work")  # instructions


def test_setups_codex_entry_is_read_by_codex_and_its_read_only_tools_run_without_a_prompt(
    relay: Relay, codex: Codex
) -> None:
    turns: list[Call | str] = [
        Call("gemini_ping", namespace=NAMESPACE),
        Call("gemini_ask", {"prompt": "hi"}, namespace=NAMESPACE, call_id="call_2"),
    ]
    with FakeResponsesApi(turns) as api:
        codex.config.write_text(provider_config(api), encoding="utf-8")
        codex_setup(relay, codex)
        (server,) = [s for s in codex.servers(relay.project) if s["name"] == "gemini-relay"]
        run = codex.exec(api, "ping the relay", relay.project)
    assert server["enabled"] is True and server["tool_timeout_sec"] == 600.0, server
    assert server["transport"]["command"] == str(Path(sys.executable).parent / "gemini-relay")
    assert "GEMINI_API_KEY" in server["transport"]["env_vars"]
    assert run.completed.returncode == 0, run.why()
    assert run.relay_tools(0), "setup's entry is `required`: Codex waits for the relay before its first turn"
    assert "Pong!" in run.received("call_1")  # read-only: no prompt
    assert "requires approval" in run.received("call_2")  # gemini-ask: the user's policy ("never" refuses)


def test_what_codexs_model_receives_is_the_tools_result_as_codex_hands_it_over(relay: Relay, codex: Codex) -> None:
    ask = Call("gemini_ask", {"prompt": "hello codex"}, namespace=NAMESPACE)
    run = through_codex(relay, codex, [ask], "gemini-ask", relay_env=api_chosen(relay))
    received = run.received()
    assert "Hello from fake Gemini! You said: hello codex" in received, received
    assert CHOICE_NOTICE in received  # a result without structuredContent: the text, notices and all
    assert len(run.requests) == 2 and run.requests[1].output_of("call_1") == received


def test_a_json_schema_ask_reaches_codexs_model_with_its_conversation_id_and_notices(
    relay: Relay, codex: Codex
) -> None:
    turns: list[Call | str] = [
        Call("gemini_ask", JSON_ASK, namespace=NAMESPACE),
        Call("gemini_conversations", namespace=NAMESPACE, call_id="call_2"),
    ]
    run = through_codex(relay, codex, turns, "gemini-ask", relay_env=api_chosen(relay))
    received, listing = run.received("call_1"), run.received("call_2")
    saved = UUID.findall(listing)
    assert '"a": "fake"' in received.replace('":"', '": "'), received  # the answer itself arrives either way
    assert saved and any(conversation in received for conversation in saved), (received, listing)
    assert CHOICE_NOTICE in received, received


def test_codex_binary_is_the_pinned_version() -> None:
    assert installed_version("@openai/codex") == "0.169.0"


@pytest.mark.parametrize("approve", ["all", "read-only"])
def test_after_setup_approve_all_codex_exec_runs_gemini_ask_and_with_read_only_it_is_refused(
    relay: Relay, codex: Codex, approve: str
) -> None:
    """Codex's approval_policy here is "never", as for any `codex exec` that cannot ask. The relay under Codex has
    no backend (Codex passes it no GEMINI_CLI_PATH): a gemini-ask that ran answers with the relay's own notice."""
    turns: list[Call | str] = [Call("gemini_ask", {"prompt": "hi"}, namespace=NAMESPACE)]
    with FakeResponsesApi(turns) as api:
        codex.config.write_text(provider_config(api), encoding="utf-8")
        setup = codex_setup(relay, codex, *("--approve", approve))
        run = codex.exec(api, "ask gemini", relay.project)
    assert run.completed.returncode == 0, run.why()
    received = run.received("call_1")
    if approve == "all":
        assert "requires approval" not in received, received
        assert "Using the gemini backend" in received, received  # the relay ran the call
        assert "`codex exec` included" in setup.stdout
    else:
        assert "MCP tool call requires approval" in received, received
        assert "gemini-relay setup --client codex --approve all --yes" in setup.stdout

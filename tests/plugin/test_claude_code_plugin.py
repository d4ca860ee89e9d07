"""The plugin in the real Claude Code CLI (2.1.332), offline: the marketplace in this checkout is added and the plugin
installed in a temporary home; its relay's tools are offered to the model, its commands expand into the right tool
call, and its stop-review gate runs, stops at its cap and steps aside when the relay is broken."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_messages_api import fake_messages_api
from tests.git_repo import GitRepo
from tests.harness import TEST_MODEL, Relay
from tests.plugin.claude_plugin import OFFLINE, TOOL, claude, events, install_plugin, offered, prompt, user_text
from tests.real_clients import CLAUDE, require

FINDINGS = "- critical: app.py:2 divides by zero when n is 0.\nVERDICT: BLOCK"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One Claude Code home with the marketplace added and the plugin installed, for this module's tests."""
    path = tmp_path_factory.mktemp("claude-plugin-home")
    install_plugin(path)
    yield path


def test_the_installed_plugin_holds_its_commands_agent_hook_and_server(home: Path) -> None:
    details = claude(home, ["plugin", "details", "gemini-relay@gemini-relay"], {"PATH": "/usr/bin:/bin"}, home)
    assert details.returncode == 0, details
    assert "Skills (7)  ask, cancel, consensus, delegate, result, review, status" in details.stdout, details.stdout
    assert "Agents (1)  gemini-reviewer" in details.stdout
    assert "Hooks (1)  Stop" in details.stdout
    assert "MCP servers (1)  gemini-relay" in details.stdout


def test_the_plugin_offers_the_relay_tools_and_ask_expands_into_a_gemini_ask_call(home: Path, relay: Relay) -> None:
    with fake_messages_api(f"{TOOL}gemini-ask", {"prompt": "What is 2+2?"}) as fake:
        prompt(home, relay, fake, "/gemini-relay:ask What is 2+2?")
    calling = next(r for r in fake.requests if f"{TOOL}gemini-ask" in offered(r))
    needed = {"ask", "review", "assess", "run", "status", "wait", "jobs", "cancel", "consensus"}
    assert {f"{TOOL}gemini-{name}" for name in needed} <= offered(calling)  # the jobs and review toolsets are on
    sent = user_text(calling)
    assert "Call the `gemini-ask` tool of the gemini-relay MCP server once" in sent  # the command's prompt
    assert "Question:\nWhat is 2+2?" in sent
    seen = json.loads(fake.result_text())  # Claude Code hands its model the structuredContent alone
    assert seen["text"].startswith("Gemini response:\nHello from fake Gemini! You said: What is 2+2?")
    receipt = seen["receipt"]
    line = f"— {receipt['model']} via {receipt['backend']} · {receipt['total_seconds']:.1f} s · 23 tokens · job "
    assert seen["text"].endswith(line + receipt["job_id"]), seen["text"]
    assert "End with the receipt line" in sent  # and the command asks Claude to show it


def test_delegate_starts_a_durable_job_and_the_model_gets_its_id_at_once(home: Path, relay: Relay) -> None:
    with fake_messages_api(f"{TOOL}gemini-run", {"prompt": "Summarise the project."}) as fake:
        prompt(home, relay, fake, "/gemini-relay:delegate Summarise the project.")
    calling = next(r for r in fake.requests if f"{TOOL}gemini-run" in offered(r))
    assert "Call the `gemini-run` tool" in user_text(calling)
    assert '"job_id":' in fake.result_text(), fake.result_text()


def test_the_gate_on_in_the_plugin_settings_sends_claude_back_once_then_lets_it_stop_at_the_cap(
    home: Path, relay: Relay
) -> None:
    repo = GitRepo.create(relay.project, {"app.py": "def f(n):\n    return 1\n"})
    repo.write({"app.py": "def f(n):\n    return 1 / n\n"})
    relay.api.set_scenario("echo", FINDINGS)
    options = {"stop_gate": "on", "gate_model": TEST_MODEL, "gate_effort": "medium"}
    configure(home, options)
    try:
        with fake_messages_api("", {}) as fake:
            out = prompt(home, relay, fake, "Change app.py.", GEMINI_RELAY_HOST="off")
    finally:
        configure(home, {"stop_gate": "off"})
    turns = [r for r in fake.requests if "Change app.py." in user_text(r)]
    sent_back = [r for r in turns if "app.py:2 divides by zero" in user_text(r)]
    assert len(sent_back) == 1, out[-3000:]
    # The model and effort are the plugin's settings (Claude Code hands them to the hook as CLAUDE_PLUGIN_OPTION_*).
    assert f"Gemini's stop-review ({TEST_MODEL}, effort medium; round 1 of 1)" in user_text(sent_back[0])
    assert [r.model for r in relay.turn_requests()] == [TEST_MODEL]  # one review: at the cap Claude stopped
    assert "Gemini stop-review: 1 round(s) this turn, the cap; not reviewing again." in out
    assert events(out)[-1]["type"] == "result"


def configure(home: Path, options: dict[str, str]) -> None:
    """`claude plugin configure gemini-relay@gemini-relay --values-stdin`: settings saved as a user saves them."""
    binary = require(CLAUDE, "the Claude Code CLI 2.1.332")
    done = subprocess.run(
        [str(binary), "plugin", "configure", "gemini-relay@gemini-relay", "--values-stdin"],
        input=json.dumps(options),
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), **OFFLINE},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "Configuration saved" in done.stdout, done


def test_with_the_relay_broken_the_gate_says_gemini_is_unavailable_and_does_not_block(home: Path, relay: Relay) -> None:
    repo = GitRepo.create(relay.project, {"app.py": "x = 1\n"})
    repo.write({"app.py": "x = 2\n"})
    broken = {"GEMINI_RELAY_STOP_GATE": "on", "GEMINI_RELAY_COMMAND": str(relay.base / "no-such-relay")}
    with fake_messages_api("", {}) as fake:
        out = prompt(home, relay, fake, "Change app.py.", **broken)
    assert not any("stop-review" in user_text(r) for r in fake.requests)  # never sent back
    assert "Gemini unavailable: the relay exited (127) before answering" in out
    assert relay.api.requests == []

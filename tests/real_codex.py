"""Driving the real Codex CLI (0.169.0) end to end, offline: its model is a FakeResponsesApi on loopback, the relay
one of its MCP servers, its HOME and CODEX_HOME temporary. Every model request Codex sends is kept, so a test reads
exactly what the model saw: the tools of a turn (the relay's as the namespace `mcp__gemini_relay`, `-` turned into
`_`) and, after a scripted tool call, the `function_call_output` that carries the tool's result.

The configuration is the reference's (shared/reference/ecosystem-2026.md, "Driving the real Codex CLI"): the fake
as a `responses` provider, approval_policy "never" (so a tool that needs approval is refused, not prompted) and a
read-only sandbox. A server entry is added the way a user would: with `codex mcp add`, or by `gemini-relay setup`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.fake_responses_api import FakeResponsesApi, ModelRequest
from tests.real_clients import CODEX, require

NAMESPACE = "mcp__gemini_relay"  # Codex's namespace for the server named gemini-relay
CODEX_TIMEOUT = 120.0  # one exec takes 2-7 s here; a loaded machine gets the rest
KEY_ENV = "FAKE_RESPONSES_KEY"  # the provider's env_key: Codex refuses to start without one


def codex_name(tool: str) -> str:
    """How Codex names an MCP tool to its model."""
    return tool.replace("-", "_")


def provider_config(api: FakeResponsesApi) -> str:
    """The top of config.toml: the fake model provider, no approvals asked, a read-only sandbox."""
    return "\n".join(
        [
            'model = "gpt-5.4"',
            'model_provider = "fake"',
            'approval_policy = "never"',
            'sandbox_mode = "read-only"',
            "",
            "[model_providers.fake]",
            'name = "fake"',
            f"base_url = {json.dumps(api.base_url)}",
            f"env_key = {json.dumps(KEY_ENV)}",
            'wire_api = "responses"',
            "",
        ]
    )


@dataclass
class CodexRun:
    """One `codex exec --json`: its process and the model requests it sent."""

    completed: subprocess.CompletedProcess[str]
    requests: list[ModelRequest]

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.completed.stdout.splitlines() if line.startswith("{")]

    def relay_tools(self, index: int = 0) -> list[str] | None:
        """The relay's tools as request `index` listed them to the model (None: the relay was not there)."""
        if index >= len(self.requests):
            return None
        return self.requests[index].namespaces().get(NAMESPACE)

    def received(self, call_id: str = "call_1") -> str:
        """Exactly what the model received as the result of the tool call `call_id` (in the request after it)."""
        for request in self.requests:
            output = request.output_of(call_id)
            if output is not None:
                return output
        raise AssertionError(f"no function_call_output for {call_id} in {len(self.requests)} request(s): {self.why()}")

    def why(self) -> str:
        return f"exit {self.completed.returncode}; stderr: {self.completed.stderr[-1500:]}"


class Codex:
    """The Codex CLI in a home of its own."""

    def __init__(self, base: Path, env: Mapping[str, str]) -> None:
        self.binary = require(CODEX, "the Codex CLI 0.169.0")
        self.home = base / "codex-user"
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.config = self.codex_home / "config.toml"
        self.env = {
            "PATH": env.get("PATH", os.defpath),
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "CODEX_HOME": str(self.codex_home),
            KEY_ENV: "fake-key",
            "NO_COLOR": "1",
        }

    def run(self, args: Sequence[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            timeout=CODEX_TIMEOUT,
            cwd=cwd,
            env={**self.env, **env},
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def add_relay(self, relay_env: Mapping[str, str], cwd: Path, name: str = "gemini-relay") -> None:
        """`codex mcp add <name> --env K=V … -- python -m gemini_relay`: the entry as Codex itself writes it."""
        pairs = [arg for key, value in sorted(relay_env.items()) for arg in ("--env", f"{key}={value}")]
        added = self.run(["mcp", "add", name, *pairs, "--", sys.executable, "-m", "gemini_relay"], cwd)
        assert added.returncode == 0, added.stderr

    def servers(self, cwd: Path) -> list[dict[str, Any]]:
        """`codex mcp list --json`: the servers as Codex read them from its config."""
        listed = self.run(["mcp", "list", "--json"], cwd)
        assert listed.returncode == 0, listed.stderr
        found: list[dict[str, Any]] = json.loads(listed.stdout[listed.stdout.index("[") :])
        return found

    def exec(self, api: FakeResponsesApi, prompt: str, cwd: Path, **env: str) -> CodexRun:
        completed = self.run(["exec", "--skip-git-repo-check", "--json", prompt], cwd, **env)
        return CodexRun(completed, list(api.requests))

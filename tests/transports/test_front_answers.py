"""The shipped answers (front_answers.json) are what the SDK itself answers, for every surface (each combination of
toolsets, with and without the test tools), every backend (its descriptions and instructions speak of it) and every
protocol version it negotiates with a handshake; they depend on nothing else a start could differ in (the client's
params), the front answers only for an explicit backend, and only params the SDK accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.backend_registry import BackendRegistry, entries, names
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import Toolset
from gemini_relay.transports.front_answers import ANSWERS_FILE, REGENERATE, FrontAnswers, acceptable, surface_key
from gemini_relay.transports.front_answers_make import (
    generate,
    handshake,
    relay_server,
    render,
    sdk_answers,
    sdk_lines,
    settings_for,
    surfaces,
)
from tests.executables import shell_script

pytestmark = pytest.mark.anyio

CODEX = {  # what Codex CLI 0.169.0 sends (captured from the real binary)
    "protocolVersion": "2025-06-18",
    "capabilities": {"experimental": {"codex/auth-change": {}}, "elicitation": {"form": {}, "url": {}}},
    "clientInfo": {"name": "codex-mcp-client", "title": "Codex", "version": "0.169.0"},
}
PLAIN = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
ROOTS = {**PLAIN, "capabilities": {"roots": {"listChanged": True}, "sampling": {}}, "_meta": {"progressToken": 7}}


def shipped() -> FrontAnswers:
    answers = FrontAnswers.load()
    assert answers is not None, f"{ANSWERS_FILE} is missing or unreadable; run {REGENERATE}"
    return answers


async def test_the_shipped_file_is_what_the_sdk_answers_now_for_every_surface_and_version() -> None:
    fresh = await generate()
    assert len(fresh["answers"]) == len(surfaces()) * len(names()) == 2 ** (len(Toolset) + 1) * len(names())
    assert all(set(per) == set(fresh["versions"]) for per in fresh["answers"].values())
    assert ANSWERS_FILE.read_text(encoding="utf-8") == render(fresh), f"stale: run {REGENERATE}"


@pytest.mark.parametrize("toolsets", [frozenset(), frozenset({Toolset.JOBS, Toolset.MEDIA}), frozenset(Toolset)])
async def test_each_backends_answers_are_the_sdks_whatever_the_client_params(
    toolsets: frozenset[Toolset], tmp_path: Path
) -> None:
    answers = shipped()
    for backend in names():
        key = surface_key(toolsets, test_tools=True, backend=backend)
        server = relay_server(settings_for(toolsets, True, tmp_path / backend, GEMINI_MCP_BACKEND=backend))
        for params in (CODEX, PLAIN, ROOTS):
            # A difference here means the surface came to depend on the client: the front keys its answers by the
            # backend and the surface alone.
            assert await sdk_answers(server, params) == answers.for_initialize(key, params), (backend, params)


def test_an_explicit_backend_is_known_by_any_of_its_spellings_and_a_misspelling_by_none() -> None:
    answers = shipped()
    assert answers.backend("Antigravity", {}) == "agy" and answers.backend(" api ", {}) == "api"
    assert answers.backend("gemeni", {}) is None  # the server explains it in its own answers
    assert answers.backend("agy", {"AGY_CLI_PATH": "/nonexistent/agy"}) is None  # and so a missing explicit binary


def test_the_warm_cli_is_booted_early_only_when_its_binary_is_there_and_no_explicit_binary_is_missing(
    tmp_path: Path,
) -> None:
    answers = shipped()
    gemini = tmp_path / "gemini"
    gemini.write_text("#!/bin/sh\n")
    gemini.chmod(0o755)
    assert answers.binary_found("gemini", {"GEMINI_CLI_PATH": str(gemini)})
    assert answers.binary_found("gemini", {"PATH": str(tmp_path)})  # its default name on PATH
    assert not answers.binary_found("gemini", {"PATH": str(tmp_path / "empty")})
    # A server that refuses every run (another backend's explicit binary is missing) warms nothing.
    assert not answers.binary_found("gemini", {"GEMINI_CLI_PATH": str(gemini), "AGY_CLI_PATH": "/nonexistent/agy"})
    assert not answers.binary_found("api", {"GEMINI_API_KEY": "k"})  # no binary to boot


async def test_versions_outside_the_handshake_get_what_the_sdk_negotiates(tmp_path: Path) -> None:
    answers = shipped()
    server = relay_server(settings_for(frozenset(), False, tmp_path))
    for version in ("2026-07-28", "1999-01-01", "", "latest"):
        params = {**PLAIN, "protocolVersion": version}
        found = answers.for_initialize("gemini:core", params)
        assert found is not None
        assert (await sdk_answers(server, params))[0]["protocolVersion"] == found[0]["protocolVersion"]


ANSWERED: list[dict[str, Any]] = [
    CODEX,
    PLAIN,
    ROOTS,
    {**PLAIN, "clientInfo": {"name": "c", "version": "1", "title": "C", "websiteUrl": "https://c.example"}},
    {**PLAIN, "capabilities": {"experimental": {"a": {"b": {"c": True}}}, "elicitation": {"form": {}}}},
    {**PLAIN, "protocolVersion": "2031-01-01"},
]
LEFT_TO_THE_SDK: list[Any] = [
    None,
    [],
    {},
    {"capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
    {**PLAIN, "protocolVersion": 5},
    {**PLAIN, "capabilities": None},
    {**PLAIN, "capabilities": {"roots": "x"}},
    {**PLAIN, "capabilities": {"roots": {"listChanged": "yes"}}},
    {**PLAIN, "capabilities": {"experimental": 5}},
    {**PLAIN, "clientInfo": {"name": "c"}},
    {**PLAIN, "clientInfo": {"name": "c", "version": 1}},
    {**PLAIN, "clientInfo": {"name": "c", "version": "1", "icons": 5}},
    {**PLAIN, "clientInfo": "c"},
    {**PLAIN, "extra": 1},
    {**PLAIN, "_meta": 5},
    {**PLAIN, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
]


@pytest.mark.parametrize("params", ANSWERED, ids=[json.dumps(p)[:60] for p in ANSWERED])
async def test_params_the_front_answers_are_params_the_sdk_accepts(params: dict[str, Any], tmp_path: Path) -> None:
    assert shipped().for_initialize("gemini:core", params) is not None
    server = relay_server(settings_for(frozenset(), False, tmp_path))
    (line,) = await sdk_lines(server, [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}])
    assert "result" in json.loads(line), line


@pytest.mark.parametrize("params", LEFT_TO_THE_SDK, ids=[json.dumps(p)[:60] for p in LEFT_TO_THE_SDK])
def test_params_of_other_shapes_are_left_to_the_sdk(params: Any) -> None:
    assert not acceptable(params)
    assert shipped().for_initialize("gemini:core", params) is None


@pytest.mark.parametrize("params", [CODEX, PLAIN, ROOTS])
def test_what_real_clients_send_is_answered_by_the_front(params: dict[str, Any]) -> None:
    assert acceptable(params)
    assert shipped().for_initialize("gemini:core", params) is not None


async def test_the_sdks_lines_are_the_fronts_lines_byte_for_byte(tmp_path: Path) -> None:
    answers = shipped()
    server = relay_server(settings_for(frozenset({Toolset.REVIEW}), False, tmp_path))
    init_line, tools_line = await sdk_lines(server, handshake(CODEX, request_id="req-1"))
    found = answers.for_initialize("gemini:core+review", CODEX)
    assert found is not None
    assert init_line == wire({"jsonrpc": "2.0", "id": "req-1", "result": found[0]})
    assert tools_line == wire({"jsonrpc": "2.0", "id": 1, "result": found[1]})


def wire(message: dict[str, Any]) -> str:
    """A line as the front writes it."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_a_missing_or_foreign_file_means_no_front_answers(tmp_path: Path) -> None:
    assert FrontAnswers.load(tmp_path / "absent.json") is None
    for body in ("{torn", '{"format": 99}', "[" * 100_000, '{"format": 1}'):
        (tmp_path / "bad.json").write_text(body)
        assert FrontAnswers.load(tmp_path / "bad.json") is None


def _worlds(tmp_path: Path) -> list[dict[str, str]]:
    """Environments the automatic choice tells apart: each binary on PATH or at its variable (or a variable naming
    a missing file), keys set or blank."""
    agy_dir, gemini_dir, empty = tmp_path / "agy-bin", tmp_path / "gemini-bin", tmp_path / "empty"
    agy, gemini = shell_script(agy_dir / "agy"), shell_script(gemini_dir / "gemini")
    empty.mkdir()
    paths = [str(empty), str(agy_dir), str(gemini_dir), f"{gemini_dir}:{agy_dir}"]
    extras: list[dict[str, str]] = [
        {},
        {"GEMINI_API_KEY": "k"},
        {"GOOGLE_API_KEY": " "},
        {"AGY_CLI_PATH": str(agy)},
        {"AGY_CLI_PATH": str(tmp_path / "missing")},
        {"GEMINI_CLI_PATH": str(gemini), "GOOGLE_API_KEY": "k"},
        {"GEMINI_CLI_PATH": "gemini"},
    ]
    return [{"HOME": str(tmp_path), "PATH": p, **extra} for p in paths for extra in extras]


def test_the_fronts_automatic_choice_is_the_registrys(tmp_path: Path) -> None:
    answers = shipped()
    checked = {variable for entry in entries() for variable in entry.start_checks}
    for env in _worlds(tmp_path):
        chosen = BackendRegistry(Settings.from_env(env), ProbeCache()).select().backend
        named = answers.backend(None, env)
        # None: a variable a backend checks at start is set (a missing AGY_CLI_PATH), which the SDK's answer says.
        assert named == chosen or (named is None and checked & set(env)), env


def test_the_fronts_state_dir_check_makes_what_the_job_store_makes(tmp_path: Path) -> None:
    from gemini_relay.jobs.store.file_store import FileJobStore
    from gemini_relay.transports.front_answers import usable_state_dir

    assert usable_state_dir(tmp_path / "front")
    FileJobStore(tmp_path / "store")
    made = {p.relative_to(tmp_path / "front") for p in (tmp_path / "front").rglob("*")}
    assert made == {p.relative_to(tmp_path / "store") for p in (tmp_path / "store").rglob("*")}
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    assert not usable_state_dir(blocked / "state")


def test_a_variable_a_backend_checks_at_start_leaves_the_answer_to_the_sdk(tmp_path: Path) -> None:
    answers = shipped()
    agy = tmp_path / "agy"
    agy.write_text("#!/bin/sh\n", encoding="utf-8")
    agy.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    assert answers.backend("gemini", env) == "gemini"
    assert answers.backend("gemini", {**env, "AGY_CLI_PATH": "/nonexistent/agy"}) is None
    assert answers.backend(None, {**env, "AGY_CLI_PATH": "/nonexistent/agy"}) is None
    assert answers.backend("gemini", {**env, "AGY_PRINT_TIMEOUT": "soon"}) is None  # the front cannot vouch for it
    assert answers.backend(None, {**env, "AGY_CLI_PATH": str(agy)}) == "agy"

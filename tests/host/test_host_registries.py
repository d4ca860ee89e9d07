"""The host's registries: every project of a user shares one warm Gemini CLI (a session carries its own cwd)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from gemini_relay.backends.gemini_cli.warm import GeminiBackend
from gemini_relay.core.events import AgentEvent, ToolResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.relay_host.warm_pools import WarmPools
from tests.backends.gemini_cli.acp.conftest import BOUND, AcpWorld, _world  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.anyio


@pytest.fixture
def world(tmp_path: Path) -> Iterator[AcpWorld]:
    yield from _world(tmp_path)


async def gemini_of(registries: WarmPools, env: dict[str, str], project: Path) -> GeminiBackend:
    backend = registries.get(env, project).backends[BackendName("gemini")]
    assert isinstance(backend, GeminiBackend)
    with anyio.fail_after(BOUND):
        while backend.pool is None:  # opened in a task of the host's pool group; no event tells the caller
            await anyio.sleep(0.02)
    return backend


async def run(backend: GeminiBackend, spec: RunSpec) -> list[AgentEvent]:
    with anyio.fail_after(BOUND * 3):
        return [event async for event in backend.run(spec)]


async def test_five_projects_of_one_user_are_served_by_one_warm_cli_each_in_its_own_folder(world: AcpWorld) -> None:
    projects = [world.base / f"project{n}" for n in range(5)]
    registries = WarmPools()
    answers: list[list[AgentEvent]] = []
    pools: list[object] = []
    sent: list[str] = []  # what the CLI sent the API during each project's ask
    async with anyio.create_task_group() as tg:
        registries.serve_pools(tg)
        try:
            for project in projects:
                project.mkdir()
                (project / "where.txt").write_text(f"this is {project.name}\n", encoding="utf-8")
                env = {**world.env, "GEMINI_RELAY_PROJECT_ROOT": str(project), "GEMINI_MCP_BACKEND": "gemini"}
                backend = await gemini_of(registries, env, project)
                pools.append(backend.pool)
                prompt = "[[fake:tool_call:where.txt]] read it"
                world.api.clear_requests()
                answers.append(await run(backend, RunSpec(tool="gemini-ask", prompt=prompt, cwd=project)))
                sent.append(json.dumps([r.body for r in world.api.requests]))
            cli_processes = world.cli_processes()
            live = backend.pool.processes if backend.pool is not None else []
        finally:
            registries.close_all()
    assert all(pool is pools[0] for pool in pools)  # one pool for the five projects ...
    assert len(live) == 1 and set(live) <= set(cli_processes)  # ... one warm CLI, the only CLI running
    for project, events, bodies in zip(projects, answers, sent, strict=True):
        results = [e for e in events if isinstance(e, ToolResult)]
        assert results and results[0].ok, events
        # Each session's file tool read in that session's folder: the model was given that project's file.
        assert f"this is {project.name}" in bodies
        assert all(f"this is {other.name}" not in bodies for other in projects if other != project)

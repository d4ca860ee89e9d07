"""What the calling model sees, for every tool: Claude Code, VS Code and Codex hand their model only
`JSON.stringify(structuredContent)` when a result has it, so wherever a reply carries structuredContent, everything
its text says is in there too — the answer, each ⚠️ notice, the 🧵 conversation id, the next step, the job's id and
state — and it validates against the tool's schema. A reply without structuredContent reaches the model as its text.

Every tool definition of every toolset has a recipe here; a new tool without one fails the test that says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from mcp import Client

from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import RunFailed
from gemini_relay.format import NOTICE_MARKER, THREAD_MARKER
from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.common.output_schemas import ANSWER_SCHEMA, MEDIA
from gemini_relay.tools.registry import TOOLSETS
from tests.fakes.fake_gemini_api import TINY_PNG, FakeGeminiApi
from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory
from tests.inmemory.scripted import Script, answer

pytestmark = pytest.mark.anyio

EVERY_TOOLSET = "jobs,review,media"
PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ADA = '{"name": "Ada"}'
_WORD = re.compile(r"[\w$][\w.:/@$+-]*\w|\w")
Recipe = Callable[[Client, InMemory], Awaitable[types.CallToolResult]]


def _call(tool: str, args: dict[str, Any], *answers: str) -> Recipe:
    """Call `tool` once; the scripted backend answers `answers` in turn (then echoes the prompt)."""

    async def recipe(client: Client, relay: InMemory) -> types.CallToolResult:
        relay.backend.queue(*(answer(a) for a in answers))
        return await client.call_tool(tool, args)

    return recipe


async def _job(client: Client) -> str:
    started = await client.call_tool("gemini-run", {"prompt": "a job"})
    job_id: str = (started.structured_content or {})["job_id"]
    await client.call_tool("gemini-wait", {"jobId": job_id})
    return job_id


def _after_job(tool: str) -> Recipe:
    async def recipe(client: Client, relay: InMemory) -> types.CallToolResult:
        return await client.call_tool(tool, {"jobId": await _job(client)})

    return recipe


async def _failed_job(client: Client, relay: InMemory) -> types.CallToolResult:
    failure = RunFailed("the upstream broke", partial_text="half an", retryable=True, recovery="Run it again.")
    relay.backend.queue(Script(("half an",), error=failure))
    return await client.call_tool("gemini-wait", {"jobId": await _job(client)})


async def _running_job(client: Client, relay: InMemory) -> types.CallToolResult:
    release = anyio.Event()
    relay.backend.queue(Script(("still going",), hold=release))
    started = await client.call_tool("gemini-run", {"prompt": "a long job"})
    job_id = (started.structured_content or {})["job_id"]
    status = await client.call_tool("gemini-status", {"jobId": job_id})
    release.set()
    await client.call_tool("gemini-wait", {"jobId": job_id})
    return status


async def _jobs(client: Client, relay: InMemory) -> types.CallToolResult:
    await _job(client)
    return await client.call_tool("gemini-jobs", {})


async def _second_chunk(client: Client, relay: InMemory) -> types.CallToolResult:
    relay.backend.queue(answer("word " * 6000))
    first = await client.call_tool("gemini-ask", {"prompt": "a long answer"})
    assert first.meta is not None, first.content
    return await client.call_tool("gemini-fetch-chunk", {"cacheKey": first.meta["chunkCacheKey"], "chunkIndex": 2})


async def _usage(client: Client, relay: InMemory) -> types.CallToolResult:
    await client.call_tool("gemini-image-edit", {"prompt": "a red square"})
    return await client.call_tool("gemini-usage", {})


async def _uploaded(client: Client, relay: InMemory) -> types.CallToolResult:
    (relay.project / "photo.png").write_bytes(TINY_PNG)
    return await client.call_tool("gemini-files", {"action": "upload", "path": "photo.png"})


async def _async_generation(client: Client, relay: InMemory) -> types.CallToolResult:
    started = await client.call_tool("gemini-image-edit", {"prompt": "a blue square", "async": True})
    await client.call_tool("gemini-wait", {"jobId": (started.structured_content or {})["job_id"]})  # ends in the test
    return started


async def _conversations(client: Client, relay: InMemory) -> types.CallToolResult:
    await client.call_tool("gemini-ask", {"prompt": "hello"})
    return await client.call_tool("gemini-conversations", {})


def _isolated(then: str | None = None) -> Recipe:
    """An isolated gemini-ask whose agent writes a file, then (`then`) gemini-apply or gemini-discard of its branch."""

    async def recipe(client: Client, relay: InMemory) -> types.CallToolResult:
        GitRepo.create(relay.project, {"a.py": "x = 1\n"})

        def agent_edits(spec: RunSpec) -> None:
            (spec.cwd / "a.py").write_text("x = 2\n", encoding="utf-8")

        relay.backend.on_run = agent_edits
        asked = await client.call_tool("gemini-ask", {"prompt": "edit", "isolation": "worktree"})
        if then is None:
            return asked
        assert asked.meta is not None, asked.content
        return await client.call_tool(then, {"branch": asked.meta["worktree"]["branch"]})

    return recipe


# Each tool's calls: (variant, recipe). A variant per shape of answer (plain, with usage, as data, a notice, a list).
async def _consensus_with_a_failure(client: Client, relay: InMemory) -> types.CallToolResult:
    relay.backend.by_model["flash"] = Script(error=RunFailed("flash is overloaded"))
    return await client.call_tool("gemini-consensus", {"prompt": "ship it?"})


RECIPES: dict[str, list[tuple[str, Recipe]]] = {
    "gemini-ask": [
        ("plain", _call("gemini-ask", {"prompt": "hello"})),
        ("usage", _call("gemini-ask", {"prompt": "hello", "includeUsage": True})),
        ("json", _call("gemini-ask", {"prompt": "who?", "jsonSchema": PERSON, "maxResponseLength": 5}, ADA)),
        ("changeMode", _call("gemini-ask", {"prompt": "edit", "changeMode": True})),
        ("isolated", _isolated()),
    ],
    "gemini-apply": [("applied", _isolated("gemini-apply"))],
    "gemini-discard": [("removed", _isolated("gemini-discard"))],
    "gemini-plan": [("usage", _call("gemini-plan", {"task": "a plan"}))],
    "gemini-image": [("api", _call("gemini-image", {"prompt": "a red square"}))],
    "gemini-models": [("listing", _call("gemini-models", {}))],
    "gemini-doctor": [("report", _call("gemini-doctor", {}))],
    "gemini-brainstorm": [("ideas", _call("gemini-brainstorm", {"prompt": "names for a cat"}))],
    "gemini-fetch-chunk": [("second", _second_chunk)],
    "gemini-conversations": [("none", _call("gemini-conversations", {})), ("table", _conversations)],
    "gemini-cancel": [("all", _call("gemini-cancel", {}))],
    "gemini-ping": [("pong", _call("gemini-ping", {}))],
    "gemini-help": [("help", _call("gemini-help", {}))],
    "gemini-timeout-test": [("held", _call("gemini-timeout-test", {"duration": 10}))],
    "gemini-run": [
        ("started", _call("gemini-run", {"prompt": "who?", "jsonSchema": PERSON, "maxResponseLength": 5}, ADA)),
    ],
    "gemini-status": [("done", _after_job("gemini-status")), ("running", _running_job)],
    "gemini-wait": [("done", _after_job("gemini-wait")), ("failed", _failed_job)],
    "gemini-jobs": [("table", _jobs)],
    "gemini-assess": [("diff", _call("gemini-assess", {}))],
    "gemini-review": [("scan", _call("gemini-review", {"depth": "scan"}))],
    "gemini-search": [("answer", _call("gemini-search", {"query": "what is MCP"}))],
    "gemini-structured": [("json", _call("gemini-structured", {"prompt": "who?", "schema": PERSON}, ADA))],
    "gemini-consensus": [
        ("panel", _call("gemini-consensus", {"prompt": "ship it?"})),
        ("one failed", _consensus_with_a_failure),
        ("dry run", _call("gemini-consensus", {"prompt": "ship it?", "dryRun": True})),
        ("async", _call("gemini-consensus", {"prompt": "ship it?", "async": True})),
    ],
    "gemini-image-edit": [
        ("done", _call("gemini-image-edit", {"prompt": "a red square"})),
        ("async", _async_generation),
    ],
    "gemini-image-set": [("set", _call("gemini-image-set", {"masterPrompt": "a fox", "scenes": ["runs"]}))],
    "gemini-image-interact": [("turn", _call("gemini-image-interact", {"input": "a lighthouse"}))],
    "gemini-video": [("clip", _call("gemini-video", {"prompt": "waves"}))],
    "gemini-music": [("clip", _call("gemini-music", {"prompt": "calm piano"}))],
    "gemini-files": [("upload", _uploaded), ("list", _call("gemini-files", {"action": "list"}))],
    "gemini-media-models": [("listing", _call("gemini-media-models", {}))],
    "gemini-usage": [("report", _usage)],
    "gemini-quota": [("no quota on this backend", _call("gemini-quota", {}))],
}


def definitions() -> dict[str, AnyTool]:
    """Every tool definition of every toolset, once (a toolset's own gemini-cancel as `gemini-cancel@jobs`)."""
    found: dict[str, AnyTool] = {}
    for toolset, tools in TOOLSETS.items():
        for tool in tools:
            key = tool.name if tool.name not in found or found[tool.name] is tool else f"{tool.name}@{toolset}"
            found.setdefault(key, tool)
    return found


def cases() -> Iterator[Any]:
    for key, tool in definitions().items():
        for variant, recipe in RECIPES.get(tool.name, []):
            marks = [pytest.mark.spawns_git] if tool.name in GIT_TOOLS else []
            yield pytest.param(key, tool, recipe, id=f"{key}-{variant}", marks=marks)


GIT_TOOLS = ("gemini-assess", "gemini-review", "gemini-ask", "gemini-apply", "gemini-discard")  # a git repository


def test_every_tool_has_a_recipe() -> None:
    assert sorted({tool.name for tool in definitions().values()} - set(RECIPES)) == []


@pytest.fixture
def api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi() as fake:
        yield fake


def _toolsets(tool: AnyTool) -> str:
    """The toolsets a definition is served with: all of them, unless a toolset's definition would take its place
    (the default gemini-cancel)."""
    replaced = any(t.name == tool.name and t is not tool for ts in TOOLSETS.values() for t in ts)
    return "" if tool.toolset is None and replaced else EVERY_TOOLSET


@pytest.mark.parametrize(("key", "tool", "recipe"), list(cases()))
async def test_what_the_model_is_given_holds_everything_the_text_says(
    relay: InMemory, api: FakeGeminiApi, key: str, tool: AnyTool, recipe: Recipe
) -> None:
    world = {
        "GEMINI_RELAY_TOOLSETS": _toolsets(tool),
        "GEMINI_MCP_TEST_TOOLS": "1",
        "GEMINI_API_KEY": "dummy",  # media and gemini-image go to the fake Gemini API (threads, no process)
        "GOOGLE_GEMINI_BASE_URL": api.base_url,
    }
    if tool.name in GIT_TOOLS:
        world["PATH"] = "/usr/bin:/bin"
    if tool.name in ("gemini-assess", "gemini-review"):
        GitRepo.create(relay.project, {"a.py": "x = 1\n"})
        (relay.project / "a.py").write_text("x = 2\n", encoding="utf-8")
    async with relay.client(**world) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        result = await recipe(client, relay)
    assert_complete_for_the_model(result, schemas.get(tool.name))


def assert_complete_for_the_model(result: types.CallToolResult, schema: dict[str, Any] | None) -> None:
    text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
    data = result.structured_content
    if data is None:
        return  # the model is given the text blocks themselves
    assert not result.is_error
    assert next(iter(data)) == "text", data  # first: a client printing the JSON shows the reply first
    valid(schema or (MEDIA if "job_id" in data or "files" in data else ANSWER_SCHEMA), data)
    leaves = list(_leaves(data))
    haystack = "\n".join(leaves).lower()
    for line in text.splitlines():
        if line.startswith(NOTICE_MARKER):
            notice = line.removeprefix(NOTICE_MARKER).strip()
            assert any(notice in leaf for leaf in leaves), (notice, data)
        elif line.startswith(THREAD_MARKER):
            thread = line.removeprefix(THREAD_MARKER).split()[0]
            assert thread in leaves or any(thread in leaf for leaf in leaves), (thread, data)
        missing = [w for w in _WORD.findall(line) if w.lower() not in haystack]
        assert not missing, (missing, line, data)


def valid(schema: dict[str, Any], data: Any) -> None:
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(data)]
    assert not errors, (errors, data)


def _leaves(value: Any, key: str = "") -> Iterator[str]:
    """Every key and scalar of `value`, as text (numbers and booleans as JSON writes them)."""
    if key:
        yield key
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str):
        yield value
    else:
        yield json.dumps(value)


async def test_a_json_answer_gives_the_model_the_conversation_to_continue(relay: InMemory) -> None:
    relay.backend.queue(answer(ADA), answer(ADA))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "who?", "jsonSchema": PERSON})
        thread = (first.structured_content or {})["conversationId"]
        await client.call_tool("gemini-ask", {"prompt": "again", "jsonSchema": PERSON, "conversationId": thread})
    assert "🧵" not in "".join(b.text for b in first.content if isinstance(b, types.TextContent))  # as 1.2.0
    assert thread and relay.backend.specs[1].conversation_id == thread


async def test_the_first_replys_backend_notice_reaches_the_model_too(relay: InMemory) -> None:
    async with relay.client(GEMINI_MCP_BACKEND="") as client:  # the automatic choice says why, once
        result = await client.call_tool("gemini-ask", {"prompt": "hello", "includeUsage": True})
    data = result.structured_content or {}
    assert data["text"].startswith(f"{NOTICE_MARKER} Using the gemini backend (Gemini CLI) because"), data
    assert_complete_for_the_model(result, None)

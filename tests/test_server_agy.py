"""The tools on the agy backend, through the MCP client over stdio and the project's fake agy. With the backend unset
and no agy, the Gemini CLI is chosen and said: tests/inmemory/test_first_reply.py."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.harness import (
    Relay,
    agy_log,
    agy_runs,
    install_fake_agy,
    module_event_loop,
    shared_server,
    wait_agy_runs,
    wait_no_cli_processes,
)
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+) ")
LEAKS = ("my-gcp-proj-4711", "europe-west4")  # the fake leaks these in AGY_ERROR short_error


# Most cases here need the same world (the fake agy, default settings): they share one server, a start each saved.
# Each keeps its own prompts, conversations and files; a case that changes the env or the fake has a world of its own.
anyio_backend = module_event_loop()
agy_world, agy_client = shared_server("agy", fake_agy=True)


async def test_ask_on_agy_answers_with_a_conversation_id_that_continues(agy_world: Relay, agy_client: Client) -> None:
    first = await agy_client.call_tool("gemini-ask", {"prompt": "say hi"})
    match = THREAD.search(text_of(first))
    assert match is not None, text_of(first)
    second = await agy_client.call_tool("gemini-ask", {"prompt": "again", "conversationId": match.group(1)})
    assert text_of(first).startswith("Gemini response:\nHello from fake agy! You said: say hi\n\n🧵 conversationId: ")
    assert f"🧵 conversationId: {match.group(1)} " in text_of(second)
    argvs = [[str(a) for a in e["argv"]] for e in agy_log(agy_world) if e.get("event") == "start"]  # type: ignore[attr-defined]
    runs = [argv for argv in argvs if "--input-format" in argv]
    assert "--conversation" in runs[-1] and "--disable-slash-commands" in runs[-1]
    assert not any("say hi" in arg for argv in argvs for arg in argv)  # the prompt went on stdin


async def test_a_quota_wall_is_a_quota_error_that_keeps_the_reset_time(agy_world: Relay, agy_client: Client) -> None:
    result = await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:quota]] hi"})
    assert result.is_error
    assert "Resets in 3h46m46s" in text_of(result)
    assert "quota" in text_of(result).lower()


async def test_a_background_abort_success_is_reported_as_the_failure_it_is(
    agy_world: Relay, agy_client: Client
) -> None:
    result = await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:background_abort]] run the checks"})
    assert result.is_error
    text = text_of(result)
    assert "background" in text and "foreground" in text
    assert "[Partial response — the run did not finish]" in text


async def test_a_print_timeout_marks_the_text_partial(agy_world: Relay, agy_client: Client) -> None:
    result = await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:print_timeout]] long task"})
    assert not result.is_error
    assert text_of(result).startswith("⚠️ agy's --print-timeout expired")


async def test_agys_own_refusal_reaches_the_caller_verbatim(agy_world: Relay, agy_client: Client) -> None:
    result = await agy_client.call_tool("gemini-ask", {"prompt": "hi", "model": "gemini-9-ultra"})
    assert result.is_error
    assert "invalid model selection" in text_of(result) and "Available models:" in text_of(result)


async def test_no_project_or_region_reaches_the_client_or_the_log(agy_world: Relay, agy_client: Client) -> None:
    result = await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:model_not_found]] zebra-crossing-7731"})
    assert result.is_error
    for leak in LEAKS:
        assert leak not in text_of(result)
        assert leak not in agy_world.logs()
    assert "zebra-crossing-7731" not in agy_world.logs()


async def test_a_hung_agy_is_stopped_at_the_deadline_with_no_process_left(agy_relay: Relay) -> None:
    async with agy_relay.client(GEMINI_MCP_TIMEOUT="0.1") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[agy:ignore_sigterm_with_grandchild]] x"})
        await wait_no_cli_processes(agy_relay.home)
    assert result.is_error
    assert text_of(result).startswith("Error executing gemini-ask: agy timed out after 6s")
    assert "Thinking about it" in text_of(result)


async def test_gemini_cancel_stops_a_queued_and_a_running_agy_call(agy_world: Relay, agy_client: Client) -> None:
    texts: list[str] = []
    before = agy_runs(agy_world)
    async with anyio.create_task_group() as tg:

        async def hung() -> None:
            texts.append(text_of(await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:hang]] x"})))

        tg.start_soon(hung)
        tg.start_soon(hung)  # agy runs one at a time: this one waits in the queue
        await wait_agy_runs(agy_world, before + 1)
        cancelled = await agy_client.call_tool("gemini-cancel", {})
    await wait_no_cli_processes(agy_world.home)
    assert text_of(cancelled) == "Cancelled 2 run(s)."
    assert len(texts) == 2
    assert all(t.startswith("Error executing gemini-ask: gemini-ask was cancelled by gemini-cancel") for t in texts)


async def test_models_lists_agy_ids_with_labels(agy_world: Relay, agy_client: Client) -> None:
    (agy_world.project / ".agents" / "agents" / "reviewer").mkdir(parents=True)
    (agy_world.project / ".agents" / "agents" / "reviewer" / "agent.md").write_text("# reviewer\n", encoding="utf-8")
    result = await agy_client.call_tool("gemini-models", {})
    text = text_of(result)
    assert "- gemini-3.1-pro-high — Gemini 3.1 Pro (High)" in text
    assert "pro → gemini-3.1-pro-high" in text
    assert "⚠️" not in text
    # and agy's agents of this project, by name
    assert "Agents — pass the name as `agent`:\n- reviewer" in text
    assert result.structured_content is not None and result.structured_content["agents"] == ["reviewer"]


async def test_models_lists_the_agents_of_the_cwd_it_is_given_like_gemini_runs_cwd(
    agy_world: Relay, agy_client: Client
) -> None:
    other = agy_world.project / "service"
    (other / ".agents" / "agents" / "migrator").mkdir(parents=True)
    (other / ".agents" / "agents" / "migrator" / "agent.md").write_text("# migrator\n", encoding="utf-8")
    root = await agy_client.call_tool("gemini-models", {})
    there = await agy_client.call_tool("gemini-models", {"cwd": "service"})
    missing = await agy_client.call_tool("gemini-models", {"cwd": "nowhere"})
    assert root.structured_content is not None and "migrator" not in root.structured_content["agents"]
    assert there.structured_content is not None and there.structured_content["agents"] == ["migrator"]
    assert "Agents — pass the name as `agent`:\n- migrator" in text_of(there)
    assert missing.is_error and "cwd: 'nowhere' does not exist" in text_of(missing)


async def test_models_falls_back_to_the_built_in_list_with_a_notice(agy_relay: Relay) -> None:
    install_fake_agy(agy_relay.base / "bin", agy_relay.base / "fake-agy.log", models_exit="1")
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-models", {})
    assert text_of(result).startswith("⚠️ agy could not list its models")
    assert "gemini-3.8-flash-high" in text_of(result)


async def test_doctor_on_agy_shows_login_and_quota_levels(agy_world: Relay, agy_client: Client) -> None:
    seen = len(agy_log(agy_world))
    result = await agy_client.call_tool("gemini-doctor", {})
    text = text_of(result)
    assert "### Login & Quota" in text
    assert "Gemini Models: ok" in text
    assert "Claude and GPT models: critical" in text
    assert "Verdict: ✅ System Ready" in text
    probes = [e["argv"] for e in agy_log(agy_world)[seen:] if e.get("event") == "start"]
    assert ["--output-format", "json", "-p", "/usage"] in probes


async def test_conversations_lists_agy_threads(agy_world: Relay, agy_client: Client) -> None:
    first = await agy_client.call_tool("gemini-ask", {"prompt": "remember the parrot"})
    listing = await agy_client.call_tool("gemini-conversations", {})
    match = THREAD.search(text_of(first))
    assert match is not None
    assert match.group(1) in text_of(listing)


async def test_help_is_agys_help(agy_world: Relay, agy_client: Client) -> None:
    result = await agy_client.call_tool("gemini-help", {})
    assert "--output-format" in text_of(result) and "--conversation" in text_of(result)


async def test_image_is_saved_inside_the_project_and_embedded(agy_world: Relay, agy_client: Client) -> None:
    result = await agy_client.call_tool(
        "gemini-image", {"prompt": "[[agy:image]] a red square", "outputPath": "art/square.png"}
    )
    escape = await agy_client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "../out.png"})
    keyed = await agy_client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "idempotencyKey": "k"})
    text = text_of(result)
    target = (agy_world.project / "art" / "square.png").resolve()
    assert not result.is_error, text
    assert f"]({target.as_uri()})" in text and f"Saved to: {target}" in text
    assert target.read_bytes().startswith(b"\x89PNG")
    assert escape.is_error and not (agy_world.base / "out.png").exists()
    # the media job controls are the Gemini API's: agy refuses them, saying so
    assert keyed.is_error
    assert "async, maxWaitMs and idempotencyKey apply when the Gemini API makes the image" in text_of(keyed)


async def test_with_the_backend_unset_agy_on_path_is_chosen_and_the_first_reply_says_so(relay: Relay) -> None:
    bin_dir = relay.base / "bin"
    install_fake_agy(bin_dir, relay.base / "fake-agy.log")
    path = f"{bin_dir}:{relay.env['PATH']}"
    async with relay.client(GEMINI_MCP_BACKEND=None, PATH=path) as client:
        first = await client.call_tool("gemini-ping", {})
        second = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert text_of(first).startswith(
        "⚠️ Using the agy backend (Antigravity CLI) because GEMINI_MCP_BACKEND is unset and agy was found at "
    )
    assert text_of(first).endswith("\n\nPong!")
    assert text_of(second).startswith("Gemini response:\nHello from fake agy!")


async def test_an_explicit_agy_path_that_does_not_exist_is_explained_by_the_server_it_starts(relay: Relay) -> None:
    missing = str(relay.base / "no" / "agy")
    said = f"AGY_CLI_PATH='{missing}' is missing or not executable"
    async with relay.client(AGY_CLI_PATH=missing, GEMINI_MCP_BACKEND="agy") as client:
        instructions = client.instructions or ""
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert said in instructions
    assert result.is_error and said in text_of(result)
    assert f"gemini-relay: {said}" in relay.stderr()  # and on stderr, the client's log


async def test_a_missing_agy_fails_calls_with_the_fix_but_serves_discovery(relay: Relay) -> None:
    empty = Path(relay.base / "empty-bin")
    empty.mkdir()
    async with relay.client(GEMINI_MCP_BACKEND="agy", PATH=f"{empty}:/usr/bin:/bin") as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert len(tools) == 11
    assert result.is_error and "agy (the Antigravity CLI) was not found on PATH" in text_of(result)

"""gemini-ask's packed `files`, dryRun and outputFile through the real server, in memory: on a CLI backend (the
scripted one: no key, so the labelled estimate) and on the API backend against the emulator (its countTokens counts
three characters a token, so the answer's count is visibly the API's)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from mcp.types import CallToolResult

from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.core.tokens import TokenMethod
from gemini_relay.tools.common.output_schemas import ANSWER_SCHEMA
from tests.fakes.fake_gemini_api import CHARS_PER_COUNTED_TOKEN, FakeGeminiApi
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script, answer

pytestmark = pytest.mark.anyio


@pytest.fixture
def api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi() as fake:
        yield fake


def api_world(api: FakeGeminiApi) -> dict[str, str]:
    return {"GEMINI_MCP_BACKEND": "api", "GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": api.base_url}


def generate_requests(api: FakeGeminiApi) -> list[str]:
    return [r.path for r in api.requests if "enerateContent" in r.path]


def project_files(relay: InMemory) -> None:
    src = relay.project / "src"
    src.mkdir()
    (src / "small.py").write_text("a = 1\n", encoding="utf-8")
    (src / "mid.py").write_text("b = 2\n" * 20, encoding="utf-8")
    (src / "big.py").write_text("c = 3\n" * 400, encoding="utf-8")
    (relay.project / "logo.png").write_bytes(b"\x89PNG\x00\x00")


async def test_on_a_cli_backend_packed_files_go_with_the_prompt_and_the_answer_says_estimated_and_left_out(
    relay: InMemory,
) -> None:
    project_files(relay)
    relay.backend.queue(answer("Read them."))
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "review", "files": ["src/*.py", "*.png"], "tokenBudget": 200}
        )
    text = text_of(result)
    assert not result.is_error, text
    sent = relay.backend.specs[0].prompt
    assert "BEGIN FILE: src/small.py" in sent and "BEGIN FILE: src/mid.py" in sent and "big.py" not in sent
    assert "Context: 2 file(s)" in text and TokenMethod.ESTIMATED.label in text
    assert "src/big.py (over the token budget" in text and "logo.png (binary)" in text
    context = (result.meta or {})["context"]
    assert context["method"] == "estimated" and context["tokens"] <= 200 == context["budget"]
    assert {"path": "src/big.py", "reason": "over the token budget"} in context["leftOut"]


async def test_the_caller_s_order_gives_the_budget_to_the_first_file(relay: InMemory) -> None:
    project_files(relay)
    relay.backend.queue(answer("ok"))
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask",
            {"prompt": "p", "files": ["src/big.py", "src/small.py"], "tokenBudget": 700, "packOrder": "given"},
        )
    assert not result.is_error, text_of(result)
    assert (result.meta or {})["context"]["files"] == ["src/big.py", "src/small.py"]
    relay.backend.queue(answer("ok"))
    async with relay.client() as client:
        smallest = await client.call_tool(
            "gemini-ask", {"prompt": "p", "files": ["src/big.py", "src/small.py"], "tokenBudget": 600}
        )
    assert (smallest.meta or {})["context"]["files"] == ["src/small.py"]


@pytest.mark.parametrize("entry", ["../*", "/etc/*.conf", "~/.ssh/*"])
async def test_a_files_glob_leaving_the_project_is_refused_and_nothing_runs(relay: InMemory, entry: str) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "p", "files": [entry]})
    assert result.is_error and "files:" in text_of(result) and "refusing" in text_of(result)
    assert relay.backend.specs == []


async def test_an_empty_files_entry_is_refused(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "p", "files": [" "]})
    assert result.is_error and "files: an entry is empty" in text_of(result)


async def test_a_dry_run_on_a_cli_backend_counts_by_estimate_and_runs_nothing(relay: InMemory) -> None:
    project_files(relay)
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "review", "files": ["src"], "dryRun": True, "model": "gemini-2.5-pro"}
        )
    text = text_of(result)
    assert not result.is_error, text
    assert relay.backend.specs == []
    assert text.startswith("⚠️ Context:") and "Dry run: nothing was sent to the model." in text
    dry = (result.structured_content or {})["dryRun"]
    assert dry["method"] == "estimated" and dry["promptTokens"] > 0 and dry["model"] == "gemini-2.5-pro"
    assert dry["estimatedInputUsd"] is not None and "Estimated input cost on gemini-2.5-pro" in text
    Draft202012Validator(ANSWER_SCHEMA).validate(result.structured_content)
    assert (result.structured_content or {})["text"] == text  # the model reads the notices too


async def test_on_the_api_backend_the_context_is_counted_by_the_api_and_stays_within_budget(
    relay: InMemory, api: FakeGeminiApi
) -> None:
    project_files(relay)
    async with relay.client(**api_world(api)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "review", "files": ["src/**"], "tokenBudget": 300})
    text = text_of(result)
    assert not result.is_error, text
    context = (result.meta or {})["context"]
    assert context["method"] == "counted" and context["countedFor"] == "gemini-2.5-pro"
    assert TokenMethod.COUNTED.label in text and context["tokens"] <= 300
    counted = [r for r in api.requests if r.kind == "count_tokens"]
    assert counted, "the API's countTokens was asked"
    packed = counted[-1].body["contents"][0]["parts"][0]["text"]
    assert context["tokens"] == math.ceil(len(packed) / CHARS_PER_COUNTED_TOKEN)  # not the 4-a-token estimate
    assert len(generate_requests(api)) == 1


async def test_a_dry_run_on_the_api_backend_spends_no_tokens(relay: InMemory, api: FakeGeminiApi) -> None:
    project_files(relay)
    async with relay.client(**api_world(api)) as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "review", "files": ["src/*.py"], "dryRun": True, "model": "flash"}
        )
    text = text_of(result)
    assert not result.is_error, text
    assert generate_requests(api) == []  # the emulator saw no generate request
    dry = (result.structured_content or {})["dryRun"]
    flash = GEMINI_ALIASES["flash"]  # the alias, counted and priced as the model it stands for
    assert dry["method"] == "counted" and f"counted by the API for {flash}" in text
    assert dry["model"] == flash and dry["estimatedInputUsd"] is not None
    assert [r.kind for r in api.requests] == ["count_tokens", "count_tokens"]  # the context, then the whole prompt


async def test_output_file_writes_the_answer_and_the_reply_says_where_with_a_preview(relay: InMemory) -> None:
    relay.backend.queue(answer("A long answer. " * 100))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "p", "outputFile": "out/answer.md"})
    text = text_of(result)
    assert not result.is_error, text
    written = relay.project.resolve() / "out" / "answer.md"
    assert written.read_text(encoding="utf-8") == "A long answer. " * 100
    assert f"was written to {written}" in text and "Preview:\nA long answer." in text and len(text) < 1000
    assert (result.meta or {})["outputFile"] == str(written)


async def test_output_file_refuses_to_overwrite_unless_asked_and_runs_nothing(relay: InMemory) -> None:
    existing = relay.project / "answer.md"
    existing.write_text("mine", encoding="utf-8")
    async with relay.client() as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "p", "outputFile": "answer.md"})
        assert refused.is_error and "outputFile:" in text_of(refused) and "overwrite: true" in text_of(refused)
        assert relay.backend.specs == [] and existing.read_text(encoding="utf-8") == "mine"
        relay.backend.queue(answer("new"))
        replaced = await client.call_tool("gemini-ask", {"prompt": "p", "outputFile": "answer.md", "overwrite": True})
    assert not replaced.is_error, text_of(replaced)
    assert existing.read_text(encoding="utf-8") == "new"


@pytest.mark.parametrize("target", ["../escape.md", "/tmp/escape.md", "link/escape.md", "src/"])
async def test_output_file_is_jailed_to_the_project(relay: InMemory, tmp_path: Path, target: str) -> None:
    (relay.project / "src").mkdir()
    (relay.project / "link").symlink_to(tmp_path)
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "p", "outputFile": target})
    assert result.is_error and "outputFile:" in text_of(result)
    assert relay.backend.specs == [] and not (tmp_path / "escape.md").exists()


async def test_output_file_on_the_api_backend_writes_the_api_s_answer(relay: InMemory, api: FakeGeminiApi) -> None:
    async with relay.client(**api_world(api)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hello file", "outputFile": "a.txt"})
        again = await client.call_tool("gemini-ask", {"prompt": "hello file", "outputFile": "a.txt"})
    assert not result.is_error, text_of(result)
    assert "hello file" in (relay.project / "a.txt").read_text(encoding="utf-8")
    assert again.is_error and "exists" in text_of(again)
    assert len(generate_requests(api)) == 1


async def test_an_output_file_that_appears_during_the_run_is_kept_and_the_answer_is_relayed_whole(
    relay: InMemory,
) -> None:
    release = anyio.Event()
    relay.backend.queue(Script(("The answer, kept.",), hold=release))
    result: list[CallToolResult] = []
    async with relay.client() as client, anyio.create_task_group() as tg:

        async def call() -> None:
            result.append(await client.call_tool("gemini-ask", {"prompt": "p", "outputFile": "late.md"}))

        tg.start_soon(call)
        with anyio.fail_after(10):
            await anyio.wait_all_tasks_blocked()  # the run is held: the answer is not yet written
        (relay.project / "late.md").write_text("someone else's", encoding="utf-8")
        release.set()
    text = text_of(result[0])
    assert not result[0].is_error, text
    assert (relay.project / "late.md").read_text(encoding="utf-8") == "someone else's"
    assert "nothing was written" in text and "appeared during the run" in text and "The answer, kept." in text
    assert "outputFile" not in (result[0].meta or {})

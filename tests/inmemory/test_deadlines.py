"""A run past its deadline is stopped and answers with what arrived: an ask returns its partial text, a review its
partial findings with a shallower-depth hint, and a review with nothing said is an error with that hint. The upstream
is scripted (it streams, then holds), so the partial text is there long before the deadline however busy the machine
is; the Gemini CLI's own part of the contract (it streams before it hangs) is tests/backends/conformance's."""

from __future__ import annotations

import anyio
import pytest

from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, text_of, without_receipt
from tests.inmemory.scripted import Script

pytestmark = pytest.mark.anyio
PARTIAL = "Partial answer before the stall"


def stall(*deltas: str) -> Script:
    return Script(deltas=deltas, hold=anyio.Event())  # never released: only the deadline ends it


async def test_an_ask_past_its_deadline_returns_its_partial_text(relay: InMemory) -> None:
    relay.backend.queue(stall(PARTIAL))
    async with relay.client(GEMINI_MCP_TIMEOUT="0.02") as client:  # 1.2 s
        result = await client.call_tool("gemini-ask", {"prompt": "go"})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-ask: gemini timed out after 1.2s"), text
    assert f"[Partial response — the run did not finish]\n{PARTIAL}" in text


def _repo_with_change(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n", "README.md": "readme\n"})
    (relay.project / "app.py").write_text("x = 2\n", encoding="utf-8")


@pytest.mark.spawns_git
async def test_a_timed_out_review_returns_its_partial_findings_with_a_shallower_depth_hint(relay: InMemory) -> None:
    _repo_with_change(relay)
    relay.backend.queue(stall("Finding 1: ", PARTIAL))
    async with relay.client(GEMINI_RELAY_TOOLSETS="review", PATH="/usr/bin:/bin") as client:
        result = await client.call_tool("gemini-review", {"depth": "deep", "timeout": 1})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("⚠️ The deep review timed out after 1s on a 1-file diff (+1 / -2)"), text
    assert 'use depth "focused" or "scan"' in text
    assert "Gemini review (deep, partial; " in text and without_receipt(text).rstrip().endswith(PARTIAL)
    assert result.meta is not None and result.meta["partial"] and result.meta["timedOut"]
    # The partial findings came from a run, which their receipt shows: partial, ended by the timeout.
    receipt = (result.structured_content or {})["receipt"]
    assert receipt["partial"] is True and receipt["finish_reason"] == "TIMEOUT" and receipt["job_id"], receipt
    assert receipt["first_byte_seconds"] is not None and text.rstrip().endswith(f"partial · job {receipt['job_id']}")
    assert result.meta["appliedTimeout"] == 1 and not result.meta["timeoutScaled"]


@pytest.mark.spawns_git
async def test_a_review_that_times_out_with_nothing_said_is_an_error_with_the_hint(relay: InMemory) -> None:
    _repo_with_change(relay)
    relay.backend.queue(stall())
    async with relay.client(GEMINI_RELAY_TOOLSETS="review", PATH="/usr/bin:/bin") as client:
        result = await client.call_tool("gemini-review", {"depth": "scan", "timeout": 1})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-review: gemini timed out after 1s"), text
    assert "before any finding arrived" in text and "a narrower diff (base) or a larger timeout" in text

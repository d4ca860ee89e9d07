"""The capacity fallback, in memory: a 429 from the first run is retried once on GEMINI_FALLBACK_MODEL while the
deadline allows it — never with under 10 s left, never for a deep review."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed
from tests.backends.gemini_cli.test_errors import classify
from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script, answer

pytestmark = pytest.mark.anyio
MODEL, FALLBACK = "gemini-2.5-pro", "gemini-2.5-flash"


def quota() -> Script:
    error = RunFailed(
        "Gemini API quota or rate limit exhausted (HTTP 429): RESOURCE_EXHAUSTED",
        reason=FailureReason.QUOTA_EXHAUSTED,
        http_status=429,
        retryable=True,
    )
    return Script(deltas=(), error=error)


def overloaded() -> Script:
    """A 503 as the real CLI's recorded one is classified."""
    error = classify("error_503")
    assert error is not None
    return Script(deltas=(), error=error)


@pytest.mark.parametrize(
    ("failure", "limit"),
    [(quota, "resource exhausted, HTTP 429"), (overloaded, "service unavailable, HTTP 503")],
    ids=["quota", "overloaded"],
)
async def test_a_capacity_failure_is_retried_once_on_the_fallback_model_and_the_reply_says_so(
    relay: InMemory, failure: Callable[[], Script], limit: str
) -> None:
    relay.backend.queue(failure(), answer("From the fallback."))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith(f"⚠️ {FALLBACK} answered: {MODEL} hit a capacity limit ({limit})")
    assert "Gemini response:\nFrom the fallback." in text
    assert [s.model for s in relay.backend.specs] == [None, FALLBACK]
    first, retry = relay.backend.specs
    assert retry.prompt == first.prompt and retry.timeout_seconds < first.timeout_seconds


async def test_no_fallback_when_less_than_ten_seconds_of_the_deadline_remain(relay: InMemory) -> None:
    relay.backend.queue(quota(), answer("never asked"))
    async with relay.client(GEMINI_MCP_TIMEOUT="0.15") as client:  # a 9 s deadline: never 10 s left
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert result.is_error
    assert "quota or rate limit exhausted (HTTP 429)" in text_of(result)
    assert len(relay.backend.specs) == 1


async def test_a_failing_fallback_reports_both_attempts(relay: InMemory) -> None:
    relay.backend.queue(quota(), quota())
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert result.is_error
    assert f"(This was the fallback model {FALLBACK}, tried after {MODEL} hit a capacity limit" in text_of(result)
    assert len(relay.backend.specs) == 2


async def test_fallback_none_disables_the_retry(relay: InMemory) -> None:
    relay.backend.queue(quota(), answer("never asked"))
    async with relay.client(GEMINI_FALLBACK_MODEL="none") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert result.is_error and "quota or rate limit exhausted (HTTP 429)" in text_of(result)
    assert len(relay.backend.specs) == 1


@pytest.mark.spawns_git
async def test_a_deep_review_reports_a_capacity_failure_instead_of_falling_back(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": "x = 1\n"})
    (relay.project / "app.py").write_text("x = 2\n", encoding="utf-8")
    relay.backend.queue(quota(), answer("never asked"))
    async with relay.client(GEMINI_RELAY_TOOLSETS="review", PATH="/usr/bin:/bin") as client:
        result = await client.call_tool("gemini-review", {"depth": "deep"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("The deep review could not be completed: Gemini reported a capacity failure")
    assert "No retry or fallback model was tried" in text
    assert result.meta is not None and result.meta["capacityFailure"]["statusCode"] == 429
    assert len(relay.backend.specs) == 1

"""The api backend's run against the emulator through the real google-genai SDK: events, usage, verdicts, errors."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from gemini_relay.backends.api import ApiBackend
from gemini_relay.backends.capacity import capacity_of
from gemini_relay.core.events import Finished, RunNotice, SessionStarted, StreamNotice, TextDelta
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import BackendUnavailable, InputError, RunFailed, RunTimedOut
from tests.fakes.fake_gemini_api import (
    ECHO_PREFIX,
    MAX_TOKENS_TEXT,
    SLOW_CHUNKS,
    STALL_TEXT,
    THOUGHT_ANSWER_TEXT,
    UNICODE_TEXT,
)

from .conftest import MODEL, TEST_KEY, ApiWorld, answer_of, collect, finished

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[True, False], ids=["stream", "single"])
def backend(request: pytest.FixtureRequest, world: ApiWorld) -> Iterator[ApiBackend]:
    yield world.backend(stream=request.param)


async def test_a_run_yields_the_conversation_first_then_the_answer_and_a_finished_with_usage(
    world: ApiWorld, backend: ApiBackend
) -> None:
    events = await collect(backend, world.spec("hello"))
    first = events[0]
    assert isinstance(first, SessionStarted) and first.model == MODEL
    done = finished(events)
    assert answer_of(events) == done.text == ECHO_PREFIX + "hello"
    assert done.ok and done.session_id == first.session_id and done.num_turns == 1
    assert done.usage is not None
    assert (done.usage.input_tokens, done.usage.output_tokens, done.usage.thinking_tokens) == (12, 8, 3)
    assert done.usage.total_tokens == 23


async def test_streaming_yields_one_delta_per_chunk(world: ApiWorld) -> None:
    events = await collect(world.backend(), world.spec("[[fake:slow:0]]"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == list(SLOW_CHUNKS)
    path = world.api.requests[-1].path
    assert path == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"


async def test_the_key_comes_from_the_settings_and_travels_in_the_api_key_header(world: ApiWorld) -> None:
    await collect(world.backend(), world.spec("hi"))
    assert world.api.requests[-1].headers["x-goog-api-key"] == TEST_KEY


async def test_google_api_key_wins_when_both_keys_are_set(world: ApiWorld) -> None:
    await collect(world.backend(GOOGLE_API_KEY="google-key-0000"), world.spec("hi"))
    assert world.api.requests[-1].headers["x-goog-api-key"] == "google-key-0000"


async def test_thought_parts_are_not_answer_text(world: ApiWorld, backend: ApiBackend) -> None:
    events = await collect(backend, world.spec("[[fake:thought]]"))
    assert answer_of(events) == finished(events).text == THOUGHT_ANSWER_TEXT


async def test_unicode_survives_the_stream(world: ApiWorld) -> None:
    assert finished(await collect(world.backend(), world.spec("[[fake:unicode]]"))).text == UNICODE_TEXT


async def test_a_safety_block_is_a_failure_naming_the_reason_and_category(world: ApiWorld, backend: ApiBackend) -> None:
    with pytest.raises(RunFailed) as caught:
        await collect(backend, world.spec("[[fake:safety]]"))
    assert "finishReason SAFETY" in caught.value.message
    assert "HARM_CATEGORY_DANGEROUS_CONTENT" in caught.value.message
    assert caught.value.retryable is False


async def test_an_empty_answer_is_never_a_success(world: ApiWorld, backend: ApiBackend) -> None:
    with pytest.raises(RunFailed, match="returned no answer"):
        await collect(backend, world.spec("[[fake:empty]]"))


async def test_a_refused_prompt_is_a_failure(world: ApiWorld, backend: ApiBackend) -> None:
    with pytest.raises(RunFailed, match=r"refused the prompt: blocked \(SAFETY\)"):
        await collect(backend, world.spec("[[fake:blocked_prompt]]"))


async def test_an_answer_cut_by_the_token_limit_is_partial_with_a_notice(world: ApiWorld, backend: ApiBackend) -> None:
    events = await collect(backend, world.spec("[[fake:max_tokens]]"))
    notices = [e.message for e in events if isinstance(e, StreamNotice)]
    assert len(notices) == 1 and "MAX_TOKENS" in notices[0]
    done = finished(events)
    assert done.ok and done.partial and done.text == MAX_TOKENS_TEXT


async def test_a_quota_error_is_a_retryable_capacity_failure_with_its_status(
    world: ApiWorld, backend: ApiBackend
) -> None:
    with pytest.raises(RunFailed) as caught:
        await collect(backend, world.spec("[[fake:quota]]"))
    exc = caught.value
    assert exc.http_status == 429 and exc.reason is FailureReason.QUOTA_EXHAUSTED and exc.retryable is True
    assert "HTTP 429 RESOURCE_EXHAUSTED" in exc.message and "exceeded your current quota" in exc.message
    capacity = capacity_of(exc)
    assert capacity is not None and capacity.kind == "resource_exhausted"


async def test_an_unavailable_model_is_a_capacity_failure_too(world: ApiWorld) -> None:
    with pytest.raises(RunFailed) as caught:
        await collect(world.backend(), world.spec("[[fake:error:503]]"))
    assert caught.value.http_status == 503 and caught.value.retryable is True
    capacity = capacity_of(caught.value)
    assert capacity is not None and capacity.kind == "service_unavailable"


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (404, False), (400, False)])
async def test_other_api_errors_are_backend_errors_with_the_apis_message(
    world: ApiWorld, status: int, retryable: bool
) -> None:
    with pytest.raises(RunFailed) as caught:
        await collect(world.backend(), world.spec(f"[[fake:error:{status}]]"))
    exc = caught.value
    assert exc.http_status == status and exc.reason is FailureReason.BACKEND_ERROR and exc.retryable is retryable
    assert f"HTTP {status}" in exc.message
    assert capacity_of(exc) is None
    if status == 404:
        assert f"models/{MODEL} is not found" in exc.message


async def test_a_hang_is_bounded_by_the_run_timeout(world: ApiWorld, backend: ApiBackend) -> None:
    with pytest.raises(RunTimedOut) as caught:
        await collect(backend, world.spec("[[fake:hang]]", timeout_seconds=0.5))
    assert caught.value.message == "gemini-api timed out after 0.5s"


async def test_a_stalled_stream_times_out_keeping_the_partial_text(world: ApiWorld) -> None:
    # A generous deadline: the partial text must have arrived before it, even on a loaded machine (0.5 s was not).
    with pytest.raises(RunTimedOut) as caught:
        await collect(world.backend(), world.spec("[[fake:stall]]", timeout_seconds=5.0))
    assert caught.value.partial_text == STALL_TEXT


async def test_a_garbled_response_is_a_backend_error(world: ApiWorld) -> None:
    with pytest.raises(RunFailed, match="could not read"):
        await collect(world.backend(), world.spec("[[fake:nonjson]]"))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_refused_connection_names_the_endpoint_and_never_the_key(world: ApiWorld) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(RunFailed) as caught:
        await collect(world.backend(GOOGLE_GEMINI_BASE_URL=endpoint), world.spec("hi"))
    assert caught.value.message.startswith(f"gemini-api could not reach {endpoint}")
    assert caught.value.retryable is True
    assert TEST_KEY not in caught.value.message and TEST_KEY[-8:] not in caught.value.message


async def test_a_missing_key_is_backend_unavailable_with_the_fix(world: ApiWorld) -> None:
    backend = world.backend(GEMINI_API_KEY=None)
    with pytest.raises(BackendUnavailable, match="GEMINI_API_KEY") as caught:
        await collect(backend, world.spec("hi"))
    assert "aistudio.google.com" in str(caught.value)
    assert world.api.requests == []


async def test_a_model_id_that_could_rewrite_the_url_is_refused_before_any_request(world: ApiWorld) -> None:
    with pytest.raises(InputError, match="not a model id"):
        await collect(world.backend(), world.spec("hi", model="../files/x"))
    assert world.api.requests == []


async def test_aliases_resolve_to_the_gemini_cli_defaults(world: ApiWorld) -> None:
    await collect(world.backend(), world.spec("hi", model="flash"))
    assert world.api.requests[-1].model == "gemini-3.8-flash"


async def test_the_default_model_comes_from_the_settings(world: ApiWorld) -> None:
    events = await collect(world.backend(GEMINI_DEFAULT_MODEL="gemini-2.5-flash"), world.spec("hi", model=None))
    assert world.api.requests[-1].model == "gemini-2.5-flash"
    assert isinstance(events[0], SessionStarted) and events[0].model == "gemini-2.5-flash"


async def test_effort_becomes_a_thinking_budget_on_gemini_2_5_and_a_level_on_gemini_3(world: ApiWorld) -> None:
    await collect(world.backend(), world.spec("hi", effort="low"))
    assert world.api.requests[-1].body["generationConfig"]["thinkingConfig"] == {
        "thinking_budget": 1024
    }  # the SDK sends it as named
    await collect(world.backend(), world.spec("hi", model="gemini-3.1-pro-preview", effort="high"))
    assert world.api.requests[-1].body["generationConfig"]["thinkingConfig"] == {"thinking_level": "HIGH"}


async def test_an_explicit_effort_the_model_cannot_take_is_a_notice(world: ApiWorld) -> None:
    events = await collect(world.backend(), world.spec("hi", model="gemma-3", effort="high", explicit={"effort"}))
    notices = [e.message for e in events if isinstance(e, RunNotice)]
    assert notices == ["effort high has no thinking setting the relay knows for gemma-3; it was ignored."]
    assert "thinkingConfig" not in world.api.requests[-1].body.get("generationConfig", {})


async def test_plan_mode_is_a_system_instruction(world: ApiWorld) -> None:
    await collect(world.backend(), world.spec("hi", mode="plan"))
    instruction = world.api.requests[-1].body["systemInstruction"]["parts"][0]["text"]
    assert "plan only" in instruction


async def test_agent_options_set_on_purpose_are_notices_and_change_nothing(world: ApiWorld) -> None:
    spec = world.spec(
        "hi",
        agent="reviewer",
        sandbox=True,
        skip_permissions=True,
        add_dirs=(world.project,),
        allow_slash_commands=True,
        mode="accept-edits",
        explicit=frozenset({"agent", "sandbox", "skip_permissions", "add_dirs", "allow_slash_commands", "mode"}),
    )
    events = await collect(world.backend(), spec)
    notices = [e.message for e in events if isinstance(e, RunNotice)]
    assert len(notices) == 6
    for name in ("agent", "sandbox", "skipPermissions", "addDirs", "allowSlashCommands", "mode accept-edits"):
        assert any(n.startswith(name) for n in notices), name
    assert finished(events).ok


async def test_agent_options_not_chosen_by_the_caller_are_silent(world: ApiWorld) -> None:
    events = await collect(world.backend(), world.spec("hi", sandbox=True))
    assert not [e for e in events if isinstance(e, RunNotice)]


async def test_the_event_order_ends_in_exactly_one_finished(world: ApiWorld) -> None:
    events = await collect(world.backend(), world.spec("[[fake:max_tokens]]"))
    assert sum(isinstance(e, Finished) for e in events) == 1 and isinstance(events[-1], Finished)


async def test_an_answer_from_another_model_than_requested_is_named_in_a_notice(
    world: ApiWorld, backend: ApiBackend
) -> None:
    events = await collect(backend, world.spec("[[fake:served_by:gemini-2.5-flash]] hi"))
    notices = [e.message for e in events if isinstance(e, RunNotice)]
    assert any(f"ran gemini-2.5-flash, not the requested {MODEL}" in n for n in notices), notices
    assert finished(events).models == ("gemini-2.5-flash",)


async def test_an_answer_from_the_requested_model_says_nothing_of_models(world: ApiWorld, backend: ApiBackend) -> None:
    events = await collect(backend, world.spec("hi"))
    assert not any("not the requested" in e.message for e in events if isinstance(e, RunNotice))

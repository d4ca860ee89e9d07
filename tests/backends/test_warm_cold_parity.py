"""Warm ≡ cold: the Gemini CLI run cold (`gemini -p`, GeminiCliBackend) and warm (`gemini --acp`, AcpBackend) against
the same scripted upstream gives the same outcome — failure reason, retryable, HTTP status, message, the fix
(recovery), notices, usage, model, and the requests the API saw. A difference the upstream itself makes is named in
EXPECTED_DIFFERENCES, with why, and asserted to be exactly that difference; nothing is left out silently.

And every error class comes with its fix on every path that can meet it — cold, warm and the api backend (ApiBackend,
the same emulator through google-genai): ADVICE names, per class, the words of the fix each path must carry.

One emulator, one CLI home and one warm process serve the whole module (an event loop in a portal thread owns the
pool); each cold run is its own `gemini -p`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from gemini_relay.backends.api import ApiBackend
from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.backends.gemini_cli.backend import GeminiCliBackend
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, SessionStarted, TextDelta, ToolCall, ToolResult, Usage
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed
from gemini_relay.streams.transcript import Transcript
from tests.fakes import fake_gemini_api as fake
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import isolated_cli_env
from tests.harness import TEST_MODEL, assert_no_processes, gemini_binary

BOUND = 60.0  # one run, cold or warm, ends within this (a cold run boots Node)
ONE_TURN = Usage(input_tokens=12, output_tokens=8, thinking_tokens=3, total_tokens=23)  # fake_gemini_api.USAGE
TWO_TURNS = Usage(input_tokens=24, output_tokens=16, thinking_tokens=6, total_tokens=46)  # a tool call and its answer
WARM_UA = "GeminiCLI-acp/"  # the user-agent prefix of a warm CLI's API requests


@dataclass(frozen=True)
class Outcome:
    """What a caller gets from one run, on either path (the session id aside: each path names its own)."""

    text: str
    status: str | None
    partial: bool
    reason: FailureReason | None
    retryable: bool | None
    http_status: int | None
    message: str
    recovery: str | None
    notices: tuple[str, ...]
    upstream: tuple[str, ...]  # errors and warnings the upstream sent on the side (jobs turns them into notices)
    usage: Usage | None
    model: str | None
    api: tuple[tuple[str, str | None], ...]  # (kind, model) of each request the emulator answered for the run
    tools: tuple[tuple[str, ...], ...] = ()  # ("tool", name) and ("result", ok, error_type) in the order they came
    conversation_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None and not self.message


COMPARED = tuple(f.name for f in fields(Outcome) if f.name != "conversation_id")


@dataclass
class Parity:
    portal: BlockingPortal
    api: FakeGeminiApi
    project: Path
    home: Path
    cold_backend: GeminiCliBackend
    warm_backend: AcpBackend
    pool: WarmPool
    api_backend: ApiBackend

    def spec(self, prompt: str, **fields: Any) -> RunSpec:
        return replace(RunSpec(tool="gemini-ask", prompt=prompt, cwd=self.project, model=TEST_MODEL), **fields)

    def folder(self, name: str) -> Path:
        path = self.project / name.replace(" ", "-")
        path.mkdir(exist_ok=True)
        return path

    def cold(self, spec: RunSpec) -> Outcome:
        return self.portal.call(self._run, self.cold_backend, spec)

    def warm(self, spec: RunSpec) -> Outcome:
        return self.portal.call(self._run, self.warm_backend, spec)

    def cancelled(self, backend: GeminiCliBackend | AcpBackend, spec: RunSpec) -> str | None:
        """Run `spec` until the first answer text, then close the run as a cancelled job does; its session id."""
        return self.portal.call(self._cancel, backend, spec)

    async def _cancel(self, backend: GeminiCliBackend | AcpBackend, spec: RunSpec) -> str | None:
        session_id: str | None = None
        with anyio.fail_after(BOUND):
            async with contextlib.aclosing(backend.run(spec)) as events:
                async for event in events:
                    if isinstance(event, SessionStarted):
                        session_id = event.session_id
                    if isinstance(event, TextDelta):
                        break
        return session_id

    def on_api(self, spec: RunSpec) -> Outcome:
        return self.portal.call(self._run, self.api_backend, spec)

    def both(self, spec: RunSpec) -> tuple[Outcome, Outcome]:
        return self.cold(spec), self.warm(spec)

    async def _run(self, backend: GeminiCliBackend | AcpBackend | ApiBackend, spec: RunSpec) -> Outcome:
        seen = Transcript(spec)
        tools: list[tuple[str, ...]] = []
        error: RunFailed | None = None
        before = len(self.api.requests)
        backend.check(spec)
        with anyio.fail_after(BOUND):
            events: AsyncIterator[AgentEvent] = backend.run(spec)
            try:
                async for event in events:
                    seen.apply(event)
                    tools.extend(_tool_step(event))
            except RunFailed as exc:
                error = exc
        finished = seen.finished
        return Outcome(
            text=seen.text,
            status=finished.status if finished is not None and error is None else None,
            partial=bool(finished is not None and finished.partial),
            reason=error.reason if error is not None else None,
            retryable=error.retryable if error is not None else None,
            http_status=error.http_status if error is not None else None,
            message=error.message if error is not None else "",
            recovery=error.recovery if error is not None else None,
            notices=tuple(seen.notices),
            upstream=tuple(seen.stream_errors + seen.stream_warnings) if error is None else (),
            usage=finished.usage if finished is not None and error is None else None,
            model=seen.model,
            api=tuple((r.kind, r.model) for r in self.api.requests[before:] if r.kind not in ("models", "unknown")),
            tools=tuple(tools),
            conversation_id=seen.session_id,
        )


def _tool_step(event: AgentEvent) -> list[tuple[str, ...]]:
    match event:
        case ToolCall(name=name):
            return [("tool", name)]
        case ToolResult(ok=ok, error_type=error_type):
            return [("result", str(ok), str(error_type))]
        case _:
            return []


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Parity]:
    base = tmp_path_factory.mktemp("parity")
    project = base / "proj"
    project.mkdir()
    (project / "hello.txt").write_text("hi\n", encoding="utf-8")
    (project / "notes.md").write_text(f"{NOTES}\n", encoding="utf-8")  # what an `@notes.md` the CLI read would send
    with FakeGeminiApi() as api, start_blocking_portal("asyncio") as portal:
        cli_env = isolated_cli_env(base, api.base_url)
        # No GEMINI_DEFAULT_MODEL: a spec without a model leaves the choice to the CLI, as a caller's would.
        env = {"LANG": "C.UTF-8", **cli_env, "GEMINI_CLI_PATH": str(gemini_binary()), "GEMINI_RELAY_KILL_GRACE": "2"}
        settings = Settings.from_env({**env, "GEMINI_RELAY_PROJECT_ROOT": str(project)})
        home = Path(cli_env["GEMINI_CLI_HOME"])
        try:
            with portal.wrap_async_context_manager(WarmPool(grace=2.0)) as pool:
                cold, warm = GeminiCliBackend(settings), AcpBackend(settings, pool)
                yield Parity(portal, api, project, home, cold, warm, pool, ApiBackend(settings))
        finally:
            assert_no_processes(home)


# --- one upstream behaviour, both paths ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    prompt: str
    expect: Callable[[Outcome], bool]  # what the cold outcome must be: two equal wrong outcomes are no parity
    spec: dict[str, Any] | None = None
    warm: Callable[[Outcome], bool] | None = None  # what warm must be, for a case in EXPECTED_DIFFERENCES


def _failed(reason: FailureReason, retryable: bool | None, start: str, status: int | None) -> Callable[[Outcome], bool]:
    def check(outcome: Outcome) -> bool:
        return (
            outcome.reason is reason
            and outcome.retryable is retryable
            and outcome.message.startswith(start)
            and outcome.http_status == status
        )

    return check


def _answered(text: str, usage: Usage = ONE_TURN) -> Callable[[Outcome], bool]:
    return lambda o: o.ok and o.text == text and o.status == "SUCCESS" and o.usage == usage and not o.notices


def _literal(prompt: str) -> Callable[[Outcome], bool]:
    """The CLI took the prompt as text: no file read through an `@` (literal_prompt). A leading `/` never reaches
    AcpBackend (warm.py sends it cold): test_server_warm shows the warm server answer one as cold does."""
    forms = (prompt, prompt.replace("@", "\\@"))  # the model gets the text, its `@` escaped or not
    return lambda o: _answered(o.text)(o) and any(f in o.text for f in forms) and NOTES not in o.text and not o.tools


def _cut(outcome: Outcome) -> bool:
    """Failed with the part of the answer that came: the caller gets it as a partial answer, not as the answer."""
    return (outcome.reason, outcome.retryable, outcome.text) == (BACKEND, True, fake.CUT_TEXT) and not outcome.usage


BACKEND = FailureReason.BACKEND_ERROR
QUOTA = FailureReason.QUOTA_EXHAUSTED
NO_ANSWER = "Gemini returned no usable answer: "
WARM_NO_ANSWER = _failed(BACKEND, None, NO_ANSWER + "the model sent an empty or blocked response (over ACP", None)
NO_TEXT_AFTER_TOOL = (
    "Gemini ran its tools (read_file) and ended the turn without writing an answer: what the tools did stands; "
    "ask in this conversation for a summary if you need one."
)
EFFORT = {"effort": "high", "explicit": frozenset({"effort"})}
NOTES = "NOTES-FILE-TEXT-7"
READ_FILE_STEPS = (("tool", "read_file"), ("result", "True", "None"))

CASES = [
    Case("success", "[[fake:echo:parity answer 42]]", _answered("parity answer 42")),
    Case("unicode", "[[fake:unicode]]", _answered(fake.UNICODE_TEXT)),
    Case("long answer", "[[fake:big:40]]", _answered(fake.big_text(40))),
    Case(
        "answer past 64 KiB",
        "[[fake:big:100:102400]]",  # one event of 100 KB
        lambda o: (o.reason is BACKEND and "64 KiB" in o.message) or _answered(fake.big_text(100))(o),
        warm=_answered(fake.big_text(100)),
    ),
    Case("thought", "[[fake:thought]]", _answered(fake.THOUGHT_ANSWER_TEXT)),
    Case(
        "tool call",
        "[[fake:tool_call]]",
        lambda o: _answered(fake.TOOL_DONE_TEXT, TWO_TURNS)(o) and o.tools == READ_FILE_STEPS,
    ),
    Case("at reference", "read @notes.md", _literal("read @notes.md")),
    Case("max tokens", "[[fake:max_tokens]]", _answered(fake.MAX_TOKENS_TEXT)),
    Case(
        "routed model",
        "a question the CLI routes",
        lambda o: o.ok and o.usage == ONE_TURN and [kind for kind, _ in o.api] == ["router", "main"],
        {"model": None},
    ),
    Case("option notice", "[[fake:echo:x]]", lambda o: o.ok and len(o.notices) == 1, EFFORT),
    Case(
        "stream cut mid-answer",
        "[[fake:cut]]",
        lambda o: _cut(o) and o.message.startswith(NO_ANSWER + "Model stream ended without a finish reason"),
        warm=lambda o: _cut(o) and o.message.startswith(NO_ANSWER + "the answer stopped before the model finished"),
    ),
    Case(
        "connection reset mid-answer",
        "[[fake:cut:reset]]",
        lambda o: (
            _failed(BACKEND, True, "Network error talking to the Gemini API", None)(o) and o.text == fake.CUT_TEXT
        ),
    ),
    Case("model not found", "[[fake:error:404]]", _failed(BACKEND, None, "Model not found: models/", None)),
    Case("malformed JSON", "[[fake:nonjson]]", _failed(BACKEND, None, "gemini failed: Incomplete JSON", None)),
    Case("quota", "[[fake:quota]]", _failed(QUOTA, True, "Gemini API quota or rate limit exhausted (HTTP 429)", 429)),
    Case("daily quota", "[[fake:quota_daily]]", _failed(QUOTA, False, "Gemini API quota or rate limit exhausted", 429)),
    Case("quota retry", "[[fake:quota_retry]]", _failed(QUOTA, True, "Gemini API quota or rate limit exhausted", 429)),
    Case(
        "safety block",
        "[[fake:safety]]",
        _failed(BACKEND, None, NO_ANSWER + "The model response was blocked", None),
        warm=WARM_NO_ANSWER,
    ),
    Case(
        "empty answer",
        "[[fake:empty]]",
        _failed(BACKEND, None, NO_ANSWER + "The model returned an empty", None),
        warm=WARM_NO_ANSWER,
    ),
    Case(
        "empty answer after a tool call",
        "[[fake:empty_after_tool]]",
        lambda o: o.ok and o.text == "" and o.tools == READ_FILE_STEPS and o.notices == (NO_TEXT_AFTER_TOOL,),
    ),
    Case(
        "blocked prompt",
        "[[fake:blocked_prompt]]",
        _failed(BACKEND, None, NO_ANSWER + "Model stream ended", None),
        warm=WARM_NO_ANSWER,
    ),
    Case("401", "[[fake:error:401]]", _failed(BACKEND, None, "The Gemini API refused the credentials (HTTP 401)", 401)),
    Case("403", "[[fake:error:403]]", _failed(BACKEND, None, "The Gemini API refused the credentials (HTTP 403)", 403)),
    Case("400", "[[fake:error:400]]", _failed(BACKEND, None, "The Gemini API rejected the request (HTTP 400)", 400)),
    Case("bad key", "[[fake:bad_key]]", _failed(BACKEND, None, "The Gemini API rejected the request (HTTP 400)", 400)),
    Case("500", "[[fake:error:500]]", _failed(BACKEND, True, "The Gemini API had an internal error (HTTP 500)", 500)),
    Case("503", "[[fake:error:503]]", _failed(BACKEND, True, "The Gemini API is overloaded or unavailable", 503)),
    Case("504", "[[fake:error:504]]", _failed(BACKEND, True, "The Gemini API is overloaded or unavailable", 504)),
]

# What the upstream itself does differently on the two paths: case -> field -> why. Each listed field must differ
# (a difference that disappears is taken out of the table); every other field must be equal.
_NO_REASON_OVER_ACP = (
    "over ACP the CLI 0.61.0 turns an invalid stream (empty answer, SAFETY/RECITATION/OTHER block, no finish reason) "
    "into a plain end_turn without its type (acpSession prompt(): InvalidStreamError caught), so warm can only say "
    "the answer was empty or blocked; cold's stream-json names the reason"
)
_PIPE_CUT = (
    "piped, the cold CLI drops its stdout past 64 KiB at exit (backends/gemini_cli/decoder.py PIPE_CUT_BYTES); "
    "ACP frames every update, so warm gets the whole answer"
)
_CUT_OVER_ACP = (
    "over ACP the CLI 0.61.0 ends a stream that stopped without a finish reason as a plain end_turn; warm finds the "
    "answer missing from the CLI's recording (acp/backend.py _recorded) but not the CLI's words for why"
)
# Fields a difference reaches or not by timing: not compared, and why.
UNCOMPARED: dict[str, dict[str, str]] = {
    "answer past 64 KiB": {
        "text": "how much of the cut event Node wrote before it exited varies: cold's text is whole or cut"
    },
}
# Cases whose listed differences appear only when the timing makes them: under load the pipe drains before Node
# exits and cold's answer arrives whole, as warm's does. Their differences must hold when cold was cut.
CUT_BY_TIMING = frozenset({"answer past 64 KiB"})
EXPECTED_DIFFERENCES: dict[str, dict[str, str]] = {
    "answer past 64 KiB": dict.fromkeys(("status", "reason", "message", "usage"), _PIPE_CUT),
    "safety block": {"message": _NO_REASON_OVER_ACP, "recovery": _NO_REASON_OVER_ACP},
    "empty answer": {"message": _NO_REASON_OVER_ACP},
    "blocked prompt": {"message": _NO_REASON_OVER_ACP},
    "stream cut mid-answer": {"message": _CUT_OVER_ACP},
}


@dataclass(frozen=True)
class Advice:
    """The words of the fix for one error class, on each path (None: that path cannot meet it)."""

    case: str  # the id of its Case above
    cold: str
    warm: str | None = None  # None: as cold
    api: str | None = None  # None: as cold

    def on(self, path: str) -> str:
        return {"cold": self.cold, "warm": self.warm or self.cold, "api": self.api or self.cold}[path]


KEY = "set a valid GEMINI_API_KEY (https://aistudio.google.com/apikey) in the server's env; gemini-doctor checks"
SAFETY = "The safety filter stopped the answer (dangerous_content): rephrase the request without that content"
RETRY_OR_REPHRASE = "retry once; if it happens again, rephrase the request"
ADVICE = [
    Advice("bad key", KEY),
    Advice("401", "The API did not accept the credentials: check GEMINI_API_KEY"),
    Advice("403", "The credentials may not do this: check that GEMINI_API_KEY belongs to a project"),
    Advice("400", "The API refused part of the request (its message names the field): change that argument"),
    Advice("model not found", "gemini-models"),
    Advice("quota", "Wait for the quota to refill, or pass a different model."),
    Advice("daily quota", "Wait for the quota to refill, or pass a different model."),
    Advice("500", "The API failed on its side: retry"),
    Advice("503", "The model is overloaded or down for now: retry in a minute, or pick another model"),
    Advice("504", "The API gave up before it answered: retry"),
    Advice("malformed JSON", "check GOOGLE_GEMINI_BASE_URL"),
    Advice("safety block", SAFETY.replace(" (dangerous_content)", ""), warm=RETRY_OR_REPHRASE, api=SAFETY),
    Advice("empty answer", RETRY_OR_REPHRASE),
    Advice("stream cut mid-answer", "The answer stopped before the model finished it"),
    Advice("connection reset mid-answer", "check the network", api="Check the network"),
    Advice("blocked prompt", RETRY_OR_REPHRASE, api="The safety filter stopped the request: rephrase the request"),
]
_ADVICE = {a.case: a for a in ADVICE}


def assert_advised(case_id: str, path: str, outcome: Outcome) -> None:
    advice = _ADVICE.get(case_id)
    if advice is not None:
        said = f"{outcome.message}\n{outcome.recovery or ''}"
        assert outcome.reason is not None and advice.on(path) in said, f"{path} {case_id}: {said}"


def assert_parity(case_id: str, cold: Outcome, warm: Outcome) -> None:
    differs = EXPECTED_DIFFERENCES.get(case_id, {})
    skipped = differs.keys() | UNCOMPARED.get(case_id, {}).keys()
    same = {name: (getattr(cold, name), getattr(warm, name)) for name in COMPARED if name not in skipped}
    assert {k: v[0] for k, v in same.items()} == {k: v[1] for k, v in same.items()}
    if case_id in CUT_BY_TIMING and cold.ok:
        assert (cold.status, cold.reason, cold.usage) == (warm.status, warm.reason, warm.usage), case_id
        return
    for name in differs:
        assert getattr(cold, name) != getattr(warm, name), f"{case_id}: {name} no longer differs; update the table"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_same_upstream_behaviour_gives_the_same_outcome_cold_and_warm(parity: Parity, case: Case) -> None:
    cold, warm = parity.both(parity.spec(case.prompt, **(case.spec or {})))
    assert case.expect(cold), f"cold {case.id}: {cold}"
    assert_parity(case.id, cold, warm)
    assert (case.warm is not None) == (case.id in EXPECTED_DIFFERENCES)
    assert case.warm is None or case.warm(warm), f"warm {case.id}: {warm}"
    assert_advised(case.id, "cold", cold)
    assert_advised(case.id, "warm", warm)


# Where the api backend returns what the CLI paths fail: case -> the notice it names the outcome with.
API_PARTIAL = {"stream cut mid-answer": "The API stream ended without a finish reason; the answer may be incomplete."}


@pytest.mark.parametrize("advice", ADVICE, ids=[a.case for a in ADVICE])
def test_each_error_class_the_api_backend_meets_comes_with_the_same_fix(parity: Parity, advice: Advice) -> None:
    case = next(c for c in CASES if c.id == advice.case)
    outcome = parity.on_api(parity.spec(case.prompt, **(case.spec or {})))
    if case.id in API_PARTIAL:  # no silent success either: a partial answer, named as such
        assert outcome.ok and outcome.partial and API_PARTIAL[case.id] in outcome.upstream + outcome.notices
        return
    assert_advised(case.id, "api", outcome)


# The emulator's scenarios that make the upstream fail (fake_gemini_api): each case using one needs its fix named.
FAILING_SCENARIOS = (
    "error", "bad_key", "quota", "quota_daily", "safety", "empty", "blocked_prompt", "nonjson", "cut"
)  # fmt: skip
UNADVISED = {"quota retry": "the quota class, named by `quota`"}


def test_every_error_class_has_its_fix_named() -> None:
    failing = {c.id for c in CASES if any(f"[[fake:{name}]" in c.prompt or f"[[fake:{name}:" in c.prompt
                                          for name in FAILING_SCENARIOS)}  # fmt: skip
    assert {a.case for a in ADVICE} <= {c.id for c in CASES}
    assert failing - set(UNADVISED) == set(_ADVICE)


def test_every_documented_difference_names_a_case_and_a_compared_field() -> None:
    ids = {c.id for c in CASES}
    for case_id, differs in [*EXPECTED_DIFFERENCES.items(), *UNCOMPARED.items()]:
        assert case_id in ids
        assert set(differs) <= set(COMPARED) and all(differs.values())


# --- across calls: each in a folder of its own, so only its own calls made the spares it meets ------------------------


def main_models(outcome: Outcome) -> list[str | None]:
    return [model for kind, model in outcome.api if kind == "main"]


async def _spares_ready(pool: WarmPool) -> None:
    """Wait (bounded) until no spare is being made: the one the last fresh ask left behind is ready."""
    with anyio.fail_after(BOUND):
        for warm in pool._warm:  # pyright: ignore[reportPrivateUsage]
            while sum(warm.spare_making.values()):
                await warm.spare_done.wait()


def test_a_fresh_ask_without_a_model_does_not_inherit_a_spare_another_caller_set_to_its_model(parity: Parity) -> None:
    folder, other = parity.folder("fresh"), "gemini-2.5-flash"
    parity.warm(parity.spec("[[fake:echo:leaves a spare set to its model]]", model=other, cwd=folder))
    parity.portal.call(_spares_ready, parity.pool)
    cold, warm = parity.both(parity.spec("which model answers me", model=None, cwd=folder))
    assert other not in main_models(cold)
    assert_parity("fresh ask", cold, warm)


def test_a_conversation_continued_without_a_model_runs_on_the_default_model_warm_as_cold(parity: Parity) -> None:
    folder = parity.folder("continued")
    cold_first, warm_first = parity.both(parity.spec("[[fake:history]]", model="gemini-2.5-flash", cwd=folder))
    assert cold_first.text == warm_first.text == "turns=1"
    cold = parity.cold(
        parity.spec("[[fake:history]]", model=None, cwd=folder, conversation_id=cold_first.conversation_id)
    )
    warm = parity.warm(
        parity.spec("[[fake:history]]", model=None, cwd=folder, conversation_id=warm_first.conversation_id)
    )
    assert cold.text == "turns=2" and "gemini-2.5-flash" not in main_models(cold)
    assert_parity("continued", cold, warm)


def test_usage_is_the_calls_own_turns_not_the_conversations_total_on_both_paths(parity: Parity) -> None:
    folder = parity.folder("second call")
    (folder / "hello.txt").write_text("hi\n", encoding="utf-8")
    cold_first, warm_first = parity.both(parity.spec("[[fake:history]]", cwd=folder))
    cold = parity.cold(parity.spec("[[fake:tool_call]]", cwd=folder, conversation_id=cold_first.conversation_id))
    warm = parity.warm(parity.spec("[[fake:tool_call]]", cwd=folder, conversation_id=warm_first.conversation_id))
    assert cold.usage == TWO_TURNS
    assert_parity("second call", cold, warm)


LOOP = "The Gemini CLI stopped the answer: its loop detection found the model repeating itself"


def test_loop_detection_is_named_the_same_cold_and_warm_and_is_no_silent_success(parity: Parity) -> None:
    parity.api.set_scenario("loop")  # sticky: the CLI's second try ("Potential loop detected") loops too
    try:
        cold, warm = parity.both(parity.spec("count the files", cwd=parity.folder("loop")))
    finally:
        parity.api.set_scenario(None)
    assert cold.reason is BACKEND and cold.message.startswith(LOOP) and cold.status is None, cold
    assert cold.recovery is not None and "model.disableLoopDetection" in cold.recovery
    assert fake.LOOP_LINE in cold.text  # what came before the CLI stopped it: the partial answer, not the answer
    assert_parity("loop detection", cold, warm)


def test_a_conversation_past_the_clis_session_turn_limit_fails_the_same_cold_and_warm(parity: Parity) -> None:
    folder = parity.folder("turn limit")  # its own settings: warm tells this stop from a loop by them
    (folder / ".gemini").mkdir()
    (folder / ".gemini" / "settings.json").write_text('{"model": {"maxSessionTurns": 1}}\n', encoding="utf-8")
    (folder / "hello.txt").write_text("hi\n", encoding="utf-8")
    cold, warm = parity.both(parity.spec("[[fake:tool_call]]", cwd=folder))  # the tool's answer is turn 2
    assert cold.reason is BACKEND and cold.message.startswith("The conversation reached the Gemini CLI's maximum")
    assert_parity("turn limit", cold, warm)


CANCELLED = "CANCELLED-PROMPT-29"


def test_a_conversation_continued_after_a_cancelled_prompt_does_not_send_that_prompt_again(parity: Parity) -> None:
    folder = parity.folder("after cancel")
    outcomes: list[Outcome] = []
    for path, backend in (("cold", parity.cold_backend), ("warm", parity.warm_backend)):
        first = parity.portal.call(parity._run, backend, parity.spec("[[fake:history]]", cwd=folder))
        cut = parity.spec(f"[[fake:slow:30]] {CANCELLED}", cwd=folder, conversation_id=first.conversation_id)
        assert parity.cancelled(backend, cut) == first.conversation_id
        before = len(parity.api.requests)
        again = parity.spec("[[fake:history]]", cwd=folder, conversation_id=first.conversation_id)
        outcomes.append(parity.portal.call(parity._run, backend, again))
        sent = [r.body for r in parity.api.requests[before:] if r.kind == "main"]
        assert sent and all(CANCELLED not in str(body) for body in sent), f"{path} sent the cancelled prompt"
    cold, warm = outcomes
    assert cold.text == "turns=2"
    assert_parity("after cancel", cold, warm)


def test_a_conversation_begun_warm_after_a_cold_run_in_the_project_continues_cold(parity: Parity) -> None:
    folder = parity.folder("after cold")
    parity.warm(parity.spec("[[fake:echo:leaves a spare]]", cwd=folder))
    parity.portal.call(_spares_ready, parity.pool)
    # A cold CLI's start deletes the project's recordings without a prompt: the spare's among them.
    parity.cold(parity.spec("[[fake:echo:a cold run]]", cwd=folder))
    begun = parity.warm(parity.spec("[[fake:history]]", cwd=folder))
    continued = parity.cold(parity.spec("[[fake:history]]", cwd=folder, conversation_id=begun.conversation_id))
    assert (begun.text, continued.message, continued.text) == ("turns=1", "", "turns=2")

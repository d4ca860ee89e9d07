"""gemini-consensus: one question to several models in parallel (each a durable job under the executor's one cap),
then one synthesis call that states agreement, disagreement and a recommendation, citing who said what.

Each call is a job whose idempotency key derives from the caller's (`consensus:<key>:<n>`, `…:synthesis`), so a
repeated call, or the collect after `async`, attaches to the recorded jobs and bills nothing again; the synthesis
prompt is built from the recorded answers only, so it is the same request on every collect.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any, Literal

import anyio
from pydantic import Field

from gemini_relay.backends.backend_registry import resolve_name
from gemini_relay.backends.checks import check_spec
from gemini_relay.content.consensus_rounds import (
    DEFAULT_MODELS,
    MAX_MODELS,
    Member,
    Outcome,
    Stance,
    dry_run,
    fold,
    label_members,
    member_prompt,
    synthesis_prompt,
)
from gemini_relay.content.rate_card import load_rate_card
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.tokens import TokenCount, TokenMethod, estimated
from gemini_relay.core.vocabulary import BackendName, FailureReason, Toolset
from gemini_relay.errors import BackendUnavailable, ConfigError, InputError, RunFailed
from gemini_relay.jobs import JobOptions, RunRecord
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.context_pack import model_id
from gemini_relay.tools.common.controls import call_timeout, timeout_field
from gemini_relay.tools.common.definition import ToolDef, When
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.review.consensus_text import markdown, started_text

StanceName = Literal["for", "against", "neutral"]  # Stance's values (strict inputs take no enum from a string)


class PanelModel(ToolInput):
    model: str = Field(min_length=1, max_length=200, description="Model id or alias ('pro', 'flash').")
    stance: StanceName | None = Field(
        None, description="'for', 'against' or 'neutral': the position this model argues. Unset: none."
    )
    backend: str | None = Field(
        None,
        min_length=1,
        max_length=40,
        description="The backend that runs it (one gemini-doctor lists as ready). Unset: the active one.",
    )


class ConsensusInput(ToolInput):
    prompt: str = Field(min_length=1, description="The question or proposal every model answers.")
    models: list[str | PanelModel] | None = Field(
        None,
        min_length=1,
        max_length=MAX_MODELS,
        description=f"Up to {MAX_MODELS} models: ids or aliases, or {{model, stance, backend}} objects. Default: "
        f"{' and '.join(DEFAULT_MODELS)} of the active backend, no stance.",
    )
    synthesis_model: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The model that writes the synthesis. Default: the first model that answered.",
    )
    dry_run: bool = Field(
        False, description="Return each model's prompt token count and estimated cost; no model is called."
    )
    timeout_seconds: float | None = timeout_field()  # each call's own deadline: a slow model fails alone
    async_: bool = Field(
        False,
        alias="async",
        description="Answer at once with the jobs and an idempotencyKey; call again with the same arguments and "
        "key to collect (nothing is billed again). The model jobs run on even if this server exits.",
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Retry-safe key: the same key and question return the recorded answers instead of billing again.",
    )


def _members(deps: Deps, args: ConsensusInput) -> list[Member]:
    active = deps.selection().backend
    members: list[Member] = []
    for entry in args.models or list(DEFAULT_MODELS):
        if isinstance(entry, str):
            members.append(Member(entry, active))
            continue
        backend = _backend(deps, entry.backend) if entry.backend else active
        members.append(Member(entry.model, backend, Stance(entry.stance) if entry.stance else None))
    return label_members(members, show_backend=any(m.backend != active for m in members))


def _backend(deps: Deps, raw: str) -> BackendName:
    try:
        name = resolve_name(raw)
    except ConfigError:
        name = None
    if name is None or name not in deps.registry.backends:
        known = ", ".join(deps.registry.backends)
        raise InputError(f"{raw!r} is not a backend of this server (known: {known})", field="models")
    return name


def _spec(deps: Deps, call: CallProgress, prompt: str, model: str | None, timeout: float | None) -> RunSpec:
    return RunSpec(
        tool=call.tool,
        prompt=prompt,  # never inlined: the question is prose, but `@` in it is not a file request here
        cwd=deps.settings.project_root,
        model=model,
        mode="plan",  # read-only: an opinion, not an edit
        timeout_seconds=timeout or deps.settings.timeout_seconds,
        explicit=frozenset({"model"}) if model else frozenset(),
    )


async def _count(deps: Deps, text: str, model: str | None) -> TokenCount:
    """The API's count where a key is there (as gemini-ask's dryRun), else the labelled estimate."""
    counter = deps.registry.token_counter()
    if counter is None:
        return estimated(text)
    try:
        return TokenCount(await counter.count_tokens(text, model_id(model) if model else None), TokenMethod.COUNTED)
    except (RunFailed, OSError):
        return estimated(text)  # its label says so; the dry run goes on


def _key(key: str | None, part: str) -> JobOptions:
    return JobOptions(idempotency_key=f"consensus:{key}:{part}" if key else None)


async def consensus(deps: Deps, args: ConsensusInput, call: CallProgress) -> Reply:
    members = _members(deps, args)
    card = load_rate_card(deps.settings.env)
    default = deps.registry.default_model(deps.selection().backend)
    if args.dry_run:
        counts = [await _count(deps, member_prompt(args.prompt, m.stance), m.model) for m in members]
        data = dry_run(members, counts, card, default)
        return Reply(markdown(data), data, structured=data)
    if (args.async_ or args.idempotency_key) and (deps.jobs is None or deps.background is None):
        raise InputError("async and idempotencyKey need the job store (this server has none)")
    key = args.idempotency_key or (uuid.uuid4().hex if args.async_ else None)
    timeout = call_timeout(args.timeout_seconds, deps.settings.timeout_seconds)
    specs = [_spec(deps, call, member_prompt(args.prompt, m.stance), m.model, timeout) for m in members]
    for member, spec in zip(members, specs, strict=True):  # all checked first: a refused model leaves no job behind
        check_spec(spec)
        deps.runs.backend(member.backend).check(spec)
    # Registered one after another, in panel order: a resumed task re-registers its jobs in that order.
    records: list[RunRecord] = []
    for n, (member, spec) in enumerate(zip(members, specs, strict=True), 1):
        records.append(await deps.runs.register(spec, member.backend, _key(key, str(n))))
        call.watch(records[-1])  # watched in that order too: a task lists its jobs as they are watched
    if args.async_:
        assert deps.background is not None and key is not None
        deps.background.start_soon(_detached, deps, call, args, members, records, key)
        data = _started(members, records, key)
        return Reply(started_text(data), data, structured=data)
    data = await _panel(deps, call, args, members, records, key)
    return Reply(markdown(data), data, structured=data)


async def _detached(
    deps: Deps, call: CallProgress, args: ConsensusInput, members: list[Member], records: list[RunRecord], key: str
) -> None:
    """The async panel, followed here so its synthesis starts without a collect; the collect attaches to it."""
    with contextlib.suppress(RunFailed, BackendUnavailable, InputError):  # in the jobs; the collect reports it
        await _panel(deps, call, args, members, records, key)


async def _panel(
    deps: Deps,
    call: CallProgress,
    args: ConsensusInput,
    members: list[Member],
    records: list[RunRecord],
    key: str | None,
) -> dict[str, Any]:
    outcomes: list[Outcome | None] = [None] * len(members)

    async def one(index: int) -> None:
        outcomes[index] = await _outcome(deps, members[index], records[index])

    async with anyio.create_task_group() as group:  # the executor's cap admits them: no cap of our own
        for index in range(len(members)):
            group.start_soon(one, index)
    done = [o for o in outcomes if o is not None]
    answered = [o for o in done if o.ok]
    if not answered:
        failures = "; ".join(f"{o.member.label}: {o.error}" for o in done)
        raise RunFailed(
            f"Every model of the consensus failed, so there is nothing to synthesise: {failures}",
            reason=FailureReason.BACKEND_ERROR,
        )
    first = answered[0].member
    judge = Member(args.synthesis_model or first.model, first.backend, None, "synthesis")
    timeout = call_timeout(args.timeout_seconds, deps.settings.timeout_seconds)
    spec = _spec(deps, call, synthesis_prompt(args.prompt, done), judge.model, timeout)
    record = await deps.runs.register(spec, judge.backend, _key(key, "synthesis"))
    call.watch(record)
    synthesis = await _outcome(deps, judge, record)
    default = deps.registry.default_model(deps.selection().backend)
    data = fold(done, synthesis, load_rate_card(deps.settings.env), default)
    if key is not None:
        data["idempotency_key"] = key
    return data


async def _outcome(deps: Deps, member: Member, record: RunRecord) -> Outcome:
    """One call's answer, or its failure as data: a model that fails or times out does not stop the panel."""
    started = time.monotonic()
    try:
        result = await deps.runs.execute(record)
    except (RunFailed, BackendUnavailable) as exc:  # cancelled included: that model is reported as stopped
        return Outcome(member, time.monotonic() - started, error=str(exc), model=record.model, job_id=record.run_id)
    return Outcome(
        member,
        time.monotonic() - started,
        text=result.text,
        model=result.model or record.model,
        usage=result.usage,
        job_id=record.run_id,
    )


def _started(members: list[Member], records: list[RunRecord], key: str) -> dict[str, Any]:
    jobs = [
        {
            "label": m.label,
            "model": m.model or "default",
            "backend": m.backend,
            "stance": m.stance.value if m.stance else None,
            "job_id": r.run_id,
        }
        for m, r in zip(members, records, strict=True)
    ]
    return {
        "answers": jobs,
        "state": "running",
        "idempotency_key": key,
        "next": f'Collect it: call gemini-consensus again with the same prompt and models and idempotencyKey "{key}" '
        "(the recorded answers are reused, nothing is billed again).",
    }


TOOL = ToolDef(
    name="gemini-consensus",
    toolset=Toolset.REVIEW,
    description=(
        "Ask several models one question in parallel (default: the pro and flash tiers; any list, each with an "
        "optional stance for / against / neutral), then one synthesis call states agreement, disagreement and a "
        "recommendation, citing which model said what. A model that fails is reported and the synthesis goes on. "
        "Each answer comes with its time, tokens and estimated cost; dryRun prices the prompts without calling a "
        "model; async and idempotencyKey make it a durable job. Read-only."
    ),
    input_model=ConsensusInput,
    handler=consensus,
    read_only=True,
    prompt_description="Ask several Gemini models and synthesise their answers.",
    output_schema=out.CONSENSUS,
    when=When(75, "a decision that matters: several models' answers and a synthesis that weighs them"),
)

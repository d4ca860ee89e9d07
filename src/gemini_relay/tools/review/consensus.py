"""gemini-consensus: one question to several models, each answering on its own in parallel (each a durable job under
the executor's one cap), a fallback chain standing in for a model that fails, then one synthesis call whose findings
are tagged by who raised them, disagreements kept apart, and, for a review, a verdict. Disagreement is the product:
no round asks the models to converge.

The calls, their idempotency keys and the synthesis: consensus_panel.py.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, Literal

from pydantic import Field

from gemini_relay.backends.backend_registry import resolve_name
from gemini_relay.backends.checks import check_spec
from gemini_relay.content.consensus_rounds import (
    DEFAULT_MODELS,
    MAX_MODELS,
    Member,
    Stance,
    dry_run,
    label_members,
    member_prompt,
    parse_chain,
)
from gemini_relay.content.rate_card import load_rate_card
from gemini_relay.core.tokens import TokenCount, TokenMethod, estimated
from gemini_relay.core.vocabulary import BackendName, Effect, Toolset
from gemini_relay.errors import BackendUnavailable, ConfigError, InputError, RunFailed
from gemini_relay.jobs import RunRecord
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.context_pack import model_id
from gemini_relay.tools.common.controls import call_timeout, idempotency_key_field, timeout_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.review.consensus_panel import Panel, answers, job_options, run_spec, synthesise
from gemini_relay.tools.review.consensus_schema import CONSENSUS
from gemini_relay.tools.review.consensus_text import markdown, started_text

FALLBACK_ENV = "GEMINI_RELAY_CONSENSUS_FALLBACK"
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
    review: bool = Field(
        False,
        description="A review: each finding gets a severity (high, medium, low) and the synthesis ends with a "
        "verdict: ship, fix_first or redesign.",
    )
    fallback: list[str] | None = Field(
        None,
        max_length=MAX_MODELS,
        description=f"Models that stand in, in order, for a model that fails (an error, an empty answer, a "
        f"timeout): ids or aliases, `backend:model` for another backend. Unset: {FALLBACK_ENV}; [] for none.",
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
    idempotency_key: str | None = idempotency_key_field(
        "Retry-safe key: the same key and question return the recorded answers instead of billing again."
    )


def _members(deps: Deps, args: ConsensusInput) -> list[Member]:
    active = deps.selection().backend
    members: list[Member] = []
    for entry in args.models or list(DEFAULT_MODELS):
        if isinstance(entry, str):
            members.append(Member(entry, active))
            continue
        backend = _backend(deps, entry.backend, "models") if entry.backend else active
        members.append(Member(entry.model, backend, Stance(entry.stance) if entry.stance else None))
    return members


def _chain(deps: Deps, args: ConsensusInput, members: list[Member]) -> list[Member]:
    """The fallback chain (the call's, else the environment's), less the panel's own models: a stand-in is a voice
    the panel does not already have."""
    field = "fallback" if args.fallback is not None else FALLBACK_ENV
    raw = ",".join(args.fallback) if args.fallback is not None else deps.settings.env.get(FALLBACK_ENV, "")
    active = deps.selection().backend
    chain: list[Member] = []
    for backend, model in parse_chain(raw, list(deps.registry.backends)):
        member = Member(model, _backend(deps, backend, field) if backend else active)
        if all((m.model, m.backend) != (member.model, member.backend) for m in [*members, *chain]):
            chain.append(member)
    return chain[:MAX_MODELS]


def _backend(deps: Deps, raw: str, field: str) -> BackendName:
    try:
        name = resolve_name(raw)
    except ConfigError:
        name = None
    if name is None or name not in deps.registry.backends:
        known = ", ".join(deps.registry.backends)
        raise InputError(f"{raw!r} is not a backend of this server (known: {known})", field=field)
    return name


async def _count(deps: Deps, text: str, model: str | None) -> TokenCount:
    """The API's count where a key is there (as gemini-ask's dryRun), else the labelled estimate."""
    counter = deps.registry.token_counter()
    if counter is None:
        return estimated(text)
    try:
        return TokenCount(await counter.count_tokens(text, model_id(model) if model else None), TokenMethod.COUNTED)
    except (RunFailed, OSError):
        return estimated(text)  # its label says so; the dry run goes on


async def consensus(deps: Deps, args: ConsensusInput, call: CallProgress) -> Reply:
    active = deps.selection().backend
    raw = _members(deps, args)
    chain = _chain(deps, args, raw)
    show_backend = any(m.backend != active for m in [*raw, *chain])
    members = label_members(raw, show_backend=show_backend)
    card = load_rate_card(deps.settings.env)
    default = deps.registry.default_model(active)
    if args.dry_run:
        counts = [
            await _count(deps, member_prompt(args.prompt, m.stance, review=args.review), m.model) for m in members
        ]
        data = dry_run(members, counts, card, default)
        return Reply(markdown(data), data, structured=data)
    if (args.async_ or args.idempotency_key) and (deps.jobs is None or deps.background is None):
        raise InputError("async and idempotencyKey need the job store (this server has none)")
    key = args.idempotency_key or (uuid.uuid4().hex if args.async_ else None)
    timeout = call_timeout(args.timeout_seconds, deps.settings.timeout_seconds)
    panel = Panel(args.prompt, members, chain, args.review, show_backend, args.synthesis_model, timeout, key)
    prompts = {m.stance: member_prompt(args.prompt, m.stance, review=args.review) for m in [*members, *chain]}
    specs = [run_spec(deps, call, prompts[m.stance], m.model, timeout) for m in members]
    # All checked first, the chain's models too: a refused model leaves no job behind.
    for member in [*members, *chain]:
        spec = run_spec(deps, call, prompts[member.stance], member.model, timeout)
        check_spec(spec)
        deps.runs.backend(member.backend).check(spec)
    _check_synthesis_model(deps, call, panel, [*members, *chain], prompts)
    # Registered one after another, in panel order: a resumed task re-registers its jobs in that order.
    records: list[RunRecord] = []
    for n, (member, spec) in enumerate(zip(members, specs, strict=True), 1):
        records.append(await deps.runs.register(spec, member.backend, job_options(key, str(n))))
        call.watch(records[-1])  # watched in that order too: a task lists its jobs as they are watched
    if args.async_:
        assert deps.background is not None and key is not None
        deps.background.start_soon(_detached, deps, call, panel, records)
        data = _started(members, records, key)
        return Reply(started_text(data), data, structured=data)
    data, receipts = await synthesise(deps, call, panel, await answers(deps, call, panel, records))
    return Reply(markdown(data), data, structured=data, receipts=receipts)


def _check_synthesis_model(
    deps: Deps, call: CallProgress, panel: Panel, candidates: list[Member], prompts: dict[Any, str]
) -> None:
    """The judge runs on the backend of the first model that answers, so synthesisModel is checked on each the panel
    may use, before any job: a model id refused only at synthesis time would leave the panel's jobs billed."""
    if panel.synthesis_model is None:
        return
    for backend in dict.fromkeys(m.backend for m in candidates):
        member = next(m for m in candidates if m.backend == backend)
        spec = run_spec(deps, call, prompts[member.stance], panel.synthesis_model, panel.timeout)
        try:
            check_spec(spec)
            deps.runs.backend(backend).check(spec)
        except InputError as exc:
            if exc.field != "model":
                raise
            raise InputError(str(exc), field="synthesisModel") from exc


async def _detached(deps: Deps, call: CallProgress, panel: Panel, records: list[RunRecord]) -> None:
    """The async panel, followed here so its stand-ins and synthesis start without a collect; the collect attaches."""
    with contextlib.suppress(RunFailed, BackendUnavailable, InputError):  # in the jobs; the collect reports it
        await synthesise(deps, call, panel, await answers(deps, call, panel, records))


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


DOC = Doc(
    "Ask several models one question, each answering independently (default: the pro and flash tiers; any "
    "list, each with an optional stance for / against / neutral); one synthesis lists the findings tagged by "
    "which models raised them (all or some) and keeps their disagreements apart; review: true adds severities "
    "and a verdict (ship / fix_first / redesign). A model that fails is reported and replaced from the fallback "
    "chain; a failed synthesis is made again by another model that answered. dryRun prices the prompts; async "
    "and idempotencyKey make it a durable job. Read-only.",
    prompt="Ask several Gemini models and synthesise their answers.",
    when=When(75, "a decision or review that matters: independent answers, findings tagged by who raised them"),
)
TOOL = ToolDef(
    "gemini-consensus", ConsensusInput, consensus, Effect.ASKS, DOC, toolset=Toolset.REVIEW, output_schema=CONSENSUS
)

"""gemini-consensus's calls: every model answers on its own, in parallel, once (no converging round); each member that
fails (an error, an empty answer, a timeout) is replaced by the next model of the fallback chain, in rounds, until
one answers or the chain is spent; then one synthesis call, asked for tagged findings as JSON, and read back.

Every call is a job whose idempotency key derives from the caller's: `consensus:<key>:<n>` for member n,
`…:<n>:fallback:<k>` for chain entry k standing in for it, `…:synthesis`. Stand-ins are handed out in rounds, in panel
order, from the recorded outcomes only, so a collect after `async` replays the same assignments and attaches to the
same jobs, billing nothing again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from gemini_relay.content.consensus_rounds import Member, Outcome, fold, label_members, member_prompt
from gemini_relay.content.consensus_synthesis import read_synthesis, synthesis_fields, synthesis_prompt
from gemini_relay.content.consensus_synthesis import synthesis_schema as make_synthesis_schema
from gemini_relay.content.rate_card import load_rate_card
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import BackendUnavailable, RunFailed
from gemini_relay.jobs import JobOptions, RunRecord
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.common.progress import CallProgress

EMPTY_ANSWER = "the model gave an empty answer"


@dataclass(frozen=True)
class Panel:
    """One consensus call as the runner needs it: the question, the members, the chain, how each call is made."""

    question: str
    members: list[Member]
    chain: list[Member]  # fallback models, in order, unlabelled and with no stance yet
    review: bool
    show_backend: bool  # labels name the backend (some model runs on another than the active one)
    synthesis_model: str | None
    timeout: float | None
    key: str | None


def job_options(key: str | None, part: str) -> JobOptions:
    return JobOptions(idempotency_key=f"consensus:{key}:{part}" if key else None)


def run_spec(
    deps: Deps,
    call: CallProgress,
    prompt: str,
    model: str | None,
    timeout: float | None,
    schema: dict[str, Any] | None = None,
) -> RunSpec:
    return RunSpec(
        tool=call.tool,
        prompt=prompt,  # never inlined: the question is prose, but `@` in it is not a file request here
        cwd=deps.settings.project_root,
        model=model,
        mode="plan",  # read-only: an opinion, not an edit
        json_schema=schema,
        timeout_seconds=timeout or deps.settings.timeout_seconds,
        explicit=frozenset({"model"}) if model else frozenset(),
    )


async def outcome_of(deps: Deps, member: Member, record: RunRecord, *, allow_empty: bool = False) -> Outcome:
    """One call's answer, or its failure as data: a model that fails, times out or says nothing does not stop the
    panel."""
    started = time.monotonic()
    try:
        result = await deps.runs.execute(record)
    except (RunFailed, BackendUnavailable) as exc:  # cancelled included: that model is reported as stopped
        return Outcome(member, time.monotonic() - started, error=str(exc), model=record.model, job_id=record.run_id)
    seconds = time.monotonic() - started
    model = result.model or record.model
    if not allow_empty and not result.text.strip():
        return Outcome(member, seconds, error=EMPTY_ANSWER, model=model, usage=result.usage, job_id=record.run_id)
    answered = Outcome(member, seconds, text=result.text, model=model, usage=result.usage, job_id=record.run_id)
    return replace(
        answered, receipt=result.receipt, value=result.structured_output, has_value=result.has_structured_output
    )


async def _run_all(deps: Deps, pairs: Sequence[tuple[Member, RunRecord]]) -> list[Outcome]:
    outcomes: list[Outcome | None] = [None] * len(pairs)

    async def one(index: int) -> None:
        member, record = pairs[index]
        outcomes[index] = await outcome_of(deps, member, record)

    async with anyio.create_task_group() as group:  # the executor's cap admits them: no cap of our own
        for index in range(len(pairs)):
            group.start_soon(one, index)
    return [o for o in outcomes if o is not None]


def stand_in(entry: Member, missing: Member, taken: Sequence[Member], *, show_backend: bool) -> Member:
    """Chain `entry` standing in for `missing`: its stance, and a label distinct from every one given so far."""
    labelled = label_members([*taken, replace(entry, stance=missing.stance)], show_backend=show_backend)[-1]
    return replace(labelled, stands_in_for=missing.label)


async def answers(deps: Deps, call: CallProgress, panel: Panel, records: Sequence[RunRecord]) -> list[Outcome]:
    """Every member's outcome, then each failed member's stand-ins' (in panel order, round by round)."""
    done = await _run_all(deps, list(zip(panel.members, records, strict=True)))
    waiting = [(n, m) for n, (m, o) in enumerate(zip(panel.members, done, strict=True), 1) if not o.ok]
    taken = list(panel.members)
    chain = iter(enumerate(panel.chain, 1))
    while waiting:
        round_: list[tuple[int, Member, RunRecord]] = []  # (the missing member's number, its stand-in, the job)
        for (n, missing), (k, entry) in zip(waiting, chain, strict=False):  # the chain may run out mid-round
            member = stand_in(entry, missing, taken, show_backend=panel.show_backend)
            taken.append(member)
            prompt = member_prompt(panel.question, member.stance, review=panel.review)
            spec = run_spec(deps, call, prompt, member.model, panel.timeout)
            record = await deps.runs.register(spec, member.backend, job_options(panel.key, f"{n}:fallback:{k}"))
            call.watch(record)
            round_.append((n, member, record))
        stood = await _run_all(deps, [(member, record) for _, member, record in round_])
        done += stood
        by_number = dict(waiting)
        waiting = [(n, by_number[n]) for (n, _, _), o in zip(round_, stood, strict=True) if not o.ok]
    return done


MAX_JUDGES = 3  # the synthesis call, then up to two models that answered standing in for it


def _judges(panel: Panel, answered: list[Outcome]) -> list[Member]:
    """Who synthesises, in order: synthesisModel (else the first model that answered), then, should that call fail,
    the other models that answered, each on its own backend: a model that just answered is the likeliest to."""
    first = answered[0].member
    judges = [Member(panel.synthesis_model or first.model, first.backend, None, "synthesis")]
    for outcome in answered:
        member = outcome.member
        if all((j.model, j.backend) != (member.model, member.backend) for j in judges):
            judges.append(Member(member.model, member.backend, None, "synthesis"))
    return judges[:MAX_JUDGES]


async def synthesise(
    deps: Deps, call: CallProgress, panel: Panel, done: list[Outcome]
) -> tuple[dict[str, Any], tuple[Receipt, ...]]:
    """The synthesis call over the answers, read back as tagged findings (or, if its JSON is unusable, none); with
    the receipts of the runs that answered, the synthesis's last."""
    answered = [o for o in done if o.ok]
    if not answered:
        failures = "; ".join(f"{o.member.label}: {o.error}" for o in done)
        raise RunFailed(
            f"Every model of the consensus failed, so there is nothing to synthesise: {failures}",
            reason=FailureReason.BACKEND_ERROR,
        )
    labels = [o.member.label for o in answered]
    rows = [(o.member.label, o.member.stance.value if o.member.stance else "none", o.text) for o in answered]
    failed = [o.member.label for o in done if not o.ok]
    prompt = synthesis_prompt(panel.question, rows, failed, review=panel.review)
    schema = make_synthesis_schema(labels, review=panel.review)
    replaced: list[dict[str, Any]] = []
    for n, judge in enumerate(_judges(panel, answered)):
        spec = run_spec(deps, call, prompt, judge.model, panel.timeout, schema)
        part = "synthesis" if n == 0 else f"synthesis:{n + 1}"  # a collect replays the same judges, in order
        record = await deps.runs.register(spec, judge.backend, job_options(panel.key, part))
        call.watch(record)
        synthesis = await outcome_of(deps, judge, record, allow_empty=True)
        if synthesis.ok:
            break
        replaced.append({"model": judge.model or "default", "backend": judge.backend, "error": synthesis.error})
    if synthesis.ok:
        read = read_synthesis(
            synthesis.value, synthesis.text, labels, review=panel.review, has_value=synthesis.has_value
        )
    else:
        read = [f"the synthesis call failed: {synthesis.error}"]
    default = deps.registry.default_model(deps.selection().backend)
    data = fold(done, synthesis, load_rate_card(deps.settings.env), default)
    fields = synthesis_fields(read)
    if fields["tagged"]:
        data["synthesis"].pop("text", None)  # the findings hold it, tagged: the raw JSON would say it twice
    data.update(review=panel.review, **fields)
    if replaced:
        data["synthesis_replaced"] = replaced
    if panel.key is not None:
        data["idempotency_key"] = panel.key
    receipts = tuple(o.receipt for o in [*answered, synthesis] if o.ok and o.receipt is not None)
    return data, receipts

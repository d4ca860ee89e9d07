"""gemini-quota: the backend's remaining quota per group (agy's zero-token /usage), and the compact `quota` field the
other jobs tools carry from the same cache (seed 001's agy_usage and its `quota?` on run, status and wait)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from gemini_relay.core.vocabulary import BackendName, Effect, Toolset
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress

DEFAULT_MAX_AGE = 60.0


class QuotaInput(ToolInput):
    max_age: float | None = Field(
        None,
        gt=0,
        le=86_400,
        validation_alias=AliasChoices("maxAge", "max_age"),  # the seed's spelling carries over
        description="Seconds a cached reading may be old (default 60; under 10 counts as 10). A new reading takes "
        "a few seconds.",
    )


async def quota(deps: Deps, args: QuotaInput, call: CallProgress) -> Reply:
    backend = deps.selection().backend
    reporter = deps.registry.quota_reporter(backend)
    if reporter is None:  # not a failure: this upstream has no quota to read
        note = (
            f"The {deps.registry.label(backend)} reports no quota reading (only agy has one); a run that hits a "
            "quota wall fails with failure_reason quota_exhausted."
        )
        return Reply(note, structured={"backend": backend, "groups": [], "note": note})
    report = await reporter.quota(args.max_age or DEFAULT_MAX_AGE)
    data: dict[str, Any] = {"backend": backend, **report.to_json()}
    return Reply(_markdown(data), structured=data)


def with_quota(deps: Deps, data: dict[str, Any], backend: BackendName | None = None) -> dict[str, Any]:
    """`data` with the compact `quota` field of its backend's last trusted reading, when there is one: read from the
    cache only, so a result never waits on the upstream."""
    name = backend or (BackendName(data["backend"]) if data.get("backend") else None)
    reporter = deps.registry.quota_reporter(name)
    report = reporter.cached_quota() if reporter is not None else None
    if report is not None:
        data["quota"] = report.compact()
    return data


def _markdown(data: dict[str, Any]) -> str:
    head = f"**Quota of {data['backend']}** · read {data['checked_at']}"
    groups: list[dict[str, Any]] = data["groups"]
    if not groups:
        return f"{head}\n\nThe backend reported no quota groups."
    rows = ["| group | level | left | window | resets |", "|---|---|---|---|---|"]
    rows += [
        f"| {g['name']} | {g['level']} | {g['remaining_percent']}% | {g['window']} | {g.get('reset_time', '—')} |"
        for g in groups
    ]
    hint = "A run with priority optional is refused while its model's group is low or worse."
    return "\n\n".join([head, "\n".join(rows), hint])


DOC = Doc(
    "The backend's remaining quota per group, each with a level (ok, low, critical, exhausted) from its tightest "
    "window. Spends no model quota. A backend that keeps no quota has no reading.",
    prompt="Check the remaining Gemini quota.",
)
TOOL = ToolDef(
    "gemini-quota", QuotaInput, quota, Effect.READS, DOC, toolset=Toolset.JOBS, output_schema=out.QUOTA_REPORT
)


async def refresh_quota(deps: Deps) -> None:
    """The server's background quota refresh (GEMINI_RELAY_USAGE_INTERVAL; off by default), for as long as it serves.
    A server with a configuration problem runs nothing, so it reads nothing either."""
    if not deps.problems:
        await deps.registry.refresh_quota()

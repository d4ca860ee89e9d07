"""gemini-models: the models the active backend accepts, with the aliases and the default."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from gemini_relay.core.vocabulary import Effect
from gemini_relay.errors import BackendUnavailable
from gemini_relay.format import with_notices
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress

NO_AGENTS = "Agents: this backend has no agents (`agent` personas are an agy feature)."
AGENT_FILES = "add one as .agents/agents/<name>/agent.md in the project, or ~/.gemini/config/agents/<name>/agent.md"


class ModelsInput(ToolInput):
    # Optional and additive: 1.2.0's call without arguments answers as it did (seed 001's list_agents takes cwd).
    cwd: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="Also list this directory's project agents (default: the project root).",
    )


async def models(deps: Deps, args: ModelsInput, call: CallProgress) -> Reply:
    cwd = deps.resolve_cwd(args.cwd, "cwd") if args.cwd is not None else None
    listing = await deps.registry.models().model_listing()
    notices = list(listing.notices)
    agents, lines = await _agents(deps, notices, cwd)
    # The listing itself is the text; `agents`: the names `agent` takes, null where the backend has none.
    # models / model_details: seed 001's list_models shape, ids alone (for `model`) and each id with its label.
    data = {
        "backend": deps.selection().backend,
        "notices": notices,
        "agents": agents,
        "models": [model_id for model_id, _ in listing.models],
        "model_details": [{"id": model_id, "label": label} for model_id, label in listing.models],
    }
    return Reply(with_notices(notices, "\n".join([*listing.lines, "", *lines])), structured=data)


async def _agents(deps: Deps, notices: list[str], cwd: Path | None) -> tuple[list[str] | None, list[str]]:
    lister = deps.registry.agent_lister()
    if lister is None:
        return None, [NO_AGENTS]
    try:
        names = list(await lister.agents(cwd))
    except BackendUnavailable as exc:
        notices.append(f"The agents could not be listed: {exc}")
        return [], []
    if not names:
        return [], [f"Agents: none ({AGENT_FILES})."]
    return names, ["Agents — pass the name as `agent`:", *(f"- {name}" for name in names)]


DOC = Doc(
    "The model ids the active backend accepts, with aliases and default. No model turn.",
    prompt="List the models the active Gemini backend accepts.",
)
TOOL = ToolDef("gemini-models", ModelsInput, models, Effect.LOCAL, DOC, output_schema=out.MODELS)

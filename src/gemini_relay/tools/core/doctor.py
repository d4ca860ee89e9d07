"""gemini-doctor: binaries, versions, auth and agy quota, checked without spending a token."""

from __future__ import annotations

import platform

from gemini_relay import __version__
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.core.doctor_settings import settings_section


async def doctor(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    settings = deps.settings
    active = deps.selection().backend
    problems = list(deps.problems)  # configuration errors first: with any, nothing runs (server/relay.py)
    sections: dict[str, list[str]] = {}
    lines = [
        f"gemini-relay {__version__} · Python {platform.python_version()} · {platform.system()} {platform.release()}",
        f"Project root: {settings.project_root}",
        f"Active backend: {active} ({chosen_by(deps)})",
        f"Timeout: {settings.timeout_seconds / 60:g} min · max concurrent runs: {settings.max_concurrent}",
        host_line(settings),
    ]
    if deps.problems:
        sections["configuration"] = [
            "## Configuration",
            *(f"- ❌ {p}" for p in deps.problems),
            "- every call but gemini-doctor is refused until these are fixed and the server restarted",
        ]
        lines += ["", *sections["configuration"]]
    sections["settings"] = settings_section(settings.env)
    lines += ["", *sections["settings"]]
    for name in deps.registry.diagnosed():  # the active backend, and the CLIs (a user switching wants to see both)
        section = await deps.registry.diagnoses(name).doctor_section()
        lines += ["", *section.lines]
        sections[name] = section.lines
        if name == active:
            problems += section.problems
    lines.append("")
    if problems:
        lines.append("Verdict: ❌ Action needed")
        lines += [f"- {p}" for p in problems]
    else:
        lines.append("Verdict: ✅ System Ready")
    data = {
        "version": __version__,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "projectRoot": str(settings.project_root),
        "activeBackend": active,
        "backendChosenBy": "GEMINI_MCP_BACKEND" if settings.backend is not None else "automatic",
        "timeoutSeconds": settings.timeout_seconds,
        "maxConcurrent": settings.max_concurrent,
        "relayHost": host_line(settings),
        "sections": sections,
        "ready": not problems,
        "problems": problems,
    }
    return Reply("\n".join(lines), structured=data)


def chosen_by(deps: Deps) -> str:
    """`GEMINI_MCP_BACKEND`, `automatic`, or `automatic: GEMINI_MCP_BACKEND='x' names no backend`."""
    if deps.settings.backend is not None:
        return "GEMINI_MCP_BACKEND"
    refused = deps.registry.refused_choice
    return f"automatic: {deps.registry.unset_reason()}" if refused is not None else "automatic"


def host_line(settings: Settings) -> str:
    """Where runs are made, and how long the per-user relay host outlives its last client (one process each)."""
    if not settings.host:
        return "Relay host: off (GEMINI_RELAY_HOST=off): runs are made in this server and end with it"
    idle = settings.host_idle_seconds
    shown = f"{idle / 60:g} min" if idle >= 60 else f"{idle:g} s"
    return (
        "Relay host: on: one `gemini-relay host` process per state dir makes every server's runs and exits "
        f"{shown} after its last run or request (GEMINI_RELAY_HOST_IDLE)"
    )


DOC = Doc(
    "Check the setup (binaries, backend, auth) without spending tokens; says what to fix.",
    prompt="Diagnose the gemini-relay setup.",
    when=When(90, "when calls fail on setup (binaries, auth, quota); gemini-models lists model ids"),
)
TOOL = ToolDef("gemini-doctor", EmptyInput, doctor, Effect.LOCAL, DOC, output_schema=out.DOCTOR)

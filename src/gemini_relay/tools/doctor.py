"""gemini-doctor: binaries, versions, auth and agy quota, checked without spending a token."""

from __future__ import annotations

import platform

from gemini_relay import __version__
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import EmptyInput


async def doctor(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    settings = deps.settings
    active = deps.selection().backend
    problems: list[str] = []
    sections: dict[str, list[str]] = {}
    lines = [
        f"gemini-relay {__version__} · Python {platform.python_version()} · {platform.system()} {platform.release()}",
        f"Project root: {settings.project_root}",
        f"Active backend: {active}" + (" (GEMINI_MCP_BACKEND)" if settings.backend is not None else " (automatic)"),
        f"Timeout: {settings.timeout_seconds / 60:g} min · max concurrent runs: {settings.max_concurrent}",
    ]
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
        "sections": sections,
        "ready": not problems,
        "problems": problems,
    }
    return Reply("\n".join(lines), structured=data)

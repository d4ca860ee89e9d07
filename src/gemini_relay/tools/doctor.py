"""gemini-doctor: binaries, versions, auth and agy quota, checked without spending a token."""

from __future__ import annotations

import platform
from datetime import UTC, datetime

from gemini_relay import __version__
from gemini_relay.backends.agy_usage import QuotaLevel
from gemini_relay.backends.gemini_auth import gemini_auth_state
from gemini_relay.backends.probe import run_probe
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import EmptyInput


async def doctor(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    settings = deps.settings
    active = deps.selection().backend
    problems: list[str] = []
    lines = [
        f"gemini-relay {__version__} · Python {platform.python_version()} · {platform.system()} {platform.release()}",
        f"Project root: {settings.project_root}",
        f"Active backend: {active.value}"
        + (" (GEMINI_MCP_BACKEND)" if settings.backend is not None else " (automatic)"),
        f"Timeout: {settings.timeout_seconds / 60:g} min · max concurrent runs: {settings.max_concurrent}",
    ]
    agy_lines, agy_problems = await _agy_section(deps)
    gemini_lines, gemini_problems = await _gemini_section(deps)
    lines += ["", *agy_lines, "", *gemini_lines, ""]
    problems += agy_problems if active is BackendName.AGY else gemini_problems
    if problems:
        lines.append("Verdict: ❌ Action needed")
        lines += [f"- {p}" for p in problems]
    else:
        lines.append("Verdict: ✅ System Ready")
    return Reply("\n".join(lines))


async def _agy_section(deps: Deps) -> tuple[list[str], list[str]]:
    lines = ["## agy (Antigravity CLI)"]
    binary = deps.agy.locate()
    if binary is None:
        return [*lines, "- binary: not found"], ["Install agy (the Antigravity CLI) or set AGY_CLI_PATH."]
    lines.append(f"- binary: {binary}")
    try:
        version = await deps.agy.version(binary)
    except BackendUnavailable as exc:
        return [*lines, f"- version: refused ({exc})"], [str(exc)]
    lines += [f"- version: {version}", "", "### Login & Quota"]
    reading = await deps.agy.usage()
    if not reading.ok:
        return [*lines, f"- unavailable: {reading.error}"], [f"agy could not report its quota: {reading.error}"]
    now = datetime.now(UTC)
    problems: list[str] = []
    for group in reading.groups:
        lines.append(f"- {group.describe(now)}")
        if group.level(now) is QuotaLevel.EXHAUSTED and group.mentions_gemini():
            problems.append(f"The {group.name} quota is exhausted; wait for its reset or pick another model group.")
    if not reading.groups:
        lines.append("- signed in; agy reported no quota groups")
    return lines, problems


async def _gemini_section(deps: Deps) -> tuple[list[str], list[str]]:
    lines = ["## Gemini CLI"]
    problems: list[str] = []
    binary = deps.gemini.locate()
    if binary is None:
        lines.append("- binary: not found")
        problems.append("Install the Gemini CLI: `npm install -g @google/gemini-cli`, or set GEMINI_CLI_PATH.")
    else:
        version = await deps.gemini.version()
        shown = version.text.strip().splitlines()[-1] if version.ok else f"unknown ({version.text.strip()[:200]})"
        lines += [f"- binary: {binary}", f"- version: {shown}"]
        if not version.ok:
            problems.append(f"`{binary} --version` failed; reinstall the Gemini CLI.")
    node = await run_probe(["node", "--version"], deps.gemini.env(), deps.settings.project_root, timeout=10.0)
    lines.append(f"- node: {node.text.strip() if node.ok else 'not found'}")
    if not node.ok:
        problems.append("Install Node.js 20 or newer (the Gemini CLI runs on it).")
    auth = gemini_auth_state(deps.gemini.env())
    lines.append(f"- auth: {auth.summary}")
    if not auth.ok:
        problems.append(auth.fix)
    return lines, problems

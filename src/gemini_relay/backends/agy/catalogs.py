"""agy's model and agent catalogs: the JSON envelopes of `agy --output-format json models|agents` (agy.md §1.5-1.6).

Parsing is pure; `fetch_models` / `fetch_agents` run the command with stdout kept apart from stderr (agy prints a
"Fetching available models..." banner there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.model_names import Catalog, ModelInfo
from gemini_relay.errors import BackendUnavailable
from gemini_relay.supervise.process import ProcessSpec, SpawnError, run_process

CATALOG_TIMEOUT = 30.0  # agy asks its backend for the catalog; agy-mcp allows 30 s
CATALOG_GRACE = 1.0  # an informational command has nothing to flush on SIGTERM


# Shown (with a notice) when `agy models` cannot answer. Ids from agy.md §1.5 and V-Songbird/gemini-relay's own
# fallback list; the non-Gemini rows are the ones peers list (they draw on a separate quota group).
FALLBACK_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
    ModelInfo("gemini-3.8-flash-medium", "Gemini 3.8 Flash (Medium)"),
    ModelInfo("gemini-3.8-flash-low", "Gemini 3.8 Flash (Low)"),
    ModelInfo("gemini-3.7-flash-high", "Gemini 3.7 Flash (High)"),
    ModelInfo("gemini-3.7-flash-medium", "Gemini 3.7 Flash (Medium)"),
    ModelInfo("gemini-3.7-flash-low", "Gemini 3.7 Flash (Low)"),
    ModelInfo("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"),
    ModelInfo("gemini-3.1-pro-low", "Gemini 3.1 Pro (Low)"),
    ModelInfo("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)"),
    ModelInfo("claude-opus-4-6-thinking", "Claude Opus 4.6 (Thinking)"),
    ModelInfo("gpt-oss-120b-medium", "GPT-OSS 120B (Medium)"),
)
FALLBACK_NOTICE = "agy could not list its models ({why}); this is gemini-relay's built-in list and may be out of date."


class EnvelopeError(ValueError):
    """An agy JSON envelope is missing, malformed, or reports a failure (a parse result; never leaves the backend)."""


@dataclass(frozen=True)
class CommandOutput:
    returncode: int | None  # None: it did not finish within the timeout
    stdout: str
    stderr: str


def parse_envelope(stdout: str, command: str) -> dict[str, Any]:
    """`command.data` of a SUCCESS envelope for `command` (models, agents, usage).

    Raises:
        EnvelopeError: not one JSON object, status not SUCCESS, or another command's envelope.
    """
    try:
        value = json.loads(stdout)
    except ValueError as exc:
        raise EnvelopeError(f"agy's {command} output is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise EnvelopeError(f"agy's {command} output is not a JSON object")
    envelope: dict[str, Any] = value
    status = envelope.get("status")
    if status != "SUCCESS":
        error = envelope.get("error")
        raise EnvelopeError(f"agy's {command} reported status {status!r}" + (f": {error}" if error else ""))
    cmd = envelope.get("command")
    name = cmd.get("name") if isinstance(cmd, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    if name != command:
        raise EnvelopeError(f"agy answered with a {name!r} envelope instead of {command!r}")
    data = cmd.get("data") if isinstance(cmd, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    if not isinstance(data, dict):
        raise EnvelopeError(f"agy's {command} envelope has no command.data")
    return data  # pyright: ignore[reportUnknownVariableType]


def parse_models(stdout: str) -> tuple[ModelInfo, ...]:
    """Raises EnvelopeError unless `command.data.models` is present and non-null (`[]` is a valid empty catalog)."""
    models = parse_envelope(stdout, "models").get("models")
    if not isinstance(models, list):
        raise EnvelopeError("agy's models envelope has no command.data.models list")
    found: list[ModelInfo] = []
    for entry in models:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:  # pyright: ignore[reportUnknownMemberType]
            label = entry.get("label")  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
            found.append(ModelInfo(str(entry["id"]), label if isinstance(label, str) and label else str(entry["id"])))  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(entry, str) and entry:
            found.append(ModelInfo(entry, entry))
    return tuple(found)


def parse_agents(stdout: str) -> tuple[str, ...]:
    """Agent names exactly as `--agent` takes them (bare strings, measured 1.1.24)."""
    agents = parse_envelope(stdout, "agents").get("agents")
    if not isinstance(agents, list):
        raise EnvelopeError("agy's agents envelope has no command.data.agents list")
    return tuple(a for a in agents if isinstance(a, str) and a)  # pyright: ignore[reportUnknownVariableType]


async def run_capture(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = CATALOG_TIMEOUT
) -> CommandOutput:
    """Run an informational agy command with stdin closed; stdout and stderr kept apart.

    Raises:
        SpawnError: the binary could not be executed.
    """
    out = bytearray()
    with anyio.move_on_after(timeout):
        exit_ = await run_process(ProcessSpec(argv=argv, env=env, cwd=cwd), out.extend, grace=CATALOG_GRACE)
        return CommandOutput(exit_.returncode, out.decode("utf-8", errors="replace"), exit_.stderr)
    return CommandOutput(None, out.decode("utf-8", errors="replace"), "")


async def fetch_models(binary: Path, env: Mapping[str, str], cwd: Path) -> Catalog:
    """The live catalog, or the fallback list with a notice saying why agy could not answer. Never raises."""
    try:
        # The global flag must precede the subcommand: `agy models --output-format json` is rejected.
        result = await run_capture([str(binary), "--output-format", "json", "models"], env, cwd)
    except SpawnError as exc:
        return _fallback(str(exc))
    if result.returncode is None:
        return _fallback(f"`agy models` did not answer within {CATALOG_TIMEOUT:g}s")
    if result.returncode != 0:
        detail = " ".join(result.stderr.split())[-300:]
        return _fallback(f"`agy models` exited {result.returncode}" + (f": {detail}" if detail else ""))
    try:
        return Catalog(parse_models(result.stdout), live=True)
    except EnvelopeError as exc:
        return _fallback(str(exc))


async def fetch_agents(binary: Path, env: Mapping[str, str], cwd: Path) -> tuple[str, ...]:
    """Global agents plus the project's (agy lists `.agents/agents/` only for a workspace given as --add-dir).

    Raises:
        BackendUnavailable: agy could not be run, failed, or answered something else.
    """
    # Go's flag parsing stops at the subcommand, so every flag goes before it.
    argv = [str(binary), "--output-format", "json", "--add-dir", str(cwd), "agents"]
    try:
        result = await run_capture(argv, env, cwd)
    except SpawnError as exc:
        raise BackendUnavailable(str(exc)) from exc
    if result.returncode != 0:
        detail = " ".join(result.stderr.split())[-300:]
        ended = "did not answer in time" if result.returncode is None else f"exited {result.returncode}"
        raise BackendUnavailable(f"`agy agents` {ended}" + (f": {detail}" if detail else ""))
    try:
        return parse_agents(result.stdout)
    except EnvelopeError as exc:
        raise BackendUnavailable(str(exc)) from exc


def _fallback(why: str) -> Catalog:
    return Catalog(FALLBACK_MODELS, live=False, notice=FALLBACK_NOTICE.format(why=why))

"""Argv for one Gemini CLI run: only flags `gemini --help` advertises; everything dropped becomes a notice."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from gemini_relay.backends.literal_prompt import neutralise_prompt
from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.backends.probe import ProbeResult, parse_flags
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import InputError

_APPROVAL = {"plan": "plan", "accept-edits": "auto_edit"}
# First character alphanumeric: an id like `--yolo` would otherwise reach the CLI as a flag of its own.
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


@dataclass
class Invocation:
    argv: list[str]
    stdin: str
    session_id: str | None = None
    notices: list[str] = field(default_factory=list[str])
    model: str | None = None  # the -m given (None: the CLI routes)


def resolve_model(requested: str | None, default: str | None) -> str | None:
    """An alias or id -> the id to pass with -m; `auto` (or nothing) lets the CLI route."""
    model = (requested or default or "").strip()
    if "\t" in model:  # a pasted "<id>\t<label>" row from a models listing
        model = model.split("\t", 1)[0].strip()
    if not model or model.lower() == "auto":
        return None
    return GEMINI_ALIASES.get(model.lower(), model)


# The optional flags build_invocation uses, which every Gemini CLI the relay supports advertises: assumed when
# `--help` did not answer in time (a loaded machine), since a timeout is no evidence that a flag is missing; a CLI
# that really lacks one refuses it with an error the run reports.
ASSUMED_FLAGS = frozenset(
    {"--output-format", "--model", "--include-directories", "--sandbox", "--approval-mode", "--yolo", "--resume",
     "--session-id"}
)  # fmt: skip


def advertised_flags(probe: ProbeResult) -> frozenset[str] | None:
    """What `--help` advertised; ASSUMED_FLAGS when it did not answer in time; None when it failed."""
    if probe.ok:
        return parse_flags(probe.text)
    return ASSUMED_FLAGS if probe.timed_out else None


def build_invocation(
    binary: str, spec: RunSpec, flags: frozenset[str] | None, *, default_model: str | None
) -> Invocation:
    """`flags` is what --help advertised, or None when the probe failed (then no optional flag is sent)."""
    have = flags or frozenset()
    inv = Invocation(argv=[binary, "--output-format", "stream-json"], stdin=spec.prompt)

    def unsupported(option: str, value: str) -> None:
        inv.notices.append(f"{option} {value} is not supported by the installed Gemini CLI; it was ignored.")

    model = resolve_model(spec.model, default_model)
    if model is not None and model.startswith("-"):
        # After -m it would be parsed as a flag of its own (`-m --yolo`).
        raise InputError(f"model {model!r} is not a model id; see gemini-models for the ids this backend accepts")
    if model is not None:
        if "--model" in have:
            inv.argv += ["-m", model]
            inv.model = model
        else:
            unsupported("model", model)
    if spec.effort is not None and "effort" in spec.explicit:
        inv.notices.append(
            f"effort {spec.effort} has no Gemini CLI equivalent; the model's default reasoning was used."
        )
    _approval(inv, spec, have)
    for directory in spec.add_dirs:
        if "--include-directories" in have:
            inv.argv += ["--include-directories", str(directory)]
        else:
            unsupported("addDirs", str(directory))
    _session(inv, spec, have)
    if spec.agent is not None:
        inv.notices.append(f"agent {spec.agent} is an agy feature; the Gemini CLI ran without it.")
    if spec.sandbox:
        if "--sandbox" in have:
            inv.argv.append("--sandbox")
        else:
            unsupported("sandbox", "true")
    if spec.json_schema is not None:
        inv.stdin = with_schema_instruction(spec.prompt, spec.json_schema)
        inv.notices.append(
            "jsonSchema: the Gemini CLI has no schema flag; the schema was given to the model as an instruction."
        )
    # Last, over the whole text: the CLI would expand any `@` left in it (diffs, queries, schema descriptions).
    inv.stdin = neutralise_prompt(inv.stdin, allow_slash_commands=spec.allow_slash_commands)
    return inv


def with_schema_instruction(prompt: str, schema: dict[str, object]) -> str:
    return (
        f"{prompt}\n\nRespond with only a JSON value (no prose, no code fences) that validates against this JSON "
        f"Schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def _approval(inv: Invocation, spec: RunSpec, have: frozenset[str]) -> None:
    mode = _APPROVAL.get(spec.mode or "")
    if spec.skip_permissions:
        if mode == "plan":
            inv.notices.append("skipPermissions was ignored: plan mode is read-only.")
        else:
            mode = "yolo"
    if mode is None:
        return
    if "--approval-mode" in have:
        inv.argv += ["--approval-mode", mode]
    elif mode == "yolo" and "--yolo" in have:
        inv.argv.append("--yolo")
    else:
        asked = "skipPermissions" if mode == "yolo" else f"mode {spec.mode}"
        inv.notices.append(f"{asked} is not supported by the installed Gemini CLI; it was ignored.")


def _session(inv: Invocation, spec: RunSpec, have: frozenset[str]) -> None:
    if spec.conversation_id is not None:
        if not SESSION_ID.fullmatch(spec.conversation_id):
            raise InputError(
                "conversationId must be letters, digits, '-' or '_', starting with a letter or digit "
                "(as printed after 🧵 conversationId)"
            )
        if "--resume" not in have:
            raise InputError("The installed Gemini CLI cannot resume conversations (no --resume flag)")
        inv.argv += ["--resume", spec.conversation_id]
        inv.session_id = spec.conversation_id
    elif spec.session_id is not None and "--session-id" in have:
        # Only when the caller needs the id before the first event (a gemini-run job names its conversation at
        # once): --session-id costs the CLI ~250 ms per start, and a synchronous call learns the id from `init`.
        inv.session_id = spec.session_id
        inv.argv += ["--session-id", inv.session_id]

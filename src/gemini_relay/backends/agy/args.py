"""Argv and stdin for one agy run (agy.md §1.1, §1.8, §2.3): only flags `agy --help` lists; every dropped option is
a notice; the prompt travels on stdin as one stream-json line when agy can read it, else as `-p` with stdin closed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gemini_relay.backends.literal_prompt import neutralise_at_references
from gemini_relay.backends.model_names import ModelInfo
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import ConfigError, InputError

# The relay's cross-backend aliases, as agy ids (V-Songbird/gemini-relay's mapping).
MODEL_ALIASES = {"flash": "gemini-3.8-flash-high", "pro": "gemini-3.1-pro-high"}
EFFORTS = ("low", "medium", "high")
_TIERED = re.compile(r"^(?P<family>.+)-(?P<tier>low|medium|high)$")
CONVERSATION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_AGENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
# Short wrapper timeouts cannot spare a whole minute for agy to report its own timeout, so they get half.
PRINT_TIMEOUT_MARGIN = 60.0
PRINT_TIMEOUT_HALVING_LIMIT = 120.0
# Guaranteed by the 1.1.15 floor (changelog: 1.1.8-1.1.12), so usable when `--help` cannot be read.
FLOOR_FLAGS = frozenset({"--output-format", "--disable-slash-commands", "--model", "--effort", "--mode"})
_FLAG = re.compile(r"(?<![\w-])--?([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
# The --input-format entry up to the next flag line (Go's usage puts the description on the following line).
_INPUT_FORMAT_ENTRY = re.compile(r"(?<![\w-])--?input-format\b(?:(?!\n[ \t]*-)[\s\S]){0,400}")
_GO_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|m|s|ms))+$")
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass(frozen=True)
class Capabilities:
    """What the installed agy accepts. `probed` is False when `--help` failed and only FLOOR_FLAGS are assumed."""

    flags: frozenset[str]
    stream_json_input: bool
    probed: bool = True

    def has(self, flag: str) -> bool:
        return flag in self.flags


FLOOR_CAPABILITIES = Capabilities(FLOOR_FLAGS, stream_json_input=False, probed=False)


def parse_help(help_text: str) -> Capabilities:
    """Every option `agy --help` lists (Go prints `-flag`, cobra `--flag`: both count), normalised to `--flag`."""
    flags = frozenset(f"--{name}" for name in _FLAG.findall(help_text))
    entry = _INPUT_FORMAT_ENTRY.search(help_text)
    return Capabilities(flags, stream_json_input=entry is not None and "stream-json" in entry.group(0))


@dataclass
class ModelChoice:
    model: str | None
    effort: str | None
    notices: list[str] = field(default_factory=list[str])


@dataclass
class Invocation:
    argv: list[str]
    stdin: bytes | None  # None: /dev/null (an open pipe would block agy forever)
    prompt_on_stdin: bool
    schema_run: bool
    model: str | None
    notices: list[str] = field(default_factory=list[str])


def reduce_model(raw: str | None, catalog: Sequence[ModelInfo]) -> str | None:
    """A pasted `id<TAB>label` row, a display label or an alias -> an id; `auto`/empty -> None (agy's default)."""
    model = (raw or "").strip()
    if "\t" in model:
        model = model.split("\t", 1)[0].strip()
    if not model or model.lower() in ("auto", "default"):
        return None
    if model.lower() in MODEL_ALIASES:
        return MODEL_ALIASES[model.lower()]
    if any(m.id == model for m in catalog):
        return model
    by_label = {m.label.casefold(): m.id for m in catalog}
    return by_label.get(model.casefold(), model)


def resolve_model(
    requested: str | None, effort: str | None, default: str | None, catalog: Sequence[ModelInfo]
) -> ModelChoice:
    """One model + effort pair agy accepts (agy 1.2.3+ refuses a tiered id such as gemini-3.8-flash-high with a
    different --effort, and every label once --effort is set), or the model alone with a notice saying why not."""
    model = reduce_model(requested or default, catalog)
    ids = {m.id for m in catalog}
    if model is None or effort is None:
        return ModelChoice(model, effort)
    if model not in ids and f"{model}-{effort}" in ids:
        return ModelChoice(f"{model}-{effort}", None)  # a family name such as gemini-3.8-flash
    tiered = _TIERED.match(model)
    if tiered is None:
        if model not in ids and (" " in model or "(" in model):
            return ModelChoice(
                model,
                None,
                [
                    f"effort {effort} was not applied: {model!r} is not an agy model id, and agy refuses a display "
                    "label together with --effort. Pass an id from gemini-models."
                ],
            )
        return ModelChoice(model, effort)
    if tiered["tier"] == effort:
        return ModelChoice(model, None)  # the id already carries this effort
    sibling = f"{tiered['family']}-{effort}"
    if sibling in ids:
        notice = f"effort {effort} was applied by running {sibling} (agy model ids carry their effort tier)."
        return ModelChoice(sibling, None, [notice] if (requested or "").strip() == model else [])
    tiers = [t for t in EFFORTS if f"{tiered['family']}-{t}" in ids]
    available = f"; it offers {', '.join(tiers)}" if tiers else ""
    return ModelChoice(
        model,
        None,
        [
            f"effort {effort} was not applied: {model} carries effort {tiered['tier']} and agy lists no "
            f"{sibling}{available}."
        ],
    )


def go_duration(seconds: float) -> str:
    """Seconds in Go's Duration.String() form at whole-second precision: 30m0s, 1h0m0s, 45s."""
    total = max(1, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def parse_go_duration(text: str, name: str = "AGY_PRINT_TIMEOUT") -> float:
    """`44m`, `1h30m`, `90s` or bare seconds -> seconds.

    Raises:
        ConfigError: not a positive duration.
    """
    raw = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", raw):
        seconds = float(raw)
    elif _GO_DURATION.fullmatch(raw):
        seconds = sum(float(n) * _GO_UNITS[unit] for n, unit in _GO_PART.findall(raw))
    else:
        raise ConfigError(f"{name}={text!r} is not a duration such as 44m, 1h30m or 90s", variable=name)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{name}={text!r} must be greater than 0", variable=name)
    return seconds


def print_timeout_arg(timeout_seconds: float, override: str | None) -> str:
    """agy's own deadline, strictly inside the server's so agy can still return partial output (V-Songbird)."""
    if override:
        return go_duration(parse_go_duration(override))
    if timeout_seconds > PRINT_TIMEOUT_HALVING_LIMIT:
        return go_duration(timeout_seconds - PRINT_TIMEOUT_MARGIN)
    return go_duration(max(1.0, math.floor(timeout_seconds / 2)))


def stream_json_user_line(prompt: str) -> bytes:
    """The one NDJSON line agy reads with `--input-format stream-json` (agy.md §2.3)."""
    line = {"event": "user", "message": {"role": "user", "content": prompt}}
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def with_schema_instruction(prompt: str, schema: dict[str, object]) -> str:
    return (
        f"{prompt}\n\nRespond with only a JSON value (no prose, no code fences) that validates against this JSON "
        f"Schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def build_invocation(
    binary: str,
    spec: RunSpec,
    caps: Capabilities,
    *,
    default_model: str | None,
    print_timeout_override: str | None,
    catalog: Sequence[ModelInfo],
    project_rules: bool = True,
) -> Invocation:
    """Raises InputError for a request agy cannot take at all (bad conversation id, no --conversation)."""
    prompt = spec.prompt
    # agy answers slash commands only from -p; under stream-json input it refuses them.
    slash = spec.allow_slash_commands and prompt.lstrip().startswith("/")
    on_stdin = caps.stream_json_input and caps.has("--input-format") and not slash
    inv = Invocation(argv=[binary], stdin=None, prompt_on_stdin=on_stdin, schema_run=False, model=None)

    def flag(name: str, *values: str, option: str | None = None, shown: str | None = None) -> bool:
        if caps.has(name):
            inv.argv += [name, *values]
            return True
        if option is not None:
            value = shown if shown is not None else " ".join(values)
            asked = f"{option} {value}" if value else option
            inv.notices.append(
                f"{asked} is not supported by the installed agy (its --help does not list {name}); it was ignored."
            )
        return False

    if spec.skip_permissions:
        flag("--dangerously-skip-permissions", option="skipPermissions", shown="")
    flag("--print-timeout", print_timeout_arg(spec.timeout_seconds, print_timeout_override))
    if on_stdin:
        inv.argv += ["--input-format", "stream-json"]
    inv.argv += ["--output-format", "stream-json"]  # the floor guarantees it; without it nothing can be decoded
    literal = not spec.allow_slash_commands
    if literal and not flag("--disable-slash-commands") and prompt.lstrip().startswith("/"):
        inv.notices.append("This agy cannot keep a prompt starting with / literal; agy may run it as a command.")
    _model_flags(inv, spec, caps, default_model, catalog, flag)
    if spec.mode is not None:
        flag("--mode", spec.mode, option="mode")
    if spec.agent is not None:
        if not _AGENT.match(spec.agent):
            raise InputError(f"agent {spec.agent!r} is not an agent name (letters, digits, '.', '_' or '-')")
        flag("--agent", spec.agent, option="agent")
    if spec.sandbox:
        flag("--sandbox", option="sandbox", shown="")
        inv.notices.append(
            "sandbox: agy does not isolate tool execution; its tools still run with your user's privileges."
        )
    _dirs(inv, spec, caps, flag, project_rules=spec.project_rules if spec.project_rules is not None else project_rules)
    if spec.conversation_id is not None:
        if not CONVERSATION_ID.match(spec.conversation_id):
            raise InputError("conversationId must be an agy conversation id (as printed after 🧵 conversationId)")
        if not caps.has("--conversation"):
            raise InputError("The installed agy cannot continue conversations (its --help lists no --conversation)")
        inv.argv += ["--conversation", spec.conversation_id]
    if spec.json_schema is not None:
        if caps.has("--json-schema"):
            inv.argv += ["--json-schema", json.dumps(spec.json_schema, ensure_ascii=False, separators=(",", ":"))]
            inv.schema_run = True
        else:
            prompt = with_schema_instruction(prompt, spec.json_schema)
            inv.notices.append(
                "jsonSchema: the installed agy has no --json-schema; the schema was given to the model as an "
                "instruction and the answer was not validated."
            )
    prompt = neutralise_at_references(prompt)  # whether agy expands `@` itself is unknown: assume it does
    if on_stdin:
        inv.stdin = stream_json_user_line(prompt)
    else:
        inv.argv += ["-p", prompt]
    return inv


def _model_flags(
    inv: Invocation,
    spec: RunSpec,
    caps: Capabilities,
    default_model: str | None,
    catalog: Sequence[ModelInfo],
    flag: _Flag,
) -> None:
    choice = resolve_model(spec.model, spec.effort, default_model, catalog)
    inv.notices += choice.notices
    if choice.model is not None:
        if choice.model.startswith("-"):
            raise InputError(f"model {choice.model!r} is not a model id")
        if flag("--model", choice.model, option="model"):
            inv.model = choice.model
    if choice.effort is not None:
        flag("--effort", choice.effort, option="effort")


def _dirs(inv: Invocation, spec: RunSpec, caps: Capabilities, flag: _Flag, *, project_rules: bool) -> None:
    cwd = _real(spec.cwd)
    seen: set[Path] = set()
    if project_rules and caps.has("--add-dir"):
        # Only --add-dir makes the cwd a workspace on 1.2.9 (AGENTS.md, hooks); harmless where cwd already is one.
        # Opting out omits only this flag: agy 1.2.16 treats the cwd as a workspace anyway (agy-mcp, MEASURED).
        inv.argv += ["--add-dir", str(cwd)]
        seen.add(cwd)
    for directory in spec.add_dirs:
        real = _real(directory)
        if real in seen:
            continue
        seen.add(real)
        flag("--add-dir", str(real), option="addDirs")


def _real(path: Path) -> Path:
    try:
        return path.resolve(strict=True)
    except OSError:
        return path.absolute()


class _Flag(Protocol):  # build_invocation's local `flag` helper, as the helpers it is passed to see it
    def __call__(self, name: str, *values: str, option: str | None = None, shown: str | None = None) -> bool: ...

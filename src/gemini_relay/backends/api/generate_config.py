"""RunSpec -> one GenerateContentConfig: model, thinking, plan mode, schema, search; what cannot apply -> notices."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from google.genai import types

from gemini_relay.backends.api.common import SEARCH_TOOLS, resolve_model
from gemini_relay.core.spec import RunSpec

PLAN_INSTRUCTION = (
    "You are in plan mode: analyse the request and answer with a plan only. Do not claim to have changed, created "
    "or run anything; describe the steps, the files involved and the risks, and stop there."
)
# Gemini 2.5 takes a token budget; Gemini 3 takes a level. Budgets stay inside every 2.5 model's range.
_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}
_LEVELS = {"low": types.ThinkingLevel.LOW, "medium": types.ThinkingLevel.MEDIUM, "high": types.ThinkingLevel.HIGH}
_BUDGET_MODELS = re.compile(r"gemini-2\.5-")
_LEVEL_MODELS = re.compile(r"gemini-[3-9](?:\.\d+)?-")
# RunSpec fields that mean something only to an agent CLI: (field, caller-facing name).
_AGENT_ONLY = (
    ("agent", "agent"),
    ("sandbox", "sandbox"),
    ("skip_permissions", "skipPermissions"),
    ("add_dirs", "addDirs"),
    ("allow_slash_commands", "allowSlashCommands"),
)


@dataclass
class Request:
    """What one run sends: the model id, the generation config, and the notices the options produced."""

    model: str
    config: types.GenerateContentConfig
    notices: list[str] = field(default_factory=list[str])
    structured: bool = False
    search: bool = False


def thinking_config(model: str, effort: str | None) -> types.ThinkingConfig | None:
    """The thinking setting for `effort` on `model`, or None when the model takes none the relay knows."""
    if effort is None:
        return None
    key = effort.lower()
    if _LEVEL_MODELS.match(model) and key in _LEVELS:
        return types.ThinkingConfig(thinking_level=_LEVELS[key])
    if _BUDGET_MODELS.match(model) and key in _BUDGETS:
        return types.ThinkingConfig(thinking_budget=_BUDGETS[key])
    return None


def build_request(spec: RunSpec, default_model: str | None) -> Request:
    requested = spec.model
    model = resolve_model(requested, default_model)
    notices: list[str] = []
    if requested and requested.strip().lower() == "auto" and "model" in spec.explicit:
        notices.append(f"model auto: the Gemini API has no router; {model} answered.")
    config = types.GenerateContentConfig()
    thinking = thinking_config(model, spec.effort)
    if thinking is not None:
        config.thinking_config = thinking
    elif spec.effort is not None and "effort" in spec.explicit:
        notices.append(f"effort {spec.effort} has no thinking setting the relay knows for {model}; it was ignored.")
    if spec.mode == "plan":
        config.system_instruction = PLAN_INSTRUCTION
    elif spec.mode is not None and "mode" in spec.explicit:
        notices.append(f"mode {spec.mode}: the api backend has no tools and never edits files; it answered in text.")
    for name, shown in _AGENT_ONLY:
        value = getattr(spec, name)
        if value and name in spec.explicit:
            notices.append(f"{shown} applies to agent CLIs only; the api backend ignored it.")
    search = spec.tool in SEARCH_TOOLS
    if search:
        config.tools = [types.Tool(google_search=types.GoogleSearch())]
    structured = spec.json_schema is not None
    if structured:
        config.response_mime_type = "application/json"
        config.response_json_schema = spec.json_schema
    return Request(model, config, notices, structured=structured, search=search)

"""Every tool is also an MCP prompt, so slash-command clients can surface it; prompts/get names the tool to call."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from gemini_relay.tools.common.context import ToolDef
from gemini_relay.tools.common.inputs import wire_schema

_FIRST = ("prompt", "task", "query", "cacheKey", "jobId")


def prompts_for(tools: list[ToolDef]) -> list[types.Prompt]:
    return [
        types.Prompt(
            name=tool.name.value,
            description=tool.prompt_description or tool.description,
            arguments=[
                types.PromptArgument(name=name, description=prop.get("description"), required=name in required)
                for name, prop, required in _arguments(tool)
            ],
        )
        for tool in tools
    ]


def _arguments(tool: ToolDef) -> list[tuple[str, dict[str, Any], list[str]]]:
    schema = wire_schema(tool.input_model)  # type: ignore[arg-type]
    return [(name, prop, schema["required"]) for name, prop in schema["properties"].items()]


def prompt_text(tool: ToolDef, arguments: dict[str, str]) -> str:
    """`Use the gemini-ask tool: Explain @src/index.ts (model: pro) [changeMode]`.

    The main argument comes first; a true boolean renders as [name], anything else as (name: value); false and
    empty values are dropped. Prompt arguments arrive as strings, so booleans are read through the tool's schema.
    """
    kinds = {name: prop.get("type") for name, prop, _ in _arguments(tool)}
    head = ""
    rest: list[str] = []
    for name, value in arguments.items():
        text = str(value).strip()
        if not text:
            continue
        if kinds.get(name) == "boolean":
            if text.lower() in ("true", "1", "yes"):
                rest.append(f"[{name}]")
            continue
        if name in _FIRST and not head:
            head = text
        else:
            rest.append(f"({name}: {text})")
    return f"Use the {tool.name.value} tool: " + " ".join(p for p in [head, *rest] if p)

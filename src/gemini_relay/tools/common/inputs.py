"""What every tool's input model shares: the strict camelCase base (ToolInput), the run options gemini-ask and
gemini-run share, the argument types, and wire_schema — the JSON Schema clients see, generated from the same model
that validates. Each tool's own input model lives in its module."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from gemini_relay.tools.common.controls import continue_latest_field, timeout_field
from gemini_relay.tools.common.path_args import check_path_text

Effort = Literal["low", "medium", "high"]
Mode = Literal["accept-edits", "plan"]
Isolation = Literal["none", "worktree"]
AspectRatio = Literal[
    "1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9", "4:1", "1:4", "8:1", "1:8"
]
ImageSize = Literal["512", "1K", "2K", "4K"]
CACHE_KEY_PATTERN = r"^[0-9a-f]{8}$"
# A path argument the OS can take: no NUL, within PATH_MAX and NAME_MAX (else "internal error" deep in a run).
PathText = Annotated[str, AfterValidator(check_path_text)]


class ToolInput(BaseModel):
    """Strict, camelCase on the wire, unknown arguments refused. An explicit null means "not given"."""

    model_config = ConfigDict(
        extra="forbid", strict=True, alias_generator=to_camel, validate_by_alias=True, validate_by_name=False
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}  # pyright: ignore[reportUnknownVariableType]
        return data


class PromptOptions(ToolInput):
    """What gemini-ask and gemini-run share: everything that shapes one model run."""

    prompt: str = Field(
        min_length=1,
        description="The request; @file, @. or @src/**/*.ts include project files.",
    )
    model: str | None = Field(
        None,
        description="A model id from gemini-models, or 'flash' or 'pro'.",
    )
    effort: Effort | None = None
    mode: Mode | None = Field(None, description="'plan': read-only; 'accept-edits': may edit files.")
    json_schema: str | dict[str, Any] | None = Field(
        None, description="A JSON Schema (object or string) the answer follows."
    )
    add_dirs: list[PathText] | None = Field(None, description="Extra directories the agent may read.")
    conversation_id: str | None = Field(
        None,
        description="A reply's 🧵 conversationId, to continue it.",
    )
    agent: str | None = Field(None, description="A custom agent (agent.md) to run.")
    allow_slash_commands: bool = Field(
        False,
        description="Expand a leading '/' command or skill.",
    )
    skip_permissions: bool = Field(False, description="Run agent tools without approval (yolo).")
    include_usage: bool = Field(False, description="Append token usage (not with jsonSchema).")
    sandbox: bool = Field(False, description="Run agent tools in a sandbox.")
    change_mode: bool = Field(False, description="Answer as edits: file, exact old text, new text.")
    timeout_seconds: float | None = timeout_field()
    continue_latest: bool = continue_latest_field()


class EmptyInput(ToolInput):
    """Tools without parameters still refuse unknown arguments."""


def wire_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The inputSchema for tools/list: always {"type":"object","properties":…,"required":[…]}, defaults kept."""
    raw = model.model_json_schema(by_alias=True)
    defs: dict[str, Any] = raw.get("$defs", {})
    properties = {name: _clean(_inline(prop, defs)) for name, prop in raw.get("properties", {}).items()}
    return {
        "type": "object",
        "properties": properties,
        "required": list(raw.get("required", [])),
        "additionalProperties": False,
    }


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with every `$ref` to a nested model replaced by that model's schema: some clients resolve no refs
    (a list of {model, stance} objects must read whole). Input models are not recursive, so this ends."""
    if isinstance(node, dict):
        ref = node.get("$ref")  # pyright: ignore[reportUnknownMemberType]
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in node.items() if k != "$ref"}  # pyright: ignore[reportUnknownVariableType]
            return _inline({**defs[ref.removeprefix("#/$defs/")], **rest}, defs)
        return {k: _inline(v, defs) for k, v in node.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]  # pyright: ignore[reportUnknownVariableType]
    return node


def _clean(prop: dict[str, Any]) -> dict[str, Any]:
    prop = {k: v for k, v in prop.items() if k != "title"}
    any_of = prop.get("anyOf")
    if isinstance(any_of, list) and prop.get("default", ...) is None:
        # `X | None = None` means optional, not nullable: show X alone.
        options = [o for o in any_of if o != {"type": "null"}]  # pyright: ignore[reportUnknownVariableType]
        del prop["anyOf"], prop["default"]
        if len(options) == 1:  # pyright: ignore[reportUnknownArgumentType]
            prop = {**options[0], **prop}
        else:
            prop["anyOf"] = options
    if "anyOf" in prop:
        prop["anyOf"] = [_clean(o) for o in prop["anyOf"]]
    if "additionalProperties" in prop and isinstance(prop["additionalProperties"], dict):
        prop["additionalProperties"] = _clean(prop["additionalProperties"])  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(prop.get("items"), dict):
        prop["items"] = _clean(prop["items"])
    if isinstance(prop.get("properties"), dict):  # a nested model's own fields
        prop["properties"] = {k: _clean(v) for k, v in prop["properties"].items()}  # pyright: ignore[reportUnknownVariableType]
    return prop

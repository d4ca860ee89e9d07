"""One pydantic input model per tool. The JSON Schema clients see is generated from the same model that validates."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from gemini_relay.tools.common.path_args import check_path_text

Effort = Literal["low", "medium", "high"]
Mode = Literal["accept-edits", "plan"]
AspectRatio = Literal[
    "1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9", "4:1", "1:4", "8:1", "1:8"
]
ImageSize = Literal["512", "1K", "2K", "4K"]
Methodology = Literal["divergent", "convergent", "scamper", "design-thinking", "lateral", "auto"]
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
        description="Analysis request. Use @ syntax to include files (e.g. '@src/app.py explain what this does', "
        "'@.' for the whole project, '@src/**/*.ts' for a glob) or ask general questions.",
    )
    model: str | None = Field(
        None,
        description="Model id from gemini-models, or the aliases 'flash' and 'pro'. Unset: the backend's default "
        "(GEMINI_DEFAULT_MODEL / AGY_DEFAULT_MODEL, else the CLI's own choice).",
    )
    effort: Effort | None = Field(None, description="Reasoning effort: 'low', 'medium' or 'high'.")
    mode: Mode | None = Field(
        None, description="'plan' for read-only analysis without modifying files, 'accept-edits' to let it edit."
    )
    json_schema: str | dict[str, Any] | None = Field(
        None, description="A JSON Schema (object or JSON string) the answer must follow; the reply body is JSON."
    )
    add_dirs: list[PathText] | None = Field(None, description="Extra workspace directories the agent may read.")
    conversation_id: str | None = Field(
        None,
        description="Continue an earlier conversation: the id a plain-text reply printed after 🧵 conversationId.",
    )
    agent: str | None = Field(None, description="A custom agent (agent.md persona) to run instead of the default.")
    allow_slash_commands: bool = Field(
        False, description="Let a prompt starting with '/' expand as a CLI command or skill instead of going verbatim."
    )
    skip_permissions: bool = Field(
        False, description="Let the agent run every tool without approval (agy --dangerously-skip-permissions / yolo)."
    )
    include_usage: bool = Field(False, description="Append token usage. Ignored with jsonSchema (the body stays JSON).")
    sandbox: bool = Field(
        False, description="Ask the CLI to run tools in its sandbox (agy forwards it but does not isolate)."
    )
    change_mode: bool = Field(
        False, description="Return structured edit suggestions (file, exact old text, new text) a client can apply."
    )


class AskInput(PromptOptions):
    """gemini-ask: the run options plus paging of a chunked reply, which only a foreground answer has."""

    chunk_index: int | str | None = Field(
        None, description="Which chunk of a chunked changeMode reply to return (1-based); with chunkCacheKey, no rerun."
    )
    chunk_cache_key: str | None = Field(
        None, pattern=CACHE_KEY_PATTERN, description="The 8-hex cacheKey a chunked reply reported."
    )
    max_response_length: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="A soft length limit in words, given to the model as an instruction (not with jsonSchema).",
    )


class PlanInput(ToolInput):
    task: str = Field(min_length=1, description="The feature, refactor or architectural goal to plan.")
    context: str | None = Field(None, description="Extra context or constraints (supports @file syntax).")
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    effort: Effort = Field("high", description="Reasoning effort (default 'high').")
    add_dirs: list[PathText] | None = Field(None, description="Extra workspace directories the agent may read.")
    include_usage: bool = Field(True, description="Append token usage (default true).")


class ImageInput(ToolInput):
    prompt: str = Field(min_length=1, description="What the image should show.")
    aspect_ratio: AspectRatio = Field("1:1", description="Aspect ratio of the image.")
    size: ImageSize | None = Field(None, description="Resolution: '512', '1K', '2K' or '4K'.")
    output_path: PathText | None = Field(
        None, description="Where to save the image, inside the project root. Default: the relay's output folder."
    )


class EmptyInput(ToolInput):
    """Tools without parameters still refuse unknown arguments."""


class BrainstormInput(ToolInput):
    prompt: str = Field(min_length=1, description="The challenge or question to brainstorm about.")
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    methodology: Methodology = Field("auto", description="Brainstorming framework.")
    domain: str | None = Field(None, description="Domain context, e.g. 'software', 'business', 'education'.")
    constraints: str | None = Field(None, description="Limits to respect: budget, time, technology.")
    existing_context: str | None = Field(None, description="What has been tried or is already known.")
    idea_count: int = Field(12, gt=0, le=100, description="How many ideas to generate.")
    include_analysis: bool = Field(True, description="Score each idea for feasibility, impact and innovation.")
    effort: Effort | None = Field(None, description="Reasoning effort: 'low', 'medium' or 'high'.")


class FetchChunkInput(ToolInput):
    cache_key: str = Field(pattern=CACHE_KEY_PATTERN, description="The cacheKey a chunked reply reported.")
    chunk_index: int = Field(ge=1, description="Which chunk to return (1-based).")


class ConversationsInput(ToolInput):
    limit: int = Field(20, ge=1, le=100, description="How many recent conversations to list (1–100).")


class PingInput(ToolInput):
    prompt: str = Field("", description="A message to echo back.")


class TimeoutTestInput(ToolInput):
    duration: float = Field(ge=10, description="How long to hold the call open, in milliseconds (at least 10).")


class RunInput(PromptOptions):
    """gemini-run: the gemini-ask run options, plus job controls. Answers at once with the job id.

    No chunkIndex / chunkCacheKey: a job's result is collected whole with gemini-wait or gemini-status.
    """

    max_response_length: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="A soft length limit in words, given to the model as an instruction (not with jsonSchema).",
    )

    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Retry-safe key: the same key with the same request returns the existing job instead of a new "
        "one; the same key with a different request is refused.",
    )
    cwd: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="Working directory of this job (realpath-resolved, relative to the project root); `@` references "
        "are jailed to it. Refused outside GEMINI_RELAY_ALLOWED_ROOTS when that is set. Default: the project root.",
    )
    priority: Literal["normal", "optional"] = Field(
        "normal",
        description="'optional' yields to quota: refused before starting when the model's agy quota group is low, "
        "critical or exhausted.",
    )


class StatusInput(ToolInput):
    job_id: str = Field(min_length=1, max_length=64, description="The jobId gemini-run returned.")


class WaitInput(StatusInput):
    wait: float | None = Field(
        None, gt=0, description="Seconds to block for the job to finish (default and cap: GEMINI_RELAY_WAIT_CAP, 90)."
    )


class JobsInput(ToolInput):
    limit: int = Field(20, ge=1, le=200, description="How many recent jobs to list.")
    state: Literal["queued", "starting", "running", "done", "failed", "cancelled"] | None = Field(
        None, description="Only jobs in this state."
    )


class CancelJobInput(ToolInput):
    job_id: str | None = Field(
        None, min_length=1, max_length=64, description="Cancel only this job; omit to cancel every run in flight."
    )


def wire_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The inputSchema for tools/list: always {"type":"object","properties":…,"required":[…]}, defaults kept."""
    raw = model.model_json_schema(by_alias=True)
    properties = {name: _clean(prop) for name, prop in raw.get("properties", {}).items()}
    return {
        "type": "object",
        "properties": properties,
        "required": list(raw.get("required", [])),
        "additionalProperties": False,
    }


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
    return prop

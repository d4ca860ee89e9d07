"""Tool input models: the wire schema clients see, and validation that matches it (strict, camelCase, closed)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.server.relay import describe_validation
from gemini_relay.tools.common.inputs import EmptyInput, ToolInput, wire_schema
from gemini_relay.tools.core.ask import AskInput
from gemini_relay.tools.core.brainstorm import BrainstormInput
from gemini_relay.tools.core.conversations import ConversationsInput
from gemini_relay.tools.core.fetch_chunk import FetchChunkInput
from gemini_relay.tools.core.image import ImageInput
from gemini_relay.tools.core.models import ModelsInput
from gemini_relay.tools.core.ping import PingInput
from gemini_relay.tools.core.plan import PlanInput
from gemini_relay.tools.core.timeout_test import TimeoutTestInput
from gemini_relay.tools.jobs.cancel import CancelJobInput
from gemini_relay.tools.jobs.jobs import JobsInput
from gemini_relay.tools.jobs.run import RunInput
from gemini_relay.tools.jobs.status import StatusInput
from gemini_relay.tools.jobs.wait import WaitInput
from gemini_relay.tools.media.files import FilesInput
from gemini_relay.tools.media.image_edit import ImageEditInput
from gemini_relay.tools.media.image_interact import ImageInteractInput
from gemini_relay.tools.media.image_set import ImageSetInput
from gemini_relay.tools.media.music import MusicInput
from gemini_relay.tools.media.usage import UsageInput
from gemini_relay.tools.media.video import VideoInput
from gemini_relay.tools.registry import registry
from gemini_relay.tools.review.assess import AssessInput
from gemini_relay.tools.review.consensus import ConsensusInput
from gemini_relay.tools.review.review import ReviewInput
from gemini_relay.tools.review.search import SearchInput
from gemini_relay.tools.review.structured import StructuredInput

# One valid argument set per model, with only the required arguments.
MINIMAL: dict[type[ToolInput], dict[str, Any]] = {
    AskInput: {"prompt": "p"},
    PlanInput: {"task": "t"},
    ImageInput: {"prompt": "p"},
    EmptyInput: {},
    BrainstormInput: {"prompt": "p"},
    FetchChunkInput: {"cacheKey": "0123abcd", "chunkIndex": 1},
    ConversationsInput: {},
    ModelsInput: {},
    PingInput: {},
    RunInput: {"prompt": "p"},
    StatusInput: {"jobId": "j1"},
    WaitInput: {"jobId": "j1"},
    JobsInput: {},
    CancelJobInput: {},
    TimeoutTestInput: {"duration": 10},
    AssessInput: {},
    ReviewInput: {},
    SearchInput: {"query": "q"},
    StructuredInput: {"prompt": "p", "schema": {}},
    ConsensusInput: {"prompt": "p"},
    ImageEditInput: {"prompt": "p"},
    ImageSetInput: {"masterPrompt": "p", "scenes": ["s"]},
    ImageInteractInput: {"input": "i"},
    VideoInput: {"prompt": "p"},
    MusicInput: {"prompt": "p"},
    FilesInput: {"action": "list"},
    UsageInput: {},
}
MODELS = list(MINIMAL)


def walk(node: object) -> list[dict[str, Any]]:
    """Every dict in a schema, depth first."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += walk(value)
    elif isinstance(node, list):
        for value in node:
            found += walk(value)
    return found


def test_every_registered_tools_input_model_is_covered() -> None:
    registered = {tool.input_model for tool in registry(test_tools=True, toolsets=frozenset(Toolset))}
    assert registered == set(MODELS)


# --- wire_schema ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_wire_schema_is_a_closed_object_with_properties_and_required(model: type[ToolInput]) -> None:
    schema = wire_schema(model)
    assert list(schema) == ["type", "properties", "required", "additionalProperties"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert isinstance(schema["properties"], dict)
    assert isinstance(schema["required"], list)
    assert set(schema["required"]) <= set(schema["properties"])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_no_wire_schema_has_titles_null_types_refs_or_null_defaults(model: type[ToolInput]) -> None:
    for node in walk(wire_schema(model)):
        assert "title" not in node
        types = node.get("type")
        assert types != "null"
        assert not (isinstance(types, list) and "null" in types)
        assert "$ref" not in node
        assert "$defs" not in node
        if "default" in node:
            assert node["default"] is not None


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_property_names_are_camel_case_and_match_the_models_aliases(model: type[ToolInput]) -> None:
    properties = wire_schema(model)["properties"]
    for name in properties:
        assert "_" not in name
        assert name[0].islower()
    assert list(properties) == [field.alias or name for name, field in model.model_fields.items()]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_required_lists_exactly_the_fields_without_defaults(model: type[ToolInput]) -> None:
    required = [field.alias or name for name, field in model.model_fields.items() if field.is_required()]
    assert wire_schema(model)["required"] == required
    assert sorted(required) == sorted(MINIMAL[model])


# Properties whose name, type, enum, default and bounds already say how to fill them: a description would only
# repeat them, and every client pays for the default tools' definitions on every turn (test_tool_budget.py).
SELF_DESCRIBED = frozenset(
    {"effort", "timeoutSeconds", "aspectRatio", "size", "overwrite", "limit", "methodology", "ideaCount"}
    | {"includeAnalysis", "includeUsage", "domain"}
)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_property_is_described_for_clients_unless_its_schema_says_it_all(model: type[ToolInput]) -> None:
    for name, prop in wire_schema(model)["properties"].items():
        assert prop.get("description") or name in SELF_DESCRIBED, name


def test_the_ask_schema() -> None:
    schema = wire_schema(AskInput)
    props = schema["properties"]
    assert schema["required"] == ["prompt"]
    assert props["prompt"]["type"] == "string"
    assert props["prompt"]["minLength"] == 1
    assert props["model"]["type"] == "string"
    assert "default" not in props["model"]
    assert props["effort"]["enum"] == ["low", "medium", "high"]
    assert props["mode"]["enum"] == ["accept-edits", "plan"]
    assert props["jsonSchema"]["anyOf"] == [{"type": "string"}, {"type": "object", "additionalProperties": True}]
    assert props["addDirs"]["type"] == "array"
    assert props["addDirs"]["items"] == {"type": "string"}
    assert props["chunkIndex"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert props["chunkCacheKey"]["pattern"] == "^[0-9a-f]{8}$"
    for flag in ("allowSlashCommands", "skipPermissions", "includeUsage", "sandbox", "changeMode"):
        assert props[flag]["type"] == "boolean"
        assert props[flag]["default"] is False


def test_defaults_are_shown_in_the_schema() -> None:
    assert wire_schema(PlanInput)["properties"]["effort"]["default"] == "high"
    assert wire_schema(PlanInput)["properties"]["includeUsage"]["default"] is True
    assert wire_schema(ImageInput)["properties"]["aspectRatio"]["default"] == "1:1"
    assert wire_schema(BrainstormInput)["properties"]["methodology"]["default"] == "auto"
    assert wire_schema(BrainstormInput)["properties"]["ideaCount"]["default"] == 12
    assert wire_schema(BrainstormInput)["properties"]["includeAnalysis"]["default"] is True
    assert wire_schema(ConversationsInput)["properties"]["limit"]["default"] == 20
    assert wire_schema(PingInput)["properties"]["prompt"]["default"] == ""


def test_bounds_are_shown_in_the_schema() -> None:
    idea = wire_schema(BrainstormInput)["properties"]["ideaCount"]
    assert (idea["type"], idea["exclusiveMinimum"], idea["maximum"]) == ("integer", 0, 100)
    limit = wire_schema(ConversationsInput)["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)
    assert wire_schema(FetchChunkInput)["properties"]["chunkIndex"]["minimum"] == 1
    assert wire_schema(TimeoutTestInput)["properties"]["duration"] == {
        "description": "How long to hold the call open, in milliseconds (at least 10).",
        "minimum": 10,
        "type": "number",
    }


def test_the_empty_input_schema() -> None:
    assert wire_schema(EmptyInput) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


# --- validation -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_minimal_arguments_validate(model: type[ToolInput]) -> None:
    model.model_validate(MINIMAL[model])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_unknown_arguments_are_refused(model: type[ToolInput]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate({**MINIMAL[model], "surprise": 1})


def test_snake_case_names_are_refused_because_the_wire_is_camel_case() -> None:
    with pytest.raises(ValidationError, match="change_mode"):
        AskInput.model_validate({"prompt": "p", "change_mode": True})
    assert AskInput.model_validate({"prompt": "p", "changeMode": True}).change_mode is True


def test_camel_case_arguments_land_on_the_snake_case_fields() -> None:
    args = AskInput.model_validate(
        {
            "prompt": "p",
            "jsonSchema": {"type": "object"},
            "addDirs": ["src"],
            "conversationId": "c",
            "allowSlashCommands": True,
            "skipPermissions": True,
            "includeUsage": True,
            "chunkIndex": 2,
            "chunkCacheKey": "deadbeef",
        }
    )
    assert args.json_schema == {"type": "object"}
    assert args.add_dirs == ["src"]
    assert args.conversation_id == "c"
    assert (args.allow_slash_commands, args.skip_permissions, args.include_usage) == (True, True, True)
    assert (args.chunk_index, args.chunk_cache_key) == (2, "deadbeef")


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (AskInput, {"prompt": 5}),
        (AskInput, {"prompt": "p", "changeMode": "true"}),
        (AskInput, {"prompt": "p", "changeMode": 1}),
        (AskInput, {"prompt": "p", "addDirs": "src"}),
        (AskInput, {"prompt": "p", "addDirs": [1]}),
        (AskInput, {"prompt": "p", "jsonSchema": 3}),
        (AskInput, {"prompt": "p", "chunkIndex": 1.5}),
        (BrainstormInput, {"prompt": "p", "ideaCount": "5"}),
        (BrainstormInput, {"prompt": "p", "ideaCount": 5.0}),
        (BrainstormInput, {"prompt": "p", "includeAnalysis": "yes"}),
        (ConversationsInput, {"limit": "20"}),
        (FetchChunkInput, {"cacheKey": "0123abcd", "chunkIndex": "1"}),
        (TimeoutTestInput, {"duration": "100"}),
    ],
)
def test_types_are_strict(model: type[ToolInput], arguments: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(arguments)


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (AskInput, {"prompt": ""}),
        (AskInput, {"prompt": "p", "effort": "max"}),
        (AskInput, {"prompt": "p", "mode": "yolo"}),
        (AskInput, {"prompt": "p", "chunkCacheKey": "DEADBEEF"}),
        (AskInput, {"prompt": "p", "chunkCacheKey": "0123abcd0"}),
        (PlanInput, {"task": ""}),
        (ImageInput, {"prompt": "p", "aspectRatio": "2:1"}),
        (ImageInput, {"prompt": "p", "size": "8K"}),
        (BrainstormInput, {"prompt": "p", "ideaCount": 0}),
        (BrainstormInput, {"prompt": "p", "ideaCount": 101}),
        (BrainstormInput, {"prompt": "p", "methodology": "random"}),
        (ConversationsInput, {"limit": 0}),
        (ConversationsInput, {"limit": 101}),
        (FetchChunkInput, {"cacheKey": "xyz", "chunkIndex": 1}),
        (FetchChunkInput, {"cacheKey": "0123abcd", "chunkIndex": 0}),
        (TimeoutTestInput, {"duration": 9.9}),
    ],
)
def test_values_outside_the_schema_are_refused(model: type[ToolInput], arguments: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(arguments)


def test_a_float_duration_and_an_int_duration_are_both_numbers() -> None:
    assert TimeoutTestInput.model_validate({"duration": 10}).duration == 10
    assert TimeoutTestInput.model_validate({"duration": 12.5}).duration == 12.5


def test_an_explicit_null_means_not_given() -> None:
    args = AskInput.model_validate({"prompt": "p", "model": None, "changeMode": None, "addDirs": None})
    assert args.model is None
    assert args.change_mode is False
    assert args.add_dirs is None
    assert args.model_fields_set == {"prompt"}
    plan = PlanInput.model_validate({"task": "t", "effort": None, "includeUsage": None})
    assert plan.effort == "high"
    assert plan.include_usage is True
    assert "effort" not in plan.model_fields_set


def test_a_null_required_argument_is_reported_missing() -> None:
    with pytest.raises(ValidationError, match="Field required"):
        AskInput.model_validate({"prompt": None})


def test_arguments_the_caller_set_are_known_even_when_equal_to_the_default() -> None:
    assert "effort" in PlanInput.model_validate({"task": "t", "effort": "high"}).model_fields_set


def test_a_json_schema_may_be_an_object_or_a_string() -> None:
    assert AskInput.model_validate({"prompt": "p", "jsonSchema": '{"type":"object"}'}).json_schema == (
        '{"type":"object"}'
    )
    assert AskInput.model_validate({"prompt": "p", "jsonSchema": {"type": "object"}}).json_schema == {"type": "object"}


def test_a_chunk_index_may_be_an_integer_or_a_string() -> None:
    assert AskInput.model_validate({"prompt": "p", "chunkIndex": 2}).chunk_index == 2
    assert AskInput.model_validate({"prompt": "p", "chunkIndex": "2"}).chunk_index == "2"


def test_non_object_arguments_are_refused() -> None:
    with pytest.raises(ValidationError):
        AskInput.model_validate(["prompt", "p"])
    with pytest.raises(ValidationError):
        EmptyInput.model_validate(None)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "a path cannot contain a NUL byte"),
        ("a" * 5000, "the path is 5000 bytes; the limit is 4096"),
        ("d/" + "b" * 256, "a path component is 256 bytes; the limit is 255"),
    ],
)
def test_a_path_argument_the_os_cannot_take_is_refused_by_field(value: str, message: str) -> None:
    cases: list[tuple[type[ToolInput], dict[str, Any], str]] = [
        (AskInput, {"prompt": "p", "addDirs": ["ok", value]}, "addDirs.1"),
        (ImageInput, {"prompt": "p", "outputPath": value}, "outputPath"),
        (StructuredInput, {"prompt": "p", "schema": {}, "files": [value]}, "files.0"),
    ]
    for model, args, field in cases:
        with pytest.raises(ValidationError) as caught:
            model.model_validate(args)
        assert describe_validation(caught.value, model) == f"{field}: {message}"

"""The fixture prompts and resources the conformance scenarios read (`test_simple_prompt`, `test://static-text`,
`test://template/{id}/data`, …). Prompts get a Channel too: `test_input_required_result_prompt` asks for its context
with an `input_required` round, as a tool would."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from gemini_relay.tools.common.channel import Channel
from gemini_relay.tools.conformance.fixture import PNG

PromptHandler = Callable[[Mapping[str, str], Channel], Awaitable[list[types.PromptMessage]]]


@dataclass(frozen=True)
class FixturePrompt:
    name: str
    description: str
    handler: PromptHandler
    arguments: tuple[tuple[str, str], ...] = ()  # (name, description), all required

    def entry(self) -> types.Prompt:
        args = [types.PromptArgument(name=n, description=d, required=True) for n, d in self.arguments]
        return types.Prompt(name=self.name, description=self.description, arguments=args)


def _user(content: types.ContentBlock) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


def _text(value: str) -> types.PromptMessage:
    return _user(types.TextContent(type="text", text=value))


async def _simple(args: Mapping[str, str], ch: Channel) -> list[types.PromptMessage]:
    return [_text("This is a simple prompt for testing.")]


async def _with_arguments(args: Mapping[str, str], ch: Channel) -> list[types.PromptMessage]:
    return [_text(f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'")]


async def _with_resource(args: Mapping[str, str], ch: Channel) -> list[types.PromptMessage]:
    uri = args.get("resourceUri") or "test://example-resource"
    resource = types.TextResourceContents(
        uri=uri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        _user(types.EmbeddedResource(type="resource", resource=resource)),
        _text("Please process the embedded resource above."),
    ]


async def _with_image(args: Mapping[str, str], ch: Channel) -> list[types.PromptMessage]:
    image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
    return [_user(image), _text("Please analyze the image above.")]


async def _input_required(args: Mapping[str, str], ch: Channel) -> list[types.PromptMessage]:
    form = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = await ch.ask(form, "What context should the prompt use?", key="user_context")
    return [_text(f"Use this context: {answer.content.get('context', '')}")]


PROMPTS: tuple[FixturePrompt, ...] = (
    FixturePrompt("test_simple_prompt", "A simple prompt without arguments", _simple),
    FixturePrompt(
        "test_prompt_with_arguments",
        "A prompt with required arguments",
        _with_arguments,
        (("arg1", "First test argument"), ("arg2", "Second test argument")),
    ),
    FixturePrompt(
        "test_prompt_with_embedded_resource",
        "A prompt that includes an embedded resource",
        _with_resource,
        (("resourceUri", "URI of the resource to embed"),),
    ),
    FixturePrompt("test_prompt_with_image", "A prompt that includes image content", _with_image),
    FixturePrompt("test_input_required_result_prompt", "Asks for its context first (input_required)", _input_required),
)

RESOURCES = (
    types.Resource(
        uri="test://static-text", name="static-text", description="A static text resource", mime_type="text/plain"
    ),
    types.Resource(uri="test://static-binary", name="static-binary", description="A static PNG", mime_type="image/png"),
    types.Resource(
        uri="test://watched-resource", name="watched-resource", description="For subscriptions", mime_type="text/plain"
    ),
)
TEMPLATES = (
    types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    ),
)
_TEMPLATE = re.compile(r"test://template/([^/]+)/data")


def read(uri: str) -> list[types.TextResourceContents | types.BlobResourceContents] | None:
    """The contents of a fixture resource; None for a URI that names none."""
    if uri == "test://static-text":
        return [
            types.TextResourceContents(
                uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
            )
        ]
    if uri == "test://static-binary":
        return [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)]
    if uri == "test://watched-resource":
        return [types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched resource content")]
    match = _TEMPLATE.fullmatch(uri)
    if match:
        data: dict[str, Any] = {"id": match.group(1), "templateTest": True, "data": f"Data for ID: {match.group(1)}"}
        return [types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(data))]
    return None

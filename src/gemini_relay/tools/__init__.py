"""The tool registry: the only list of tools, in the registry order clients see."""

from __future__ import annotations

from gemini_relay.jobs.vocabulary import Toolset
from gemini_relay.tools import ask, catalog, chunks, control, diagnostics, doctor, image, plan
from gemini_relay.tools.context import ToolDef
from gemini_relay.tools.names import DEFAULT_TOOLS, TOOLSET_TOOLS, ToolName
from gemini_relay.tools.schemas import (
    AskInput,
    BrainstormInput,
    ConversationsInput,
    EmptyInput,
    FetchChunkInput,
    ImageInput,
    PingInput,
    PlanInput,
    TimeoutTestInput,
)

_DEFS = {
    ToolName.ASK: ToolDef(
        ToolName.ASK,
        "Send one prompt to Google Gemini and get the answer back: questions, code review, analysis, edits, "
        "structured JSON. Reference project files with @path (files, directories like @., globs) to send their "
        "contents along. Pass conversationId to continue a thread. For a phased implementation blueprint use "
        "gemini-plan; for idea generation use gemini-brainstorm; for everything else use this.",
        AskInput,
        ask.ask,
        read_only=False,
        destructive=True,
        prompt_description="Ask Gemini a question or hand it a review, with optional model, effort, mode and schema.",
    ),
    ToolName.PLAN: ToolDef(
        ToolName.PLAN,
        "Architectural and implementation planner: a structured, phased blueprint with dependencies, risks and "
        "verification steps, produced in read-only plan mode without modifying code.",
        PlanInput,
        plan.plan,
        read_only=True,
        prompt_description="Create a detailed implementation blueprint for a task in read-only plan mode.",
    ),
    ToolName.IMAGE: ToolDef(
        ToolName.IMAGE,
        "Generate an image and save it inside the project (or the relay's output folder); answers with a markdown "
        "file:/// embed and the absolute path. Needs the agy or Gemini API backend.",
        ImageInput,
        image.image,
        read_only=False,
        prompt_description="Generate an image with Gemini and save it to a file.",
    ),
    ToolName.MODELS: ToolDef(
        ToolName.MODELS,
        "List the models the active backend accepts, with the aliases and the default. No model turn.",
        EmptyInput,
        catalog.models,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="List the models the active Gemini backend accepts.",
    ),
    ToolName.DOCTOR: ToolDef(
        ToolName.DOCTOR,
        "Check the setup without spending tokens: binary paths and versions, active backend, authentication, "
        "Python and OS; ends with 'System Ready' or 'Action needed' and the fix for each problem.",
        EmptyInput,
        doctor.doctor,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Diagnose the gemini-relay setup.",
    ),
    ToolName.BRAINSTORM: ToolDef(
        ToolName.BRAINSTORM,
        "Generate ideas with a chosen methodology (divergent, convergent, SCAMPER, design thinking, lateral, or "
        "auto), optionally scored for feasibility, impact and innovation.",
        BrainstormInput,
        plan.brainstorm,
        read_only=True,
        prompt_description="Brainstorm ideas on a challenge with Gemini.",
    ),
    ToolName.FETCH_CHUNK: ToolDef(
        ToolName.FETCH_CHUNK,
        "Retrieve one chunk of a chunked reply, by the cacheKey and chunkIndex that reply reported. No model turn; "
        "chunks live 10 minutes.",
        FetchChunkInput,
        chunks.fetch_chunk,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Fetch the next chunk of a chunked response.",
    ),
    ToolName.CONVERSATIONS: ToolDef(
        ToolName.CONVERSATIONS,
        "List recent saved conversations (id, last active, working directory, first prompt); pass an id to "
        "gemini-ask as conversationId to continue it.",
        ConversationsInput,
        catalog.conversations,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="List recent Gemini conversations.",
    ),
    ToolName.CANCEL: ToolDef(
        ToolName.CANCEL,
        "Stop every Gemini run in flight (queued or running); each stopped call fails with 'was cancelled by "
        "gemini-cancel'.",
        EmptyInput,
        control.cancel,
        read_only=False,
        destructive=True,
        open_world=False,
        prompt_description="Cancel every running Gemini call.",
    ),
    ToolName.PING: ToolDef(
        ToolName.PING,
        "Check the server answers: replies Pong!, or echoes the prompt. Answered in-process.",
        PingInput,
        diagnostics.ping,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Echo test message.",
    ),
    ToolName.HELP: ToolDef(
        ToolName.HELP,
        "Show the active backend CLI's --help.",
        EmptyInput,
        diagnostics.help_,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Receive CLI help information for the active Gemini backend.",
    ),
    ToolName.TIMEOUT_TEST: ToolDef(
        ToolName.TIMEOUT_TEST,
        "Test-only: hold a call open for a number of milliseconds to exercise progress and timeout handling. "
        "Registered only when GEMINI_MCP_TEST_TOOLS is set.",
        TimeoutTestInput,
        diagnostics.timeout_test,
        read_only=True,
        open_world=False,
        prompt_description="Test the keepalive system with a long operation.",
    ),
}


def registry(*, test_tools: bool, toolsets: frozenset[Toolset] = frozenset()) -> list[ToolDef]:
    """The default eleven in registry order, then each enabled toolset's tools, then the test-only tool."""
    names = list(DEFAULT_TOOLS)
    for toolset in Toolset:
        if toolset in toolsets:
            names += [n for n in TOOLSET_TOOLS[toolset] if n in _DEFS]
    if test_tools:
        names.append(ToolName.TIMEOUT_TEST)
    return [_DEFS[name] for name in names]

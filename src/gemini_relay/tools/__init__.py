"""The tool registry: the only list of tools, in the registry order clients see."""

from __future__ import annotations

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.tools import ask, catalog, chunks, control, diagnostics, doctor, image, jobs, plan, review, structured
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import ToolDef
from gemini_relay.tools.common.inputs import (
    AskInput,
    BrainstormInput,
    CancelJobInput,
    ConversationsInput,
    EmptyInput,
    FetchChunkInput,
    ImageInput,
    JobsInput,
    PingInput,
    PlanInput,
    RunInput,
    StatusInput,
    TimeoutTestInput,
    WaitInput,
)
from gemini_relay.tools.media_defs import MEDIA_DEFS
from gemini_relay.tools.names import DEFAULT_TOOLS, TOOLSET_TOOLS, ToolName
from gemini_relay.tools.review_schemas import AssessInput, ReviewInput, SearchInput, StructuredInput

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
        output_schema=out.MODELS,
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
        output_schema=out.DOCTOR,
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
        output_schema=out.CONVERSATIONS,
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
    # review toolset
    ToolName.ASSESS: ToolDef(
        ToolName.ASSESS,
        "Size up a diff before reviewing it, in well under a second and without a model call: runs git locally and "
        "returns the diff stats, changed files, complexity (trivial/moderate/complex), kind (empty/code/mixed/"
        "non-code/generated), guidance, and each gemini-review depth with its estimated wall time. Uncommitted "
        "work by default, or base...HEAD.",
        AssessInput,
        review.assess,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Assess a git diff and recommend a review depth.",
        output_schema=out.ASSESSMENT,
    ),
    ToolName.REVIEW: ToolDef(
        ToolName.REVIEW,
        "Code review of a git diff by Gemini, read-only, at a chosen depth: 'scan' (the diff only, ~30 s), "
        "'focused' (the diff plus the changed files), 'deep' (agentic: follows imports and tests, reads AGENTS.md/"
        "GEMINI.md; the default). Timeouts scale with depth and changed files; a timed-out review returns its "
        "partial findings. Uncommitted work by default, or base...HEAD. Use gemini-assess first to pick a depth.",
        ReviewInput,
        review.review,
        read_only=True,
        prompt_description="Review uncommitted changes or a branch diff with Gemini.",
    ),
    ToolName.SEARCH: ToolDef(
        ToolName.SEARCH,
        "Answer a question from a live web search (the Gemini CLI's google_web_search; agy's own search), with "
        "the source URLs listed. Read-only.",
        SearchInput,
        review.search,
        read_only=True,
        prompt_description="Research a question on the web with Gemini and cite the sources.",
    ),
    ToolName.STRUCTURED: ToolDef(
        ToolName.STRUCTURED,
        "Get JSON that satisfies a JSON Schema: the schema is checked first, the answer is validated (formats "
        "included), one repair turn fixes an invalid answer, and a still-invalid answer is an error listing the "
        "problems. Optional text files go along. Read-only; the reply is the JSON alone.",
        StructuredInput,
        structured.structured,
        read_only=True,
        prompt_description="Generate JSON that validates against a schema.",
        output_schema=out.STRUCTURED,
    ),
}


_JOB_DEFS = {
    ToolName.RUN: ToolDef(
        ToolName.RUN,
        "Start a Gemini run as a durable job and answer at once with its jobId (and the conversationId when the "
        "backend names it within ~2 s). The job survives client timeouts, this server exiting and crashes; collect "
        "it with gemini-wait or gemini-status. Takes every gemini-ask option plus idempotencyKey and priority.",
        RunInput,
        jobs.run,
        read_only=False,
        destructive=True,
        prompt_description="Start a long Gemini run in the background.",
        output_schema=out.JOB_STARTED,
    ),
    ToolName.STATUS: ToolDef(
        ToolName.STATUS,
        "A job's state (queued, starting, running, done, failed, cancelled), elapsed time, and when finished its "
        "result, error, failure_reason, partial flag, recovery note, retryable, error_id, conversationId, model, "
        "usage and turns. Never blocks.",
        StatusInput,
        jobs.status,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Check a Gemini job.",
        output_schema=out.JOB_STATUS,
    ),
    ToolName.WAIT: ToolDef(
        ToolName.WAIT,
        "Block until a job finishes or `wait` seconds pass (default and cap 90 s, below common client timeouts), "
        "sending progress meanwhile; returns the same fields as gemini-status.",
        WaitInput,
        jobs.wait,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="Wait for a Gemini job to finish.",
        output_schema=out.JOB_STATUS,
    ),
    ToolName.JOBS: ToolDef(
        ToolName.JOBS,
        "Recent jobs of every server sharing the state dir, newest first, including those whose client went away.",
        JobsInput,
        jobs.jobs,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="List recent Gemini jobs.",
        output_schema=out.JOB_LIST,
    ),
}
_CANCEL_JOBS = ToolDef(
    ToolName.CANCEL,
    "Stop Gemini runs: with jobId, that job (SIGTERM to its process group, a grace, then SIGKILL); without, every "
    "run in flight, each of which fails with 'was cancelled by gemini-cancel'.",
    CancelJobInput,
    jobs.cancel,
    read_only=False,
    destructive=True,
    open_world=False,
    prompt_description="Cancel running Gemini calls or one job.",
)


def registry(*, test_tools: bool, toolsets: frozenset[Toolset] = frozenset()) -> list[ToolDef]:
    """The default eleven in registry order, then each enabled toolset's tools, then the test-only tool."""
    defs = {**_DEFS, **_JOB_DEFS, **MEDIA_DEFS}
    if Toolset.JOBS in toolsets:
        defs[ToolName.CANCEL] = _CANCEL_JOBS  # gains an optional jobId
    names = list(DEFAULT_TOOLS)
    for toolset in Toolset:
        if toolset in toolsets:
            names += [n for n in TOOLSET_TOOLS[toolset] if n in defs and n not in names]
    if test_tools:
        names.append(ToolName.TIMEOUT_TEST)
    return [defs[name] for name in names]

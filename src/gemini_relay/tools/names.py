"""Tool names: a closed vocabulary shared by the registry, the prompts and the tests."""

from __future__ import annotations

from enum import StrEnum

from gemini_relay.core.vocabulary import Toolset


class ToolName(StrEnum):
    ASK = "gemini-ask"
    PLAN = "gemini-plan"
    IMAGE = "gemini-image"
    MODELS = "gemini-models"
    DOCTOR = "gemini-doctor"
    BRAINSTORM = "gemini-brainstorm"
    FETCH_CHUNK = "gemini-fetch-chunk"
    CONVERSATIONS = "gemini-conversations"
    CANCEL = "gemini-cancel"
    PING = "gemini-ping"
    HELP = "gemini-help"
    TIMEOUT_TEST = "gemini-timeout-test"
    # jobs toolset
    RUN = "gemini-run"
    STATUS = "gemini-status"
    WAIT = "gemini-wait"
    JOBS = "gemini-jobs"
    # review toolset
    ASSESS = "gemini-assess"
    REVIEW = "gemini-review"
    SEARCH = "gemini-search"
    STRUCTURED = "gemini-structured"
    # media toolset
    IMAGE_EDIT = "gemini-image-edit"
    IMAGE_SET = "gemini-image-set"
    IMAGE_INTERACT = "gemini-image-interact"
    VIDEO = "gemini-video"
    MUSIC = "gemini-music"
    FILES = "gemini-files"
    MEDIA_MODELS = "gemini-media-models"
    USAGE = "gemini-usage"


# The registry order of gemini-relay 1.2.0; clients and agents rely on it.
DEFAULT_TOOLS: tuple[ToolName, ...] = (
    ToolName.ASK,
    ToolName.PLAN,
    ToolName.IMAGE,
    ToolName.MODELS,
    ToolName.DOCTOR,
    ToolName.BRAINSTORM,
    ToolName.FETCH_CHUNK,
    ToolName.CONVERSATIONS,
    ToolName.CANCEL,
    ToolName.PING,
    ToolName.HELP,
)


TOOLSET_TOOLS: dict[Toolset, tuple[ToolName, ...]] = {
    Toolset.JOBS: (ToolName.RUN, ToolName.STATUS, ToolName.WAIT, ToolName.JOBS),
    Toolset.REVIEW: (ToolName.ASSESS, ToolName.REVIEW, ToolName.SEARCH, ToolName.STRUCTURED),
    Toolset.MEDIA: (
        ToolName.IMAGE_EDIT,
        ToolName.IMAGE_SET,
        ToolName.IMAGE_INTERACT,
        ToolName.VIDEO,
        ToolName.MUSIC,
        ToolName.FILES,
        ToolName.MEDIA_MODELS,
        ToolName.USAGE,
        ToolName.STATUS,  # async generations are collected with these, with or without the jobs toolset
        ToolName.WAIT,
    ),
}

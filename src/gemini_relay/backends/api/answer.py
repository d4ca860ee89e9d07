"""Folding GenerateContentResponse chunks into answer text, usage, sources and a verdict. Pure: no I/O.

Thought parts are the model's reasoning, not its answer, and are dropped. The verdict follows the CLI's rule for an
invalid stream: an empty answer is never a success, and a finish reason other than STOP is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.genai import types

from gemini_relay.backends.advice import EMPTY_ADVICE, blocked_advice
from gemini_relay.backends.api.common import COMMAND
from gemini_relay.core.events import Usage
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed

_NORMAL = "STOP"
_CUT_OFF = frozenset({"MAX_TOKENS"})


@dataclass
class Source:
    uri: str
    title: str


@dataclass
class AnswerFold:
    """Everything the chunks said, in arrival order."""

    pieces: list[str] = field(default_factory=list[str])
    finish_reason: str | None = None
    usage: Usage | None = None
    sources: dict[str, Source] = field(default_factory=dict[str, Source])
    blocked_categories: list[str] = field(default_factory=list[str])
    prompt_block: str | None = None
    finish_message: str | None = None
    model_version: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def take(self, response: types.GenerateContentResponse) -> list[str]:
        """Fold one chunk in; returns its answer text pieces (for TextDelta events)."""
        if response.usage_metadata is not None:
            self.usage = usage_of(response.usage_metadata)
        if response.model_version:
            self.model_version = response.model_version
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.prompt_block = _name(feedback.block_reason)
        deltas: list[str] = []
        for candidate in (response.candidates or [])[:1]:  # the relay never asks for more than one candidate
            if candidate.finish_reason is not None:
                self.finish_reason = _name(candidate.finish_reason)
            if candidate.finish_message:
                self.finish_message = candidate.finish_message
            for rating in candidate.safety_ratings or []:
                if rating.blocked and rating.category is not None:
                    self.blocked_categories.append(_name(rating.category))
            self._grounding(candidate.grounding_metadata)
            parts = candidate.content.parts if candidate.content is not None else None
            deltas.extend(part.text for part in parts or [] if part.text and not part.thought)
        self.pieces.extend(deltas)
        return deltas

    def sources_text(self) -> str:
        """The CLI's web-search footer (`Sources:` then `[n] title (uri)`), or "" when nothing was grounded."""
        if not self.sources:
            return ""
        lines = [f"[{i}] {s.title or s.uri} ({s.uri})" for i, s in enumerate(self.sources.values(), start=1)]
        return "\n\nSources:\n" + "\n".join(lines)

    def verdict(self) -> tuple[list[str], bool]:
        """(stream notices, partial) for an answer worth returning; raises RunFailed when there is none."""
        text = self.text
        reason = self.finish_reason
        if self.prompt_block is not None:
            raise RunFailed(
                f"{COMMAND} refused the prompt: blocked ({self.prompt_block})",
                reason=FailureReason.BACKEND_ERROR,
                retryable=False,
                recovery=blocked_advice(self.prompt_block, self.blocked_categories, prompt=True),
            )
        if not text.strip():
            why = f"finishReason {reason}" if reason else "the stream ended without a finish reason"
            blocked = f": {', '.join(dict.fromkeys(self.blocked_categories))}" if self.blocked_categories else ""
            detail = f" ({self.finish_message})" if self.finish_message else ""
            abnormal = reason is not None and reason != _NORMAL
            raise RunFailed(
                f"{COMMAND} returned no answer ({why}{blocked}){detail}",
                reason=FailureReason.BACKEND_ERROR,
                retryable=not abnormal,  # an empty STOP may go better on a retry; a safety block will not
                recovery=blocked_advice(reason, self.blocked_categories) if abnormal else EMPTY_ADVICE,
            )
        if reason == _NORMAL:
            return [], False
        if reason is None:
            return ["The API stream ended without a finish reason; the answer may be incomplete."], True
        if reason in _CUT_OFF:
            return [f"The answer hit the output token limit (finishReason {reason}); it is incomplete."], True
        return [f"The API stopped the answer early (finishReason {reason}); it may be incomplete."], True

    def _grounding(self, metadata: types.GroundingMetadata | None) -> None:
        if metadata is None:
            return
        for chunk in metadata.grounding_chunks or []:
            web = chunk.web
            if web is not None and web.uri and web.uri not in self.sources:
                self.sources[web.uri] = Source(web.uri, (web.title or "").strip())


def usage_of(meta: types.GenerateContentResponseUsageMetadata) -> Usage:
    prompt = meta.prompt_token_count or 0
    candidates = meta.candidates_token_count or 0
    thoughts = meta.thoughts_token_count or 0
    return Usage(
        input_tokens=prompt,
        output_tokens=candidates,
        thinking_tokens=thoughts,
        cached_tokens=meta.cached_content_token_count or 0,
        total_tokens=meta.total_token_count or prompt + candidates + thoughts,
    )


def _name(value: object) -> str:
    return str(getattr(value, "value", value))

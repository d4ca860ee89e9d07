"""Token counts before a call: the API's own counter where a key is available, otherwise a documented estimate.

The estimate is labelled wherever it is shown: PAL's users mistook character limits for token limits (#194), so a
count always says how it was obtained.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["CHARS_PER_TOKEN", "TokenCount", "TokenMethod", "estimate_tokens", "estimated"]

CHARS_PER_TOKEN = 4
"""Gemini's documented rule of thumb for English text and code: about four characters a token."""


class TokenMethod(StrEnum):
    """How a token count was obtained."""

    COUNTED = "counted"  # the API's countTokens for this model
    ESTIMATED = "estimated"  # characters / CHARS_PER_TOKEN, rounded up

    @property
    def label(self) -> str:
        if self is TokenMethod.COUNTED:
            return "counted by the API"
        return f"estimated at {CHARS_PER_TOKEN} characters a token (no API key to count with)"


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    method: TokenMethod


def estimate_tokens(text: str) -> int:
    """Characters / CHARS_PER_TOKEN, rounded up; an empty text is 0 tokens."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimated(text: str) -> TokenCount:
    return TokenCount(estimate_tokens(text), TokenMethod.ESTIMATED)

"""What every backend refuses, checked in the server before a job exists (never first in a supervisor).

Pure and cheap: patterns and lengths only. A backend adds its own rules in its `check(spec)`; whatever can only be
known by running the upstream (an unknown but well-formed id) is still the run's failure.
"""

from __future__ import annotations

import re

from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import InputError

# Every backend's conversation ids (Gemini CLI session ids, agy conversation ids, the relay's own API ids) fit this.
CONVERSATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
AGENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
MAX_MODEL_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a tab is allowed: a pasted "<id>\t<label>" row


NO_IMAGES = (
    "this backend takes text prompts only (agy and the Gemini CLI's headless -p run have no image input); images "
    "reach the api backend and the warm Gemini CLI (GEMINI_RELAY_WARM=on)"
)


def check_text_only(spec: RunSpec) -> None:
    """check_spec for a backend whose prompt is text alone: images are refused, not answered without being seen."""
    check_spec(spec)
    if spec.images:
        raise InputError(NO_IMAGES, field="images")


def check_spec(spec: RunSpec) -> None:
    """Raises InputError naming the field for anything no backend could run."""
    if spec.conversation_id is not None and not CONVERSATION_ID.fullmatch(spec.conversation_id):
        raise InputError(
            "must be a conversation id as printed after 🧵 conversationId (letters, digits, '-' or '_', at most "
            f"128, starting with a letter or digit); got {_quote(spec.conversation_id)}",
            field="conversationId",
        )
    if spec.model is not None:
        model = spec.model.strip()
        malformed = not model or len(model) > MAX_MODEL_CHARS or _CONTROL.search(model) or ".." in model
        if malformed or not model[0].isalnum():
            raise InputError(
                f"must be a model id or alias (see gemini-models); got {_quote(spec.model)}", field="model"
            )
    if spec.agent is not None and not AGENT.fullmatch(spec.agent):
        raise InputError(
            f"must be an agent name (letters, digits, '.', '_' or '-'); got {_quote(spec.agent)}", field="agent"
        )


def _quote(value: str, limit: int = 60) -> str:
    shown = value if len(value) <= limit else value[:limit] + "…"
    return repr(shown)

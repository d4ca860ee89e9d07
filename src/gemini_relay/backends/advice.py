"""The fix for each class of upstream failure, worded once for every backend that meets it: the Gemini API's error
answers (an HTTP status and its google.rpc status, met by the api backend, the Gemini CLI cold and warm, and agy's
AGY_ERROR line) and an answer the model's filters stopped (finishReason SAFETY, RECITATION, …). Each string is the
`recovery` of a RunFailed: the step that makes the next call work, after the upstream's own words. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

KEY_PAGE = "https://aistudio.google.com/apikey"
DOCTOR = "gemini-doctor checks the setup without spending tokens"
_BAD_KEY = re.compile(r"api[ _]?key (?:not valid|expired|invalid)|API_KEY_INVALID|API_KEY_EXPIRED", re.IGNORECASE)

# Where a 400's message points (the API names the request field it refused) -> the argument to change.
_ARGUMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"response_?(?:json_?)?schema", re.I),
        "jsonSchema: the API cannot take this schema; simplify it "
        "(no $ref or recursion, fewer nesting levels and enums) or leave it out",
    ),  # fmt: skip
    (
        re.compile(r"thinking", re.I),
        "effort: this model takes no such thinking setting; leave effort out, or pick a "
        "model that thinks (see gemini-models)",
    ),  # fmt: skip
    (
        re.compile(r"token count|too many tokens|exceeds the maximum number of tokens|context length", re.I),
        "the prompt is longer than this model takes: send less (fewer or smaller @ files), or pick a model with a "
        "larger window",
    ),  # fmt: skip
    (
        re.compile(r"mime|inline_?data|file_?data|unsupported file", re.I),
        "an attached file: the model does not take this file type or size; convert it, or pass its text instead",
    ),  # fmt: skip
    (
        re.compile(r"google_?search|\btools\[|function_?declarations", re.I),
        "the tools the relay asked for "
        "(search grounding): this model does not take them; pick another model (see gemini-models)",
    ),  # fmt: skip
    (re.compile(r"\bmodel\b", re.I), "model: pick an id from gemini-models"),
)

_BLOCKED = {
    "RECITATION": "The answer would have recited its source material word for word: ask for a summary or an "
    "explanation in the model's own words instead of the text itself.",
    "LANGUAGE": "The model does not take the request's language: write the prompt in a language it supports.",
    "MAX_TOKENS": "The output limit ran out before any answer text (thinking can use all of it): lower effort, or "
    "ask for a shorter answer.",
    "MALFORMED_FUNCTION_CALL": "The model produced a tool call the API could not parse: retry; if it repeats, ask "
    "for the answer without tools.",
}
_SAFETY_REASONS = frozenset({"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "OTHER"})


def api_status_advice(code: int | None, status: str = "", message: str = "") -> str | None:
    """The fix for an error answer of the Gemini API; None when there is nothing better than retrying as told."""
    status = status.upper()
    if _BAD_KEY.search(message) or _BAD_KEY.search(status):
        return f"The API refused the key: set a valid GEMINI_API_KEY ({KEY_PAGE}) in the server's env; {DOCTOR}."
    if code == 401 or status == "UNAUTHENTICATED":
        return (
            "The API did not accept the credentials: check GEMINI_API_KEY (or the Vertex AI credentials) in the "
            f"server's env; {DOCTOR}."
        )
    if (code == 403 or status == "PERMISSION_DENIED") and _FILE_DENIED in message:
        return not_found_advice(message)  # the API's answer for a files/… uri gone (or never this key's)
    if code == 403 or status == "PERMISSION_DENIED":
        return (
            "The credentials may not do this: check that GEMINI_API_KEY belongs to a project with the Gemini API "
            "enabled (a files/… reference must be this key's own and under 48 h old); "
            f"{DOCTOR}."
        )
    if status == "FAILED_PRECONDITION" or (code == 400 and "location" in message.lower()):
        if "location" in message.lower():
            return (
                "The Gemini API is not offered where this request comes from: use Vertex AI "
                "(GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION) or another network."
            )
        return "The key's project cannot make this call yet: check its billing and the model's availability."
    if code == 400 or status == "INVALID_ARGUMENT":
        named = next((advice for pattern, advice in _ARGUMENTS if pattern.search(message)), None)
        if named is not None:
            return f"Change the argument the API refused — {named}. The same request fails again."
        return (
            "The API refused part of the request (its message names the field): change that argument — model, "
            "effort, jsonSchema or an attached file — and call again; the same request fails again."
        )
    if code == 404 or status == "NOT_FOUND":
        return not_found_advice(message)
    return next((advice for codes, name, advice in _BY_STATUS if code in codes or status == name), None)


# What a 404's message names: a Files API file (`files/<id>`, `File <id>`) or a model (`models/<id>`, "model").
_FILE_DENIED = "permission to access the File"
_FILE_NAMED = (re.compile(r"\bfiles/([a-z0-9-]+)"), re.compile(r"\bFile ([a-z0-9-]+)\b(?!/)"))
_MODEL_NAMED = re.compile(r"\bmodels?\b", re.IGNORECASE)
FILE_GONE = (
    "The Files API keeps an upload ~48 h, then it is gone: upload the file again with gemini-files "
    "(action upload) and pass the new files/<id>."
)
MODEL_GONE = "Pick a model id from gemini-models."


def not_found_advice(message: str) -> str:
    """A 404's fix by what it names: the file is gone (kept ~48 h), or the model id is unknown; both when neither."""
    found = next((m for pattern in _FILE_NAMED if (m := pattern.search(message))), None)
    if found is not None:
        return f"files/{found[1]}: {FILE_GONE}"
    if _MODEL_NAMED.search(message):
        return MODEL_GONE
    return (
        "The API found nothing by that name: check the model id (gemini-models lists them) and any files/… "
        "reference (the Files API keeps an upload ~48 h; upload it again with gemini-files)."
    )


# The classes whose fix needs nothing from the message: (HTTP statuses, google.rpc status, fix).
_BY_STATUS: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((429,), "RESOURCE_EXHAUSTED", "Wait for the quota to refill, or pass a different model."),
    (
        (502, 503),
        "UNAVAILABLE",
        "The model is overloaded or down for now: retry in a minute, or pick another model "
        "(GEMINI_FALLBACK_MODEL retries such a failure on one by itself).",
    ),  # fmt: skip
    ((504,), "DEADLINE_EXCEEDED", "The API gave up before it answered: retry, or send a shorter prompt."),
    (
        (500,),
        "INTERNAL",
        "The API failed on its side: retry; if it keeps failing, shorten the prompt or pick another model.",
    ),  # fmt: skip
)


def blocked_advice(reason: str | None, categories: Sequence[str] = (), *, prompt: bool = False) -> str:
    """The fix for an answer (or, `prompt`, a request) the model's filters stopped, by its finish or block reason."""
    reason = (reason or "").upper()
    if reason in _BLOCKED:
        return _BLOCKED[reason]
    what = "the request" if prompt else "the answer"
    named = f" ({', '.join(dict.fromkeys(c.removeprefix('HARM_CATEGORY_').lower() for c in categories))})"
    if reason in _SAFETY_REASONS or prompt:
        return (
            f"The safety filter stopped {what}{named if categories else ''}: rephrase the request without that "
            "content, or split off the part that trips it; the same prompt is stopped again."
        )
    return EMPTY_ADVICE


BAD_RESPONSE = (
    "The endpoint sent something that is not a Gemini API answer: retry; if it repeats, check "
    "GOOGLE_GEMINI_BASE_URL (a proxy or gateway in between may be answering instead)."
)
CUT_ADVICE = (
    "The answer stopped before the model finished it (its stream ended early): retry; what arrived is only the "
    "start of the answer."
)
EMPTY_ADVICE = (
    "The model sent no answer: retry once; if it happens again, rephrase the request (a safety or recitation block "
    "ends the same way)."
)

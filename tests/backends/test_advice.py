"""The fix for each class of upstream failure, worded once for every backend: which argument a 400 is about, what a
safety or recitation block asks the caller to change, the key, the quota. The paths that meet each class (cold, warm,
api) are checked in test_warm_cold_parity.py; these pin the wording rules."""

from __future__ import annotations

import pytest

from gemini_relay.backends.advice import EMPTY_ADVICE, api_status_advice, blocked_advice


@pytest.mark.parametrize(
    ("message", "argument"),
    [
        ("Invalid JSON payload received. Unknown name \"$ref\" at 'generation_config.response_schema'", "jsonSchema"),
        ("Unable to submit request because thinking_budget is only supported when thinking is enabled.", "effort"),
        ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "prompt is longer"),
        ("Unsupported MIME type: application/x-msdownload", "an attached file"),
        ("Search Grounding is not supported: tools[0].google_search", "search grounding"),
        ("* GenerateContentRequest.model: unexpected model name format", "model: pick an id"),
    ],
)
def test_a_400_names_the_argument_the_api_refused(message: str, argument: str) -> None:
    advice = api_status_advice(400, "INVALID_ARGUMENT", message)
    assert advice is not None and advice.startswith("Change the argument the API refused") and argument in advice


def test_a_400_that_names_no_known_field_still_says_what_to_change() -> None:
    advice = api_status_advice(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
    assert advice is not None and "its message names the field" in advice


def test_an_invalid_key_is_about_the_key_whatever_its_status() -> None:
    for code, status in ((400, "INVALID_ARGUMENT"), (403, "PERMISSION_DENIED")):
        advice = api_status_advice(code, status, "API key not valid. Please pass a valid API key.")
        assert advice is not None and "set a valid GEMINI_API_KEY" in advice and "gemini-doctor" in advice


def test_a_region_the_api_is_not_offered_in_points_at_vertex() -> None:
    advice = api_status_advice(400, "FAILED_PRECONDITION", "User location is not supported for the API use.")
    assert advice is not None and "GOOGLE_GENAI_USE_VERTEXAI=true" in advice


@pytest.mark.parametrize(
    ("code", "status", "words"),
    [
        (401, "UNAUTHENTICATED", "did not accept the credentials"),
        (403, "PERMISSION_DENIED", "may not do this"),
        (404, "NOT_FOUND", "gemini-models"),
        (429, "RESOURCE_EXHAUSTED", "quota to refill"),
        (500, "INTERNAL", "failed on its side"),
        (503, "UNAVAILABLE", "overloaded"),
        (504, "DEADLINE_EXCEEDED", "gave up before it answered"),
        (None, "UNAVAILABLE", "overloaded"),  # agy's AGY_ERROR may carry the status alone
    ],
)
def test_every_api_status_class_has_its_fix(code: int | None, status: str, words: str) -> None:
    advice = api_status_advice(code, status)
    assert advice is not None and words in advice


def test_a_safety_block_says_what_was_blocked_and_what_to_change() -> None:
    advice = blocked_advice("SAFETY", ["HARM_CATEGORY_DANGEROUS_CONTENT", "HARM_CATEGORY_HARASSMENT"])
    assert advice.startswith("The safety filter stopped the answer (dangerous_content, harassment): rephrase")
    assert "the same prompt is stopped again" in advice


def test_a_blocked_prompt_is_the_request_not_the_answer() -> None:
    assert blocked_advice("PROHIBITED_CONTENT", prompt=True).startswith("The safety filter stopped the request")


def test_recitation_and_the_output_limit_ask_for_something_else() -> None:
    assert "in the model's own words" in blocked_advice("RECITATION")
    assert "lower effort" in blocked_advice("MAX_TOKENS")
    assert blocked_advice(None) == EMPTY_ADVICE and blocked_advice("STOP") == EMPTY_ADVICE


@pytest.mark.parametrize(
    "message",
    [
        "You do not have permission to access the File abc123 or it may not exist.",
        "File files/abc123 is not found.",
    ],
)
def test_a_404_naming_a_file_says_the_file_is_gone_and_how_to_upload_it_again_not_to_pick_a_model(
    message: str,
) -> None:
    advice = api_status_advice(404, "NOT_FOUND", message)
    assert advice is not None and advice.startswith("files/abc123: ")
    assert "~48 h" in advice and "gemini-files" in advice and "gemini-models" not in advice


def test_a_404_naming_a_model_keeps_the_model_hint() -> None:
    advice = api_status_advice(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta")
    assert advice == "Pick a model id from gemini-models."


def test_a_404_that_names_nothing_names_both_things_that_can_be_gone() -> None:
    advice = api_status_advice(404, "NOT_FOUND", "Requested entity was not found.")
    assert advice is not None and "gemini-models" in advice and "~48 h" in advice


def test_a_403_on_a_file_uri_names_the_file_and_the_48_hours() -> None:
    message = "You do not have permission to access the File abc123 or it may not exist."
    advice = api_status_advice(403, "PERMISSION_DENIED", message)
    assert advice is not None and advice.startswith("files/abc123: ") and "~48 h" in advice

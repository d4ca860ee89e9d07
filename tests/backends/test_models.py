"""served_notice: a run answered by another model than the one asked for is named, with both models; a tier, a dated
version or a helper model beside the requested one is not a fallback."""

from __future__ import annotations

from gemini_relay.backends.model_names import served_notice


def test_a_silent_fallback_names_both_models() -> None:
    notice = served_notice("gemini", "gemini-2.5-pro", ["gemini-2.5-flash"])
    assert notice is not None
    assert notice.startswith("gemini ran gemini-2.5-flash, not the requested gemini-2.5-pro: it fell back")


def test_the_same_model_by_another_spelling_is_not_a_fallback() -> None:
    assert served_notice("agy", "gemini-3.1-pro", ["gemini-3.1-pro-high"]) is None  # agy's tier
    assert served_notice("api", "gemini-2.5-flash", ["models/gemini-2.5-flash-preview-09-2025"]) is None  # dated
    assert served_notice("api", "Gemini-2.5-Pro", ["gemini-2.5-pro"]) is None


def test_a_helper_model_beside_the_requested_one_is_not_a_fallback() -> None:
    assert served_notice("gemini", "gemini-2.5-pro", ["gemini-2.5-flash-lite", "gemini-2.5-pro"]) is None


def test_nothing_is_said_without_a_request_or_a_witness() -> None:
    assert served_notice("gemini", None, ["gemini-2.5-flash"]) is None
    assert served_notice("gemini", "gemini-2.5-pro", []) is None

"""RunSpec options -> model ids and thinking settings (pure)."""

from __future__ import annotations

import pytest

from gemini_relay.backends.api import resolve_model
from gemini_relay.backends.api.common import DEFAULT_MODEL
from gemini_relay.backends.api.generate_config import thinking_config
from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.errors import InputError


def test_aliases_map_to_the_gemini_cli_ids() -> None:
    for alias, target in GEMINI_ALIASES.items():
        assert resolve_model(alias, None) == target
        assert resolve_model(alias.upper(), None) == target


def test_no_model_or_auto_uses_the_configured_default_else_the_built_in_one() -> None:
    assert resolve_model(None, "gemini-2.5-flash") == "gemini-2.5-flash"
    assert resolve_model("auto", "flash") == GEMINI_ALIASES["flash"]
    assert resolve_model(None, None) == resolve_model("auto", "auto") == DEFAULT_MODEL


def test_a_pasted_listing_row_or_resource_name_is_reduced_to_the_id() -> None:
    assert resolve_model("gemini-2.5-pro\tGemini 2.5 Pro", None) == "gemini-2.5-pro"
    assert resolve_model("models/gemini-2.5-pro", None) == "gemini-2.5-pro"


@pytest.mark.parametrize("bad", ["a/b", "x?alt=json", "-m", "gemini..pro", "gemini 2.5", "x" * 200, "%2e%2e"])
def test_anything_but_a_model_id_is_an_input_error(bad: str) -> None:
    with pytest.raises(InputError, match="not a model id"):
        resolve_model(bad, None)


def test_effort_maps_per_model_family() -> None:
    assert thinking_config("gemini-2.5-flash", "medium") is not None
    assert thinking_config("gemini-2.5-flash", "medium").thinking_budget == 8192  # type: ignore[union-attr]
    level = thinking_config("gemini-3.8-flash", "low")
    assert level is not None and level.thinking_level is not None and level.thinking_level.value == "LOW"
    assert thinking_config("gemma-3-27b", "high") is None
    assert thinking_config("gemini-2.5-pro", None) is None

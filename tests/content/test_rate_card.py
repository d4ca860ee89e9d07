"""The dated rate card: each call priced by its own model, dated, and overridable by GEMINI_RATE_CARD."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.content.rate_card import (
    RATE_CARD_ENV,
    Usage,
    estimate_cost,
    load_rate_card,
    normalize_model,
)
from gemini_relay.errors import ConfigError

NO_ENV: dict[str, str] = {}


def override(tmp_path: Path, data: Any) -> dict[str, str]:
    path = tmp_path / "rates.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return {RATE_CARD_ENV: str(path)}


def test_the_shipped_card_is_dated_and_names_its_source() -> None:
    card = load_rate_card(NO_ENV)
    assert card.as_of == "2026-08-28"
    assert "ai.google.dev/gemini-api/docs/pricing" in card.source
    assert card.overridden == frozenset()
    assert {"gemini-2.5-flash", "gemini-3-pro-image", "gemini-omni-flash", "lyria-3-clip"} <= set(card.models)


def test_a_pro_image_call_splits_image_tokens_from_text_tokens() -> None:
    # 4K pro image: 2000 image tokens at $120/1M is Google's published $0.24; 100 text tokens at $12/1M.
    cost = estimate_cost(
        "gemini-3-pro-image-preview",
        Usage(input_tokens=1000, output_tokens=2100, image_tokens=2000, images=1),
        load_rate_card(NO_ENV),
    )
    assert cost is not None
    assert cost.breakdown == pytest.approx({"input_usd": 0.002, "text_output_usd": 0.0012, "image_usd": 0.24})
    assert cost.usd == pytest.approx(0.2432)
    assert (cost.model, cost.as_of, cost.overridden) == ("gemini-3-pro-image", "2026-08-28", False)


def test_a_model_published_per_image_is_priced_per_image_and_its_image_tokens_are_not_priced_as_text() -> None:
    cost = estimate_cost(
        "gemini-2.5-flash-image",
        Usage(input_tokens=0, output_tokens=2 * 1290, image_tokens=2 * 1290, images=2),
        load_rate_card(NO_ENV),
    )
    assert cost is not None
    assert cost.breakdown == pytest.approx({"input_usd": 0.0, "text_output_usd": 0.0, "image_usd": 0.078})


def test_a_text_call_is_priced_per_million_tokens() -> None:
    cost = estimate_cost("models/gemini-2.5-flash", Usage(input_tokens=2_000_000, output_tokens=400_000))
    assert cost is not None
    assert cost.usd == pytest.approx(0.6 + 1.0)


def test_veo_is_priced_per_second_and_lyria_per_song() -> None:
    card = load_rate_card(NO_ENV)
    veo = estimate_cost("veo-3.1-fast-generate-preview", Usage(video_seconds=8), card)
    lyria = estimate_cost("lyria-3-pro-preview", Usage(input_tokens=500, output_tokens=9000), card)
    assert veo is not None and lyria is not None
    assert veo.usd == pytest.approx(1.2)
    assert (lyria.usd, lyria.breakdown) == (0.08, {"per_generation_usd": 0.08})


def test_omni_video_is_token_billed() -> None:
    cost = estimate_cost("gemini-omni-flash", Usage(output_tokens=5792, video_tokens=5792), load_rate_card(NO_ENV))
    assert cost is not None
    assert cost.usd == pytest.approx(0.10136)  # Google's "about $0.10 per second of 720p"


def test_an_unknown_model_has_no_estimate_rather_than_a_zero() -> None:
    assert estimate_cost("gemini-9-ultra", Usage(input_tokens=10), load_rate_card(NO_ENV)) is None


def test_model_spellings_normalize_to_the_card_entry() -> None:
    assert normalize_model("models/Gemini-3-Pro-Image-Preview") == "gemini-3-pro-image"
    assert normalize_model("gemini-2.5-flash-preview-05-20") == "gemini-2.5-flash"
    assert normalize_model("lyria-3-clip-preview") == "lyria-3-clip"


def test_an_override_changes_one_rate_and_keeps_the_others(tmp_path: Path) -> None:
    env = override(
        tmp_path,
        {"as_of": "2027-01-15", "models": {"gemini-3-pro-image-preview": {"image_output_per_1m": 100.0}}},
    )
    card = load_rate_card(env)
    assert card.as_of == "2027-01-15"
    assert card.models["gemini-3-pro-image"] == {"input_per_1m": 2.0, "output_per_1m": 12.0, "image_output_per_1m": 100}
    assert card.overridden == frozenset({"gemini-3-pro-image"})
    assert f"operator rate card {env[RATE_CARD_ENV]}" in card.source

    cost = estimate_cost("gemini-3-pro-image", Usage(output_tokens=2000, image_tokens=2000), card)
    assert cost is not None
    assert (cost.usd, cost.as_of, cost.overridden) == (0.2, "2027-01-15", True)
    untouched = estimate_cost("gemini-2.5-flash", Usage(input_tokens=1_000_000), card)
    assert untouched is not None and not untouched.overridden


def test_an_override_can_add_a_model_and_an_undated_one_says_so(tmp_path: Path) -> None:
    card = load_rate_card(override(tmp_path, {"models": {"my-tuned-model": {"input_per_1m": 1, "output_per_1m": 2}}}))
    assert card.as_of == "2026-08-28"
    assert "(undated)" in card.source
    cost = estimate_cost("my-tuned-model", Usage(input_tokens=1_000_000, output_tokens=1_000_000), card)
    assert cost is not None and cost.usd == 3.0


def test_the_environment_names_the_override_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = override(tmp_path, {"as_of": "2027-02-01", "models": {}})
    monkeypatch.setenv(RATE_CARD_ENV, env[RATE_CARD_ENV])
    cost = estimate_cost("gemini-2.5-flash", Usage(input_tokens=1))
    assert cost is not None and cost.as_of == "2027-02-01"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"rates": {}}', 'must be an object with a "models" object'),
        ({"models": {"m": {"input_per_1m": "cheap"}}}, "must be a non-negative number, got 'cheap'"),
        ({"models": {"m": {"input_per_1m": -1}}}, "must be a non-negative number"),
        ({"models": {"m": {"per_token": 1}}}, "unknown rate 'per_token'"),
        ({"models": {"m": [1, 2]}}, "must be an object"),
        ({"as_of": "last week", "models": {}}, "must be a YYYY-MM-DD date"),
    ],
)
def test_a_malformed_override_is_a_config_error_naming_the_file(tmp_path: Path, content: Any, message: str) -> None:
    env = override(tmp_path, content)
    with pytest.raises(ConfigError, match=message) as caught:
        load_rate_card(env)
    assert env[RATE_CARD_ENV] in str(caught.value)


def test_a_missing_override_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot be read"):
        load_rate_card({RATE_CARD_ENV: str(tmp_path / "absent.json")})


def test_every_gemini_model_a_backend_or_the_media_tools_list_by_default_is_priced() -> None:
    """gemini-usage priced the relay's own default model (gemini-3.1-pro-preview) as null. agy's third-party models
    (Claude, GPT-OSS) are billed by the Antigravity plan, not per token: they stay unpriced, never priced as free."""
    from gemini_relay.backends.agy.args import MODEL_ALIASES as AGY_ALIASES
    from gemini_relay.backends.agy.catalogs import FALLBACK_MODELS
    from gemini_relay.backends.api.common import DEFAULT_MODEL
    from gemini_relay.backends.model_names import GEMINI_ALIASES, GEMINI_MODELS
    from gemini_relay.tools.common import media_config as media
    from gemini_relay.tools.media.media_models import MEDIA_MODELS

    listed = {DEFAULT_MODEL, *GEMINI_MODELS, *GEMINI_ALIASES.values(), *AGY_ALIASES.values()}
    listed |= {m.id for m in FALLBACK_MODELS if m.id.startswith("gemini-")}
    listed |= {media.DEFAULT_IMAGE_MODEL, media.DEFAULT_VIDEO_MODEL, media.DEFAULT_MUSIC_MODEL}
    listed |= {model for model, _ in MEDIA_MODELS}  # gemini-media-models' list, the media tools' `model` choices
    card = load_rate_card({})
    unpriced = sorted(m for m in listed if estimate_cost(m, Usage(input_tokens=1000, output_tokens=1000), card) is None)
    assert unpriced == []
    assert estimate_cost("claude-sonnet-4-6", Usage(input_tokens=1000), card) is None


def test_a_thinking_tier_prices_as_its_model() -> None:
    assert normalize_model("gemini-3.1-pro-high") == "gemini-3.1-pro"
    assert normalize_model("models/gemini-3.8-flash-low") == "gemini-3.8-flash"
    assert normalize_model("gemini-3.5-flash-lite") == "gemini-3.5-flash-lite"

"""A dated rate card and the cost estimate of one call, priced against that call's own model.

The card ships as `data/rate_card.json` with the date its rates were read (`as_of`) and where from (`source`),
because a rate card goes stale silently and a confident wrong figure is worse than none: every estimate carries
the date. `GEMINI_RATE_CARD` names a JSON file of the same shape whose rates are merged over the shipped ones per
field (changing one rate of a model keeps its others). A model missing from the card prices as None, never zero,
which would read as "free".

Rates per model (all optional, USD): `input_per_1m`, `output_per_1m` (text and thinking output),
`image_output_per_1m` / `video_output_per_1m` / `audio_output_per_1m` (output tokens of that modality),
`per_image`, `per_second_video`, `per_second_music` (for models published that way), and `per_generation` (a flat
price per call, e.g. Lyria per song; when set it is the whole cost).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from gemini_relay.errors import ConfigError

__all__ = [
    "RATE_CARD_ENV",
    "RATE_FIELDS",
    "CostEstimate",
    "RateCard",
    "Usage",
    "estimate_cost",
    "load_rate_card",
    "normalize_model",
]

RATE_CARD_ENV: Final = "GEMINI_RATE_CARD"
RATE_FIELDS: Final = frozenset(
    {
        "input_per_1m",
        "output_per_1m",
        "image_output_per_1m",
        "video_output_per_1m",
        "audio_output_per_1m",
        "per_image",
        "per_second_video",
        "per_second_music",
        "per_generation",
    }
)
_MILLION = 1_000_000
_PREVIEW = re.compile(r"-preview(?:-[0-9-]+)?$")
_TIER = re.compile(r"^(gemini-[0-9.]+-(?:pro|flash|flash-lite))-(?:high|medium|low)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class RateCard:
    as_of: str
    source: str
    models: Mapping[str, Mapping[str, float]]
    overridden: frozenset[str] = frozenset()  # models with at least one rate from GEMINI_RATE_CARD
    override_path: str | None = None


@dataclass(frozen=True)
class Usage:
    """What one call consumed. Output tokens include any image/video/audio tokens; the rest is priced as text."""

    input_tokens: int = 0
    output_tokens: int = 0
    image_tokens: int = 0
    video_tokens: int = 0
    audio_tokens: int = 0
    images: int = 0
    video_seconds: float = 0.0
    music_seconds: float = 0.0
    generations: int = 1


@dataclass(frozen=True)
class CostEstimate:
    usd: float
    model: str  # the card entry that priced it
    as_of: str
    source: str
    breakdown: dict[str, float] = field(default_factory=dict)
    overridden: bool = False


def normalize_model(model: str) -> str:
    """`models/gemini-3-pro-image-preview` prices as `gemini-3-pro-image`, and agy's tiered `gemini-3.1-pro-high` as
    `gemini-3.1-pro` (a thinking tier changes the tokens spent, not the rate): callers hold every spelling."""
    name = model.removeprefix("models/").strip().lower()
    return _TIER.sub(r"\1", _PREVIEW.sub("", name))


def _rates(where: str, model: str, raw: Any) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: the rates of {model!r} must be an object")
    rates: dict[str, float] = {}
    for name, value in raw.items():
        if name == "note":
            continue
        if name not in RATE_FIELDS:
            raise ConfigError(f"{where}: unknown rate {name!r} for {model!r}; known: {', '.join(sorted(RATE_FIELDS))}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{where}: rate {name!r} of {model!r} must be a non-negative number, got {value!r}")
        rates[name] = float(value)
    return rates


def _parse(where: str, text: str, *, full: bool) -> tuple[str | None, str | None, dict[str, dict[str, float]]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{where} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ConfigError(f'{where} must be an object with a "models" object')
    as_of, source = data.get("as_of"), data.get("source")
    if as_of is not None and not (isinstance(as_of, str) and _DATE.match(as_of)):
        raise ConfigError(f'{where}: "as_of" must be a YYYY-MM-DD date, got {as_of!r}')
    if full and (as_of is None or not isinstance(source, str)):
        raise ConfigError(f'{where} needs "as_of" and "source"')
    models = {normalize_model(str(name)): _rates(where, str(name), raw) for name, raw in data["models"].items()}
    return as_of, source if isinstance(source, str) else None, models


def _shipped() -> RateCard:
    text = resources.files("gemini_relay.content").joinpath("data/rate_card.json").read_text(encoding="utf-8")
    as_of, source, models = _parse("the packaged rate card", text, full=True)
    assert as_of is not None and source is not None  # full=True guarantees both
    return RateCard(as_of, source, models)


def load_rate_card(env: Mapping[str, str] | None = None) -> RateCard:
    """The shipped card with the file named by `GEMINI_RATE_CARD` merged over it; a bad override is a ConfigError.

    An override without `as_of` keeps the shipped date on the models it does not touch but cannot vouch for the
    ones it does, so its source note says so.
    """
    card = _shipped()
    path = (os.environ if env is None else env).get(RATE_CARD_ENV, "").strip()
    if not path:
        return card
    where = f"{RATE_CARD_ENV}={path}"
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read: {exc.strerror or exc}") from None
    as_of, source, overrides = _parse(where, text, full=False)
    merged = {name: dict(rates) for name, rates in card.models.items()}
    for name, rates in overrides.items():
        merged.setdefault(name, {}).update(rates)
    note = source or f"operator rate card {path}" + ("" if as_of else " (undated)")
    return RateCard(
        as_of=as_of or card.as_of,
        source=f"{note}; over: {card.source}",
        models=merged,
        overridden=frozenset(overrides),
        override_path=path,
    )


def _per_million(tokens: int, rate: float | None) -> float:
    return tokens * rate / _MILLION if rate is not None else 0.0


def _media_cost(rates: Mapping[str, float], usage: Usage) -> dict[str, float]:
    """Image, video and audio output: by token where the card has a token rate, else by the unit it publishes."""
    out: dict[str, float] = {}
    if "image_output_per_1m" in rates:
        out["image_usd"] = _per_million(usage.image_tokens, rates["image_output_per_1m"])
    elif "per_image" in rates:
        out["image_usd"] = usage.images * rates["per_image"]
    if "video_output_per_1m" in rates:
        out["video_usd"] = _per_million(usage.video_tokens, rates["video_output_per_1m"])
    elif "per_second_video" in rates:
        out["video_usd"] = usage.video_seconds * rates["per_second_video"]
    if "audio_output_per_1m" in rates:
        out["audio_usd"] = _per_million(usage.audio_tokens, rates["audio_output_per_1m"])
    elif "per_second_music" in rates:
        out["audio_usd"] = usage.music_seconds * rates["per_second_music"]
    return out


def estimate_cost(model: str, usage: Usage, card: RateCard | None = None) -> CostEstimate | None:
    """What one call cost in USD by the card (loaded from the environment when not given); None for an unknown model.

    Output tokens of a modality the card prices per unit instead (e.g. 2.5-flash-image's per-image price) are not
    priced again as text.
    """
    card = card if card is not None else load_rate_card()
    key = normalize_model(model)
    rates = card.models.get(key)
    if rates is None:
        return None
    if "per_generation" in rates:
        breakdown = {"per_generation_usd": rates["per_generation"] * max(usage.generations, 1)}
    else:
        media_tokens = usage.image_tokens + usage.video_tokens + usage.audio_tokens
        breakdown = {
            "input_usd": _per_million(usage.input_tokens, rates.get("input_per_1m")),
            "text_output_usd": _per_million(max(usage.output_tokens - media_tokens, 0), rates.get("output_per_1m")),
            **_media_cost(rates, usage),
        }
    return CostEstimate(
        usd=round(sum(breakdown.values()), 6),
        model=key,
        as_of=card.as_of,
        source=card.source,
        breakdown=breakdown,
        overridden=key in card.overridden,
    )

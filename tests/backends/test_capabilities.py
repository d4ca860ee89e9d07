"""ModelListing.of_catalog: gemini-models' body for a backend that lists its models in a catalog."""

from __future__ import annotations

from gemini_relay.backends.capabilities import ModelListing
from gemini_relay.backends.model_names import Catalog, ModelInfo


def test_a_catalog_lists_each_model_with_its_own_label_then_the_aliases_and_the_default() -> None:
    catalog = Catalog((ModelInfo("m-pro", "M Pro"), ModelInfo("m-flash", "m-flash")), live=True)
    listing = ModelListing.of_catalog("x backend (X)", catalog, {"pro": "m-pro"}, "m-flash", more=("", "A note."))
    assert listing.lines == [
        "Models for the x backend (X) — pass the id as `model`:",
        "",
        "- m-pro — M Pro",
        "- m-flash",  # a label that only repeats the id is left out
        "",
        "Aliases: pro → m-pro",
        "Default: m-flash",
        "",
        "A note.",
    ]
    assert listing.notices == [] and listing.models == [("m-pro", "M Pro"), ("m-flash", "m-flash")]


def test_a_built_in_catalog_says_why_the_live_list_is_missing() -> None:
    catalog = Catalog((ModelInfo("m", "M"),), live=False, notice="the live list failed")
    assert ModelListing.of_catalog("x backend", catalog, {}, "m").notices == ["the live list failed"]

"""A tool's effect on the world is one closed vocabulary; its MCP annotations follow from it."""

from __future__ import annotations

from gemini_relay.core.vocabulary import Effect


def test_every_effect_stands_for_its_own_combination_of_annotation_hints() -> None:
    assert len({effect.hints for effect in Effect}) == len(Effect)


def test_an_effect_that_only_reads_is_never_destructive() -> None:
    assert not any(effect.hints.destructive for effect in Effect if effect.hints.read_only)


def test_answered_in_process_effects_reach_no_upstream_and_model_turns_do() -> None:
    assert Effect.LOCAL.hints == (True, False, True, False)
    assert Effect.ASKS.hints.open_world and not Effect.ASKS.hints.idempotent
    assert Effect.STOPS.hints.destructive and Effect.STOPS.hints.idempotent and not Effect.STOPS.hints.open_world

"""Every fixture tool the conformance scenarios call, in the order tools/list shows them."""

from __future__ import annotations

from gemini_relay.tools.conformance.basic import BASIC
from gemini_relay.tools.conformance.fixture import Fixture, FixtureError, FixtureProtocolError
from gemini_relay.tools.conformance.rounds import ROUNDS

FIXTURES: tuple[Fixture, ...] = BASIC + ROUNDS

__all__ = ["FIXTURES", "Fixture", "FixtureError", "FixtureProtocolError"]

"""The packing controls on the wire: the order is a closed vocabulary shared with content/packing.py."""

from __future__ import annotations

from typing import get_args

from gemini_relay.content.packing import PackOrder
from gemini_relay.tools.common.context_pack import PackOrderName
from gemini_relay.tools.common.inputs import wire_schema
from gemini_relay.tools.core.ask import AskInput


def test_the_wire_pack_orders_are_exactly_the_packing_orders() -> None:
    assert list(get_args(PackOrderName)) == [o.value for o in PackOrder]


def test_gemini_ask_shows_the_pack_order_as_a_plain_enum_with_its_default() -> None:
    prop = wire_schema(AskInput)["properties"]["packOrder"]
    assert prop["enum"] == ["smallest-first", "given"] and prop["default"] == "smallest-first"
    assert "$ref" not in str(wire_schema(AskInput))

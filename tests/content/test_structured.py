"""Structured output: schema loading and checks, JSON extraction from replies, validation and its wording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gemini_relay.content.json_schema import (
    MAX_SCHEMA_BYTES,
    NoJsonFound,
    extract_json,
    failure_text,
    load_schema,
    make_validator,
    repair_prompt,
    validation_errors,
)
from gemini_relay.errors import InputError

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def test_a_schema_given_as_json_text_or_object_loads_the_same() -> None:
    assert load_schema(json.dumps(PERSON)) == load_schema(PERSON) == PERSON


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "jsonSchema is not valid JSON"),
        ("[1, 2]", "jsonSchema must be a JSON object (a JSON Schema), not list"),
        ({"type": "objekt"}, "jsonSchema is not a valid JSON Schema: 'objekt' is not valid under any"),
        ({"properties": {"a": {"minLength": -1}}}, "(at $.properties.a.minLength)"),
        ({"$ref": "https://example.com/s.json"}, "not local (#/...): https://example.com/s.json"),
    ],
)
def test_a_bad_schema_is_refused_with_the_reason(raw: str | dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        load_schema(raw)
    assert message in str(caught.value)


def test_a_schema_over_the_size_limit_is_refused_before_parsing() -> None:
    big = json.dumps({"description": "x" * MAX_SCHEMA_BYTES})
    with pytest.raises(InputError, match=r"schema is \d+ bytes; the limit is 20 KB"):
        load_schema(big, field="schema", max_bytes=MAX_SCHEMA_BYTES)


def test_a_local_ref_is_accepted() -> None:
    schema = {"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}
    errors = validation_errors(make_validator(load_schema(schema)), {"a": "x"})
    assert errors == ["at $.a: 'x' is not of type 'integer'"]


def test_a_valid_value_has_no_errors_and_an_invalid_one_lists_each_with_its_path() -> None:
    validator = make_validator(PERSON)
    assert validation_errors(validator, {"name": "Ada", "age": 36, "email": "ada@example.com"}) == []
    errors = validation_errors(validator, {"name": "", "age": -1, "tags": ["a", "z"], "extra": 1})
    assert errors == [
        "at $: Additional properties are not allowed ('extra' was unexpected)",
        "at $.age: -1 is less than the minimum of 0",
        "at $.name: '' should be non-empty",
        "at $.tags[1]: 'z' is not one of ['a', 'b']",
    ]


def test_formats_are_checked() -> None:
    assert validation_errors(make_validator(PERSON), {"name": "a", "age": 1, "email": "not-an-address"}) == [
        "at $.email: 'not-an-address' is not a 'email'"
    ]


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  \n[1, 2]\n", [1, 2]),
        ('Here you go:\n```json\n{"a": {"b": "{{x}}"}}\n```\nAnything else?', {"a": {"b": "{{x}}"}}),
        ('```\n{"a": 2}\n```', {"a": 2}),
        ('The answer is {"a": 3} as requested.', {"a": 3}),
        ('Sure [not json] then {"a": 4}', {"a": 4}),
    ],
)
def test_the_json_value_is_found_in_plain_fenced_or_prose_replies(reply: str, value: object) -> None:
    assert extract_json(reply).value == value


def test_a_reply_without_json_says_so() -> None:
    with pytest.raises(NoJsonFound):
        extract_json("I cannot help with that.")


def test_the_repair_prompt_lists_the_problems_and_quotes_the_answer_only_in_a_new_conversation() -> None:
    same = repair_prompt(["at $.age: 'x' is not of type 'integer'"], '{"age": "x"}', same_conversation=True)
    assert "- at $.age: 'x' is not of type 'integer'" in same and '{"age": "x"}' not in same
    fresh = repair_prompt(["at $: bad"], '{"age": "x"}', same_conversation=False)
    assert 'The previous answer was:\n{"age": "x"}' in fresh
    assert fresh.endswith("no markdown fences.")


def test_the_failure_text_caps_the_list_and_shows_the_last_answer() -> None:
    text = failure_text([f"at $.f{i}: bad" for i in range(12)], "{}")
    assert "- at $.f9: bad\n- … and 2 more" in text and text.endswith("Last answer:\n{}")


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(levels):
        schema = {"items": schema}
    return schema


@pytest.mark.parametrize("as_text", [False, True])
def test_a_schema_nested_past_the_depth_limit_is_a_clean_input_error(as_text: bool) -> None:
    schema = _nested(5000)
    raw: str | dict[str, Any] = ("[" * 5000 + "]" * 5000) if as_text else schema
    with pytest.raises(InputError, match=r"^jsonSchema nests deeper than 64 levels$"):
        load_schema(raw)


def test_a_schema_within_the_depth_limit_loads() -> None:
    assert load_schema(_nested(60))["items"]["items"] is not None

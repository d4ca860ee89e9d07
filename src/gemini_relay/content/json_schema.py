"""Structured output: load and check a JSON Schema before anything runs, pull one JSON value out of a reply, validate
it (format checks on), and word the repair turn and the final validation failure. Pure: no I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gemini_relay.errors import InputError, RelayError

__all__ = [
    "MAX_SCHEMA_BYTES",
    "NoJsonFound",
    "StructuredOutputError",
    "extract_json",
    "load_schema",
    "make_validator",
    "repair_prompt",
    "validation_errors",
]

MAX_SCHEMA_BYTES = 20 * 1024  # the bridge's limit: a schema larger than this is a prompt, not a contract
MAX_ERRORS_SHOWN = 10
MAX_SCHEMA_DEPTH = 64  # nested objects/arrays; real schemas stay far below, and Python's recursion limit is near
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_STARTS = 20  # `{` / `[` positions tried when the JSON value sits inside prose


class Validator(Protocol):
    """The part of a jsonschema validator the relay uses (jsonschema ships no type information)."""

    def iter_errors(self, instance: Any) -> Iterable[Any]: ...


class StructuredOutputError(RelayError):
    """The answer is not valid against the schema, even after the repair turn."""


class NoJsonFound(ValueError):
    """The reply holds no parseable JSON value."""


@dataclass(frozen=True)
class Extracted:
    value: Any
    raw: str  # the JSON text as the model wrote it (trimmed), shown back to it in a repair turn


def load_schema(
    raw: str | dict[str, Any], *, field: str = "jsonSchema", max_bytes: int | None = None
) -> dict[str, Any]:
    """A JSON Schema object from a JSON string or an object, checked against its metaschema.

    Raises:
        InputError: not JSON, not an object, over `max_bytes`, not a valid schema, or a non-local `$ref`.
    """
    if not isinstance(raw, str):
        _check_depth(raw, field)  # before json.dumps, which would recurse as deep as the object goes
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise InputError(f"{field} is {size} bytes; the limit is {max_bytes // 1024} KB")
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except RecursionError:
            raise InputError(f"{field} nests deeper than {MAX_SCHEMA_DEPTH} levels") from None
        except ValueError as exc:
            raise InputError(f"{field} is not valid JSON: {exc}") from None
        _check_depth(value, field)
    else:
        value = raw
    if not isinstance(value, dict):
        raise InputError(f"{field} must be a JSON object (a JSON Schema), not {type(value).__name__}")
    schema: dict[str, Any] = value
    # jsonschema costs ~60 ms to import: only calls with a schema pay it, not the server's start.
    from jsonschema import Draft202012Validator, validators  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = _path(exc.absolute_path)
        detail = f"{exc.message} (at {where})" if where else exc.message
        raise InputError(f"{field} is not a valid JSON Schema: {detail}") from None
    except RecursionError:  # a $ref cycle or nesting the depth check let through
        raise InputError(f"{field} is too deeply nested or recursive to check") from None
    remote = sorted({ref for ref in _refs(schema) if not ref.startswith("#")})
    if remote:
        # Nothing is fetched over the network; a remote $ref would fail only after the model has answered.
        raise InputError(f"{field} uses $ref values that are not local (#/...): {', '.join(remote[:5])}")
    return schema


def _check_depth(value: Any, field: str) -> None:
    """Iterative, so a hostile nesting cannot exhaust the stack while it is being measured."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(child, dict | list):
                if depth >= MAX_SCHEMA_DEPTH:
                    raise InputError(f"{field} nests deeper than {MAX_SCHEMA_DEPTH} levels")
                stack.append((child, depth + 1))


def make_validator(schema: dict[str, Any]) -> Validator:
    from jsonschema import Draft202012Validator, FormatChecker, validators

    cls = validators.validator_for(schema, default=Draft202012Validator)
    validator: Validator = cls(schema, format_checker=FormatChecker())
    return validator


def validation_errors(validator: Validator, value: Any) -> list[str]:
    """`at $.a[0]: message` for each error, most specific paths first; empty when the value is valid."""
    from referencing.exceptions import Unresolvable

    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    except Unresolvable as exc:
        raise StructuredOutputError(f"the schema could not be applied: unresolvable $ref {exc}") from None
    return [_describe(e) for e in errors]


def extract_json(text: str) -> Extracted:
    """The JSON value in a reply: the whole text, else a fenced ```json block, else the first value in prose.

    Raises:
        NoJsonFound: nothing parses.
    """
    stripped = text.strip()
    try:
        return Extracted(json.loads(stripped), stripped)
    except ValueError:
        pass
    for match in _FENCE.finditer(text):
        body = match.group(1).strip()
        try:
            return Extracted(json.loads(body), body)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    starts = [i for i, ch in enumerate(stripped) if ch in "{["][:_STARTS]
    for start in starts:
        try:
            value, end = decoder.raw_decode(stripped, start)
        except ValueError:
            continue
        return Extracted(value, stripped[start:end])
    raise NoJsonFound("the answer contains no JSON value")


def repair_prompt(problems: Sequence[str], previous: str, *, same_conversation: bool) -> str:
    """The one repair turn: what failed, and (outside the original conversation) what was answered."""
    listed = "\n".join(f"- {p}" for p in problems[:MAX_ERRORS_SHOWN])
    shown = "" if same_conversation else f"\n\nThe previous answer was:\n{previous}"
    return (
        "Your previous answer does not validate against the required JSON Schema:\n"
        f"{listed}{shown}\n\n"
        "Reply again with only the corrected JSON value: no prose, no explanation, no markdown fences."
    )


def failure_text(problems: Sequence[str], answer: str) -> str:
    """The error of a structured call whose answer stayed invalid after the repair turn."""
    shown = problems[:MAX_ERRORS_SHOWN]
    more = f"\n- … and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    listed = "\n".join(f"- {p}" for p in shown)
    return (
        "The answer does not validate against the JSON Schema, even after one repair turn:\n"
        f"{listed}{more}\n\nLast answer:\n{answer}"
    )


def _describe(error: Any) -> str:  # a jsonschema ValidationError
    return f"at {_path(error.absolute_path) or '$'}: {error.message}"


def _path(parts: Sequence[object]) -> str:
    if not parts:
        return ""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:  # pyright: ignore[reportUnknownVariableType]
            yield from _refs(item)

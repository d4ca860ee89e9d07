"""Hypothesis strategies for the JSON Schema subset the tools' inputSchemas use (hypothesis-jsonschema 0.23.1, the
latest on PyPI, breaks on current Hypothesis internals: `'many' object has no attribute 'more'`)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TEXT = st.text(max_size=60)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(sub) for sub in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}) for k in kind])
    if kind == "object" or "properties" in schema:
        return _object(schema)
    if kind == "array":
        items = schema.get("items", {})
        return st.lists(from_schema(items) if items else st.text(max_size=20), min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", 3), 3))  # fmt: skip
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=max(low, min(schema.get("maxLength", 60), 60)))
    if kind == "integer":
        return st.integers(min_value=_bound(schema, "minimum", "exclusiveMinimum", 1),
                           max_value=_bound(schema, "maximum", "exclusiveMaximum", -1))  # fmt: skip
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        return st.floats(min_value=low, max_value=schema.get("maximum"), allow_nan=False, allow_infinity=False,
                         exclude_min="exclusiveMinimum" in schema)  # fmt: skip
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return st.none() | st.booleans() | st.integers() | TEXT


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str, step: int) -> int | None:
    if inclusive in schema:
        return int(schema[inclusive])
    if exclusive in schema:
        return int(schema[exclusive]) + step
    return None


def _object(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = schema.get("properties", {})
    required = [k for k in schema.get("required", []) if k in props]
    optional = {k: from_schema(v) for k, v in props.items() if k not in required}
    return st.fixed_dictionaries({k: from_schema(props[k]) for k in required}, optional=optional)

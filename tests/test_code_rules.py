"""Rules the source keeps that no linter checks, read from the source with `ast`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "gemini_relay"


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body, not of the functions or classes defined inside it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield child
        yield from _own_nodes(child)


def _unclosed_relays(tree: ast.AST) -> Iterator[ast.stmt]:
    """`async for x in make_stream(...): yield x` inside an async generator: the inner stream is not closed with it."""
    for function in ast.walk(tree):
        if not isinstance(function, ast.AsyncFunctionDef):
            continue
        nodes = list(_own_nodes(function))
        if not any(isinstance(node, ast.Yield | ast.YieldFrom) for node in nodes):
            continue
        for node in nodes:
            relays = isinstance(node, ast.AsyncFor) and isinstance(node.iter, ast.Call)
            if relays and isinstance(node, ast.stmt) and any(isinstance(i, ast.Yield) for i in ast.walk(node)):
                yield node


def test_an_async_generator_that_passes_on_another_stream_closes_it_with_aclosing() -> None:
    # Closing the outer generator (a cancelled or abandoned run) raises GeneratorExit at its `yield`; an inner
    # generator iterated in place is then left to the garbage collector, which may run after the event loop is
    # gone, so its `finally` (the process group stop) never runs and the child outlives the run.
    found = [
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path in sorted(SRC.rglob("*.py"))
        for node in _unclosed_relays(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], "wrap the inner stream in `async with aclosing(...)`: " + ", ".join(found)


def test_the_rule_sees_an_unclosed_relay() -> None:
    source = "async def outer():\n    async for event in inner():\n        yield event\n"
    assert len(list(_unclosed_relays(ast.parse(source)))) == 1
    closed = (
        "async def outer():\n    async with aclosing(inner()) as events:\n        async for event in events:\n"
        "            yield event\n"
    )
    assert list(_unclosed_relays(ast.parse(closed))) == []

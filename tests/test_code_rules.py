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


# The modules below the jobs layer keep their own folds: a backend classifies its process's exit from what it
# yielded (streams/transcript.py), and the transcript is the fold itself.
_OWN_FOLDS = ("backends", "streams")


def _folds(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every `x.apply(...)` call (not `super().apply`), with the function it is in."""
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in _own_nodes(function):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = node.func.value
            is_super = (
                isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and (receiver.func.id == "super")
            )
            if node.func.attr == "apply" and not is_super:
                yield function.name, node.lineno


def test_a_runs_events_are_folded_into_its_record_only_where_it_executes() -> None:
    # The engine's consume folds the backend's events into the run's record, in the relay host. A server attached to
    # the run takes in the changes of that record (RunRecord.follow), never the events again: two folds of one run
    # must never have to agree (its keepalives, its partial text and its result come from the host's one).
    found = [
        f"{path.relative_to(SRC)}:{line} ({function})"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] not in _OWN_FOLDS
        for function, line in _folds(ast.parse(path.read_text(encoding="utf-8")))
        if function != "consume"
    ]
    assert found == [], "a record follows the host's (RunRecord.follow); only consume folds events: " + ", ".join(found)


def test_the_fold_rule_sees_a_second_fold() -> None:
    source = "async def attached(record, message):\n    record.apply(decode(message))\n"
    assert list(_folds(ast.parse(source))) == [("attached", 2)]
    own = "class R(T):\n    def apply(self, event):\n        super().apply(event)\n"
    assert list(_folds(ast.parse(own))) == []

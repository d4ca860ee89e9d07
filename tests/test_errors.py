"""The exception tree drawn in errors.py is the real one: every RelayError subclass anywhere in the package is drawn
under each of its real parents, in the module that defines it, and nothing drawn is missing from the code."""

from __future__ import annotations

import importlib
import pkgutil
import re

import gemini_relay
from gemini_relay import errors

_LINE = re.compile(r"^(?P<indent>[│├└─ ]*)(?P<name>[A-Z]\w+)\s+(?P<where>\(above\)|\S+)")


def _all_subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    subs: list[type] = cls.__subclasses__()
    for sub in subs:
        found |= {sub} | _all_subclasses(sub)
    return found


def _drawn() -> tuple[dict[str, str], set[tuple[str, str]]]:
    """(class name -> module as drawn, {(parent, child)}) from the docstring's tree."""
    doc = errors.__doc__ or ""
    modules: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = _LINE.match(line)
        if match is None or not (match["indent"] or match["name"] == "RelayError"):
            continue
        depth = len(match["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            edges.add((stack[-1][1], match["name"]))
        if match["where"] != "(above)":
            modules[match["name"]] = match["where"]
        stack.append((depth, match["name"]))
    return modules, edges


def _import_everything() -> None:
    for info in pkgutil.walk_packages(gemini_relay.__path__, "gemini_relay."):
        if not info.name.endswith("__main__"):  # running it would start the server
            importlib.import_module(info.name)


def test_every_relay_error_is_drawn_in_the_tree_in_its_own_module_under_each_of_its_parents() -> None:
    _import_everything()
    modules, edges = _drawn()
    real = {cls for cls in _all_subclasses(errors.RelayError) if cls.__module__.startswith("gemini_relay.")}
    assert {cls.__name__ for cls in real} | {"RelayError"} == set(modules), "drawn and real trees differ"
    for cls in real:
        drawn_module = modules[cls.__name__]
        assert cls.__module__.removeprefix("gemini_relay.").replace(".", "/") == drawn_module.replace(".py", ""), (
            cls.__name__,
            cls.__module__,
            drawn_module,
        )
        for parent in cls.__bases__:
            if issubclass(parent, errors.RelayError):
                assert (parent.__name__, cls.__name__) in edges, f"{cls.__name__} is not drawn under {parent.__name__}"
    assert all(issubclass(getattr_any(child), getattr_any(parent)) for parent, child in edges)


def getattr_any(name: str) -> type:
    for cls in _all_subclasses(errors.RelayError) | {errors.RelayError}:
        if cls.__name__ == name:
            return cls
    raise AssertionError(f"{name} is drawn but no such RelayError exists")


def test_a_missing_git_is_not_the_callers_fault() -> None:
    from gemini_relay.content.git_diff import GitError, GitUnavailable

    assert issubclass(GitUnavailable, GitError)
    assert not issubclass(GitUnavailable, errors.InputError)

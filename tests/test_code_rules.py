"""Rules the source keeps that no linter checks, read from the source with `ast`."""

from __future__ import annotations

import ast
import io
import re
import tokenize
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


# A module's name says its role without its folder: no two modules of src share a basename. Two exceptions, each a
# role every one of its kind has: a package's __init__.py, a toolset's list (tools/<toolset>/toolset.py), a tool
# a toolset replaces (tools/<toolset>/<tool>.py is named after its tool: gemini-cancel is core's and, by jobId, the
# jobs toolset's), and the plug-in shape of an upstream package under
# backends/ (each has its backend, settings, surface, sessions, ... module), which may repeat between upstreams.
UPSTREAM_PACKAGES = ("agy", "gemini_cli", "api")
UPSTREAM_ROLES = frozenset(
    {"backend.py", "errors.py", "settings.py", "surface.py", "sessions.py", "usage.py", "warm.py", "args.py",
     "decoder.py", "auth.py"}
)  # fmt: skip


def _upstream_role(path: Path) -> bool:
    rel = path.relative_to(SRC).parts
    return rel[:1] == ("backends",) and len(rel) > 2 and rel[1] in UPSTREAM_PACKAGES and path.name in UPSTREAM_ROLES


def test_no_two_modules_share_a_name_beyond_the_roles_of_a_package() -> None:
    seen: dict[str, dict[str, list[str]]] = {}  # name -> owner (the module, or "toolsets" for all their copies)
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).parts
        toolset_module = rel[:1] == ("tools",) and len(rel) == 3 and rel[1] != "common"  # named for its role
        if path.name != "__init__.py" and not _upstream_role(path):
            owner = "toolsets" if toolset_module else str(path.relative_to(SRC))
            seen.setdefault(path.name, {}).setdefault(owner, []).append(str(path.relative_to(SRC)))
    repeated = {name: sum(o.values(), []) for name, o in seen.items() if len(o) > 1}
    assert not repeated, "\n".join(f"{name}: {', '.join(paths)}" for name, paths in sorted(repeated.items()))


# What a docstring or comment names exists: a `something.py` path (read from the module's own folder, any folder above
# it within the package, a toolset folder below it, or the repository's root, as tests/... paths are) and a dotted
# `gemini_relay.…` module. A rename or removal that leaves a name behind fails here.
ROOT = SRC.parents[1]
_PATH_NAME = re.compile(r"(?<![\w./-])((?:[a-z_][a-z0-9_]*/)*[a-z_][a-z0-9_]*\.py)\b")
_DOTTED_NAME = re.compile(r"\bgemini_relay(?:\.[a-z_][a-z0-9_]*)+")


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring of a module."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                yield node.body[0].lineno, doc


_TEST_FILES = frozenset(p.name for p in (ROOT / "tests").rglob("*.py"))


def _path_exists(module: Path, named: str) -> bool:
    folders = [d for d in module.parents if d == SRC or SRC in d.parents]  # its own folder and those above it
    return (
        any((d / named).is_file() for d in folders)
        or (ROOT / named).is_file()
        or any(module.parent.glob(f"*/{named}"))
        or named in _TEST_FILES
    )


def _module_exists(dotted: str) -> bool:
    """The dotted name is a module, or a name inside one (gemini_relay.config.Settings)."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        base = SRC.parent.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return end >= len(parts) - 1
    return False


def test_every_module_a_docstring_or_comment_names_exists() -> None:
    missing = [
        f"{path.relative_to(SRC)}:{line} names {name}"
        for path in sorted(SRC.rglob("*.py"))
        for line, text in _prose(path)
        for name in [n for n in _PATH_NAME.findall(text) if not _path_exists(path, n)]
        + [n for n in _DOTTED_NAME.findall(text) if not _module_exists(n)]
    ]
    assert not missing, "\n".join(missing)


# Names say which role, not which relative: in the relay host's code and the server's side of it (relay_host/, jobs/),
# no class is another's name with a word added (the old Host, HostRunner, HostedRunner, HostClient family), unless it
# is that class's implementation (a subclass, or a Protocol it meets: FileJobStore of JobStore). And the host's
# executor composes the store's JobManager rather than being one: no relay_host class subclasses a jobs/ class.
ROOMS = ("relay_host", "jobs")


def _classes(folders: tuple[str, ...]) -> dict[str, tuple[str, ast.ClassDef]]:
    found: dict[str, tuple[str, ast.ClassDef]] = {}
    for folder in folders:
        for path in sorted((SRC / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    found[node.name] = (str(path.relative_to(SRC)), node)
    return found


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases if isinstance(b, ast.Name | ast.Attribute)}


def test_no_class_of_the_host_rooms_is_named_after_another_it_does_not_implement() -> None:
    classes = _classes(ROOMS)
    family = [
        f"{where} {name} is {other} with a word added"
        for name, (where, node) in classes.items()
        for other, (_, base) in classes.items()
        if other != name
        and (name.startswith(other) or name.endswith(other))
        and other not in _base_names(node)
        and "Protocol" not in _base_names(base)
    ]
    assert not family, "\n".join(family)


def test_no_class_of_the_relay_host_subclasses_one_of_jobs() -> None:
    jobs_classes = set(_classes(("jobs",)))
    inherited = [
        f"{where} {name}({', '.join(sorted(_base_names(node) & jobs_classes))})"
        for name, (where, node) in _classes(("relay_host",)).items()
        if _base_names(node) & jobs_classes
    ]
    assert not inherited, "\n".join(inherited)

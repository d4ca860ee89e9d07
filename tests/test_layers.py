"""The layer contract: the request path reads top-down, and no module imports a layer above its own.

transport/entry → server → tools → content → jobs → backends → supervise → streams → format → bottom (core/,
errors, config, log). Nothing below tools/ imports `mcp`. Inside server/ and jobs/ the folders are floors too;
inside tools/, common/ imports no toolset and the toolsets import each other in no cycle.
Read from the source with `ast`, so it costs no import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gemini_relay"

# Highest first. A module may import its own layer or any layer after it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"__main__", "cli", "commands", "setup", "app", "transports", "http"}),
    frozenset({"server"}),
    frozenset({"tools"}),
    frozenset({"content"}),
    frozenset({"relay_host"}),
    frozenset({"jobs"}),
    frozenset({"backends"}),
    frozenset({"supervise"}),
    frozenset({"streams"}),
    frozenset({"format"}),
    frozenset({"core", "errors", "config", "log", "__init__"}),
)
MCP_ALLOWED = frozenset({"__main__", "cli", "commands", "app", "transports", "http", "server", "tools"})


def _unit(path: Path) -> str:
    """The top-level unit of a module: its package under gemini_relay, or the module name itself."""
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _layer(unit: str) -> int:
    for index, layer in enumerate(LAYERS):
        if unit in layer:
            return index
    raise AssertionError(f"{unit} is in no layer: add it to LAYERS in tests/test_layers.py")


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


MODULES = sorted(SRC.rglob("*.py"))
_TESTS_MODULE = re.compile(r"tests(\.\w+)*")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_nothing_in_the_package_imports_or_names_the_test_suite(path: Path) -> None:
    """The wheel holds src only: a module that imported tests/ (the conformance fixtures, say) would break there.
    The fixtures come in by GEMINI_RELAY_FIXTURES, set by the tests (server/fixture_hook.py), never by a default."""
    for lineno, module in _imports(path):
        assert module.split(".")[0] != "tests", f"{path.relative_to(SRC)}:{lineno} imports {module}"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not _TESTS_MODULE.fullmatch(node.value), f"{path.relative_to(SRC)}:{node.lineno} names {node.value}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    unit = _unit(path)
    own = _layer(unit)
    offences = []
    for line, module in _imports(path):
        parts = module.split(".")
        if parts[0] != "gemini_relay" or len(parts) < 2:
            continue
        target = parts[1]
        if _layer(target) < own:
            offences.append(f"line {line}: {module} ({target} is above {unit})")
    assert not offences, "\n".join(offences)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_nothing_below_the_tools_imports_mcp(path: Path) -> None:
    if _unit(path) in MCP_ALLOWED or path.name == "format.py":
        return
    offences = [f"line {line}: {m}" for line, m in _imports(path) if m.split(".")[0] in ("mcp", "mcp_types")]
    assert not offences, "\n".join(offences)


def test_every_package_is_placed_in_a_layer() -> None:
    for path in MODULES:
        _layer(_unit(path))


# Inside jobs/, the folders are floors too: its top level (the server's side of the relay host: the protocol, the
# connection, the follower of a run) may import store/ and engine/; store/ (records on disk, status, the management
# API) may import engine/; engine/ (the engine, the live record, runners, pacing) imports neither.
JOBS_FLOORS: tuple[str, ...] = ("", "store", "engine")
JOBS_MODULES = sorted((SRC / "jobs").rglob("*.py"))


@pytest.mark.parametrize("path", JOBS_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_inside_jobs_no_folder_imports_a_floor_above_its_own(path: Path) -> None:
    rel = path.relative_to(SRC / "jobs")
    own = JOBS_FLOORS.index(rel.parts[0] if len(rel.parts) > 1 else "")
    for lineno, module in _imports(path):
        parts = module.split(".")
        if parts[:2] == ["gemini_relay", "jobs"] and len(parts) > 2:
            floor = parts[2] if parts[2] in JOBS_FLOORS else ""
            assert JOBS_FLOORS.index(floor) >= own, f"jobs/{rel}:{lineno} imports {module}, a floor above"


# Inside server/, the MCP tasks machinery (tasks/: the service, its records on disk, both wire generations) is the
# floor below the protocol surface (relay.py and the modules beside it): the surface starts and answers tasks, the
# tasks machinery never reaches back up to it.
SERVER_MODULES = sorted((SRC / "server").rglob("*.py"))


@pytest.mark.parametrize("path", SERVER_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_inside_the_server_the_tasks_machinery_does_not_import_the_surface_above_it(path: Path) -> None:
    rel = path.relative_to(SRC / "server")
    if rel.parts[0] != "tasks":
        return
    for lineno, module in _imports(path):
        parts = module.split(".")
        if parts[:2] == ["gemini_relay", "server"]:
            assert parts[2:3] == ["tasks"], f"server/{rel}:{lineno} imports {module}, the surface above tasks/"


# Inside tools/, one folder per toolset (core/ holds the default tools) and common/ for what every tool shares.
# common/ imports no toolset; the toolsets import common/ and each other without a cycle (media lists jobs'
# gemini-status and gemini-wait; the media generation machinery core's gemini-image shares is in common/); only the
# registry reads the toolsets' lists, and only the server reads the registry.
TOOLS = SRC / "tools"
TOOLSETS = ("core", "jobs", "review", "media")
TOOLS_MODULES = sorted(TOOLS.rglob("*.py"))


def _folder_imports(folder: str) -> set[str]:
    found: set[str] = set()
    for path in (TOOLS / folder).rglob("*.py"):
        for _, module in _imports(path):
            parts = module.split(".")
            if parts[:2] == ["gemini_relay", "tools"] and len(parts) > 2 and parts[2] != folder:
                found.add(parts[2])
    return found


def test_every_module_of_the_tools_lives_in_a_toolset_folder_or_common() -> None:
    for path in TOOLS_MODULES:
        rel = path.relative_to(TOOLS)
        if len(rel.parts) == 1:
            assert rel.name in ("__init__.py", "registry.py"), f"tools/{rel}: a tool lives in its toolset's folder"
        else:
            assert rel.parts[0] in (*TOOLSETS, "common"), f"tools/{rel}: {rel.parts[0]}/ is no toolset"


def test_the_shared_machinery_imports_no_toolset_and_the_toolsets_form_no_cycle() -> None:
    assert not _folder_imports("common") & set(TOOLSETS), "common/ imports a toolset"
    cycle = _cycle({folder: _folder_imports(folder) & set(TOOLSETS) for folder in TOOLSETS})
    assert cycle is None, "the toolsets import each other in a cycle: " + " → ".join(cycle or ())


@pytest.mark.parametrize("path", TOOLS_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_only_the_registry_reads_the_toolset_lists_and_only_the_server_reads_the_registry(path: Path) -> None:
    for lineno, module in _imports(path):
        assert module != "gemini_relay.tools.registry", f"{path.relative_to(SRC)}:{lineno} reads the registry"
        if path.name != "registry.py":
            assert not module.endswith(".toolset"), f"{path.relative_to(SRC)}:{lineno} reads a toolset's list"


# No module imports itself back through others at module level (TYPE_CHECKING included; a package's __init__ counts
# for `from package import module`); a function-level import is no cycle: it runs once everything is loaded.


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _top_level_imports(path: Path) -> list[str]:
    """The modules `path` imports when it is loaded: its body's imports and those under `if TYPE_CHECKING:`."""
    found: list[str] = []
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    for node in body:
        if isinstance(node, ast.If):
            body.extend(node.body)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)  # `from pkg import module`
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_no_module_imports_itself_back() -> None:
    modules = {_module_name(p): p for p in MODULES}
    graph = {name: {m for m in _top_level_imports(p) if m in modules and m != name} for name, p in modules.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or ())


def _cycle(graph: dict[str, set[str]]) -> tuple[str, ...] | None:
    """A path that comes back to where it started, or None when the graph has none."""
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if node in path:
            return (*path[path.index(node) :], node)
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            found = visit(target, (*path, node))
            if found is not None:
                return found
        done.add(node)
        return None

    return next((c for c in (visit(node, ()) for node in sorted(graph)) if c is not None), None)


UPSTREAMS = ("agy", "gemini_cli", "api")  # the packages under backends/ that each hold one upstream


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_only_its_own_package_and_the_registry_import_an_upstream(path: Path) -> None:
    rel = path.relative_to(SRC).parts
    if rel[:1] == ("backends",) and (rel[1:2] == ("backend_registry.py",) or rel[1] in UPSTREAMS):
        own = rel[1] if rel[1] in UPSTREAMS else None
    else:
        own = None
    allowed = set(UPSTREAMS) if rel == ("backends", "backend_registry.py") else {own} if own else set()
    reached = {
        name.split(".")[2]
        for name in _top_level_and_nested_imports(path)
        if name.startswith("gemini_relay.backends.") and name.split(".")[2] in UPSTREAMS
    }
    assert reached <= allowed, f"{'/'.join(rel)} reaches into {sorted(reached - allowed)}"


def _top_level_and_nested_imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found.extend(
                f"{node.module}.{alias.name}" for alias in node.names
            )  # `from gemini_relay.backends import agy`
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


# A room per process, composition at the root. relay_host/ runs in the relay host process (or, GEMINI_RELAY_HOST=off,
# inside a server, as the app builds it); jobs/ is the server's side and what both share, so it never imports
# relay_host/. Only the composition root (the app, the CLI, the transports) builds a relay host: nothing the tools,
# server or content hold imports it, so no tool helper can start one.
COMPOSITION_ROOT = frozenset({"__main__", "cli", "commands", "app", "transports", "relay_host"})


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_only_the_composition_root_imports_the_relay_host(path: Path) -> None:
    if _unit(path) in COMPOSITION_ROOT:
        return
    for lineno, module in _top_level_and_nested_imports_with_lines(path):
        assert not module.startswith("gemini_relay.relay_host"), f"{path.relative_to(SRC)}:{lineno} imports {module}"


# The tools reach jobs through its front door (jobs/__init__.py) only: what is behind it can be rearranged freely.
@pytest.mark.parametrize("path", TOOLS_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_the_tools_import_jobs_only_through_its_front_door(path: Path) -> None:
    for lineno, module in _top_level_and_nested_imports_with_lines(path):
        behind = module.startswith("gemini_relay.jobs.") and _is_module(module)
        assert not behind, f"{path.relative_to(SRC)}:{lineno} imports {module}"


# The default tools (core/) stand alone: an opt-in toolset (media, review, jobs) can be left out without them
# noticing. What they share with one (image generation, prompt images) lives in common/.
@pytest.mark.parametrize("path", sorted((TOOLS / "core").rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_the_default_tools_import_no_opt_in_toolset(path: Path) -> None:
    opt_in = tuple(f"gemini_relay.tools.{name}" for name in TOOLSETS if name != "core")
    for lineno, module in _top_level_and_nested_imports_with_lines(path):
        hit = module in opt_in or module.startswith(tuple(f"{name}." for name in opt_in))
        assert not hit, f"{path.relative_to(SRC)}:{lineno} imports {module}, an opt-in toolset"


def _is_module(dotted: str) -> bool:
    """Whether `dotted` names a module or package of the source (not a name a package's __init__ exports)."""
    path = SRC.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _top_level_and_nested_imports_with_lines(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found

"""The layer contract: the request path reads top-down, and no module imports a layer above its own.

transport/entry → server → tools → content → jobs → backends → supervise → streams → format → bottom (core/,
errors, config, log). Nothing below tools/ imports `mcp`. Read from the source with `ast`, so it costs no import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gemini_relay"

# Highest first. A module may import its own layer or any layer after it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"__main__", "cli", "commands", "setup", "app", "transports", "http"}),
    frozenset({"server"}),
    frozenset({"tools"}),
    frozenset({"content"}),
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


# Inside jobs/, the folders are floors too: host/ (the relay host, the server's proxy to it, their wire) may import
# store/ and engine/; store/ (records on disk, status, the management API) may import engine/; engine/ (the engine,
# the live record, runners, pacing) imports neither.
JOBS_FLOORS: tuple[str, ...] = ("host", "store", "engine")
JOBS_MODULES = sorted((SRC / "jobs").rglob("*.py"))


@pytest.mark.parametrize("path", JOBS_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_inside_jobs_no_folder_imports_a_floor_above_its_own(path: Path) -> None:
    rel = path.relative_to(SRC / "jobs")
    if len(rel.parts) == 1:
        assert rel.name == "__init__.py", f"jobs/{rel}: every module of jobs/ lives in host/, store/ or engine/"
        return
    own = JOBS_FLOORS.index(rel.parts[0])
    for lineno, module in _imports(path):
        parts = module.split(".")
        if parts[:2] == ["gemini_relay", "jobs"] and len(parts) > 2:
            assert JOBS_FLOORS.index(parts[2]) >= own, f"jobs/{rel}:{lineno} imports {module}, a floor above"

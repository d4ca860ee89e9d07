"""content/ says which of its modules reach outside (a process, the network): exactly those import what does."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gemini_relay.content as content

_OUTSIDE = ("subprocess", "socket", "ssl", "httpx", "httpx2", "urllib.request", "gemini_relay.supervise")
_REACHES_OUTSIDE = ("gemini_relay.content.git_diff.run_git",)  # spawning through another content module counts


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _reaches_outside(path: Path) -> bool:
    imported = _imports(path)
    return any(name == o or name.startswith(o + ".") for name in imported for o in _OUTSIDE) or bool(
        imported & set(_REACHES_OUTSIDE)
    )


def test_the_modules_content_names_as_reaching_outside_are_exactly_those_that_do() -> None:
    doc = content.__doc__ or ""
    line = doc[doc.index("\nReaching outside:") :]  # the docstring's last paragraph
    declared = set(re.findall(r"(\w+) \(", line))
    folder = Path(content.__file__).parent
    actual = {path.stem for path in folder.rglob("*.py") if _reaches_outside(path)}
    assert actual == declared

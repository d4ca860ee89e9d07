"""The README is a page, the docs hold the rest, and what they point to and name exists: every relative link resolves
(to a heading, when it names one), and every environment variable the code reads has exactly one row in
docs/configuration.md."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from tests.harness import REPO

SRC = REPO / "src" / "gemini_relay"
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
CONFIGURATION = REPO / "docs" / "configuration.md"
# A name the relay reads from its environment: these prefixes, whole (a prefix such as "GEMINI_RELAY_" ends in "_").
ENV_NAME = re.compile(r"(?:GEMINI|AGY|GOOGLE|CLOUDSDK)_[A-Z0-9_]*[A-Z0-9]")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def env_names_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENV_NAME.fullmatch(node.value):
                names.add(node.value)
    return names


def documented_names() -> Counter[str]:
    """The names in the first cell of each table row of docs/configuration.md, counted."""
    counts: Counter[str] = Counter()
    for line in CONFIGURATION.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            counts.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell))
    return counts


def test_the_readme_is_a_page_of_at_most_200_lines() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)


def test_every_relative_link_in_the_readme_and_docs_resolves_to_a_file_and_heading() -> None:
    broken: list[str] = []
    for page in PAGES:
        for target in relative_links(page):
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_environment_variable_the_code_reads_has_exactly_one_row_in_the_configuration_page() -> None:
    documented = documented_names()
    missing = sorted(env_names_read_by_the_code() - set(documented))
    twice = sorted(name for name, n in documented.items() if n > 1)
    assert not missing, f"not in docs/configuration.md: {missing}"
    assert not twice, f"documented in more than one row: {twice}"


def test_the_link_checker_finds_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# Title\n\n## A heading: with `code`\n\n[x](#a-heading-with-code) [y](#nope)\n", encoding="utf-8")
    assert relative_links(page) == ["#a-heading-with-code", "#nope"]
    assert "a-heading-with-code" in anchors(page) and "nope" not in anchors(page)

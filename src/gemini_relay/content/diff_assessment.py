"""gemini-assess: a diff's size, complexity and kind, with advice on review depth and estimated wall times.

Heuristics from gemini-mcp-bridge's assess tool: estimates are expected durations (CLI cold start plus per-file
work), not timeouts. Pure: the git facts come from content.git_diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemini_relay.content.git_diff import (
    DiffKind,
    DiffSpec,
    DiffStat,
    FileChange,
    classify_complexity,
    classify_kind,
    summarize,
)

__all__ = ["Assessment", "Suggestion", "assess_changes", "guidance", "suggestions"]

MAX_FILES_SHOWN = 100  # in the text; `_meta.changedFiles` lists every file

_GUIDANCE: dict[DiffKind, str] = {
    "empty": "No diff detected. Stage or commit the changes you want reviewed, or pick another base.",
    "generated": (
        "Only generated files changed (lockfiles, minified bundles, snapshots). Start with scan; escalate only if "
        "the output looks inconsistent with a deliberate source change."
    ),
    "non-code": (
        "Non-code changes (docs, config, workflows) can still break things. Start with scan or focused rather than "
        "assuming they are low value."
    ),
    "mixed": (
        "Code and non-code changes together usually need focused or deep review: the docs or config may explain or "
        "constrain the code change."
    ),
    "code": "Code changes usually deserve focused or deep review, depending on how cross-cutting the diff is.",
}


@dataclass(frozen=True)
class Suggestion:
    depth: str
    estimated_seconds: int
    description: str


def guidance(kind: DiffKind) -> str:
    return _GUIDANCE[kind]


def suggestions(stat: DiffStat, kind: DiffKind) -> list[Suggestion]:
    focused = {
        "generated": "Reads the changed files for context; useful only when generated churn may hide a real change.",
        "non-code": "Reads the changed files for context; a good fit for docs, config or workflow changes.",
    }.get(kind, "Reads the changed files for context; does not follow imports or check tests.")
    deep = {
        "generated": "Explores the repository; rarely needed for generated-only churn.",
        "mixed": "Explores the repository; best when code and its docs or config must be checked together.",
    }.get(kind, "Explores the repository: follows imports, checks tests, reads project conventions.")
    return [
        Suggestion("scan", 30, "Diff only, no repository exploration: a fast single pass."),
        Suggestion("focused", min(30 + 10 * stat.files, 240), focused),
        Suggestion("deep", min(60 + 25 * stat.files, 1200), deep),
    ]


@dataclass(frozen=True)
class Assessment:
    spec: DiffSpec
    root: Path
    changes: tuple[FileChange, ...]
    untracked: tuple[str, ...]
    stat: DiffStat
    complexity: str
    kind: DiffKind
    guidance: str
    suggestions: tuple[Suggestion, ...]

    def as_meta(self) -> dict[str, Any]:
        return {
            "diffSource": "branch" if self.spec.base else "uncommitted",
            "base": self.spec.base,
            "diffStat": {
                "files": self.stat.files,
                "insertions": self.stat.insertions,
                "deletions": self.stat.deletions,
                "binaryFiles": self.stat.binary,
            },
            "changedFiles": [c.path for c in self.changes],
            "renamedFrom": {c.path: c.old_path for c in self.changes if c.old_path},
            "untrackedFiles": list(self.untracked),
            "complexity": self.complexity,
            "diffKind": self.kind,
            "guidance": self.guidance,
            "suggestions": [
                {"depth": s.depth, "estimatedSeconds": s.estimated_seconds, "description": s.description}
                for s in self.suggestions
            ],
            "resolvedCwd": str(self.root),
        }

    def render(self) -> str:
        stat = self.stat
        binary = f", {stat.binary} binary" if stat.binary else ""
        lines = [
            f"Diff: {self.spec.describe()} in {self.root}",
            f"Files: {stat.files} changed (+{stat.insertions} / -{stat.deletions}){binary}",
            f"Kind: {self.kind}",
            f"Complexity: {self.complexity}",
            f"Guidance: {self.guidance}",
        ]
        if self.stat.files:
            lines.append("Suggested depths (gemini-review depth=…):")
            lines += [f"- {s.depth} (~{s.estimated_seconds} s): {s.description}" for s in self.suggestions]
            lines.append("Changed files:")
            lines += [_file_line(c) for c in self.changes[:MAX_FILES_SHOWN]]
            if len(self.changes) > MAX_FILES_SHOWN:
                lines.append(f"- … and {len(self.changes) - MAX_FILES_SHOWN} more (all are in _meta.changedFiles)")
        if self.untracked:
            lines.append(
                f"Untracked files not in the diff: {len(self.untracked)} (`git add -N <path>` includes a new file)"
            )
        return "\n".join(lines)


def assess_changes(
    spec: DiffSpec, root: Path, changes: Sequence[FileChange], untracked: Sequence[str] = ()
) -> Assessment:
    stat = summarize(changes)
    paths = [c.path for c in changes]
    kind = classify_kind(paths)
    return Assessment(
        spec=spec,
        root=root,
        changes=tuple(changes),
        untracked=tuple(untracked),
        stat=stat,
        complexity=classify_complexity(stat, paths),
        kind=kind,
        guidance=guidance(kind),
        suggestions=tuple(suggestions(stat, kind)),
    )


def _file_line(change: FileChange) -> str:
    counts = "binary" if change.binary else f"+{change.insertions} -{change.deletions}"
    renamed = f" (renamed from {change.old_path})" if change.old_path else ""
    return f"- {change.path}{renamed} ({counts})"

"""`agy --version` output -> a version, and the 1.1.15 floor (agy.md §1.3). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gemini_relay.errors import BackendUnavailable


@dataclass(frozen=True, order=True)
class AgyVersion:
    major: int
    minor: int
    patch: int
    prerelease: str = field(default="", compare=False)  # kept for display; the floor compares the triple only

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}" + (f"-{self.prerelease}" if self.prerelease else "")


# 1.1.15 fixed U+FFFD corruption of non-ASCII text in stream-json deltas; everything below it garbles answers.
FLOOR = AgyVersion(1, 1, 15)
# 1.2.3 started refusing a model id that carries an effort tier together with a different --effort.
STRICT_MODEL_EFFORT = AgyVersion(1, 2, 3)
_MAX_MAJOR = 1000  # a "triple" with a larger major is a date (2026.10.02), not a version

# A triple not glued to a word, path or longer dotted chain; an optional prerelease such as -preview.3.
_TRIPLE = re.compile(r"(?<![\w./\\-])v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z][0-9A-Za-z.-]*))?(?![\w/\\]|\.\d)")


def parse_version(text: str) -> AgyVersion | None:
    """The version in `agy --version` output, tolerating `agy 1.2.0`, `agy version 1.2.0`, `v1.2.0`, prereleases.

    A flush-left line holding only a version outranks any other triple; indented lines (upgrade notices) are
    ignored; within a tier the first triple wins.
    """
    fallback: AgyVersion | None = None
    for line in text.splitlines():
        if not line.strip() or line[0].isspace():
            continue
        stripped = line.strip()
        for match in _TRIPLE.finditer(stripped):
            version = _version(match)
            if version is None:
                continue
            if match.start() == 0 and match.end() == len(stripped):
                return version
            if fallback is None:
                fallback = version
    return fallback


def _version(match: re.Match[str]) -> AgyVersion | None:
    major, minor, patch = (int(match.group(i)) for i in (1, 2, 3))
    if major >= _MAX_MAJOR:
        return None
    return AgyVersion(major, minor, patch, match.group(4) or "")


def require_floor(output: str, binary: Path) -> AgyVersion:
    """The parsed version when it meets the floor.

    Raises:
        BackendUnavailable: the output names no version, or one older than FLOOR.
    """
    version = parse_version(output)
    if version is None:
        shown = " ".join(output.split())[:200] or "no output"
        raise BackendUnavailable(
            f"Could not read agy's version from `{binary} --version` ({shown}). agy {FLOOR} or newer is required; "
            "reinstall agy or point AGY_CLI_PATH at a working binary."
        )
    if version < FLOOR:
        raise BackendUnavailable(
            f"agy {FLOOR} or newer is required (gemini-relay drives agy through --output-format stream-json); "
            f"found {version} at {binary}. Update agy, or set GEMINI_MCP_BACKEND=gemini."
        )
    return version

"""changeMode: wrap a request so Gemini answers with exact OLD/NEW edit blocks, parse those blocks (jamubc's fenced
`OLD:`/`NEW:` form and the bridge's `===OLD===`/`===NEW===` form) and render them as `[CHANGEMODE OUTPUT …]` chunks."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "CHANGEMODE_CHUNK_KIND",
    "DEFAULT_MAX_CHARS",
    "NO_EDITS_PREFIX",
    "Edit",
    "changemode_footer",
    "edits_as_meta",
    "fill_template",
    "load_template",
    "no_edits_text",
    "parse_edits",
    "render_edits",
    "validate_edits",
    "validation_failed_text",
    "wrap_changemode",
]

CHANGEMODE_CHUNK_KIND = "changemode"  # the `kind` to store rendered bodies under in ChunkCache
DEFAULT_MAX_CHARS = 20_000
NO_EDITS_PREFIX = "No edits found in Gemini's response. Please ensure Gemini uses the OLD/NEW format."
_SUMMARY_MIN_EDITS = 6  # jamubc prepends a per-file summary only when there are more than five edits
_EDIT_OVERHEAD = 250  # jamubc's size estimate: fixed overhead + 2·filename + old + new

# `file:X` only as a word of its own, so `profile:x` or `config.file:x` are not rewritten.
_FILE_PREFIX = re.compile(r"(?<![\w@.:/-])file:(?=\S)")
_PLACEHOLDER = re.compile(r"\{\{([A-Z][A-Z0-9_]*)\}\}")
_HEADER = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|[-*][ \t]+|\d+[.)][ \t]+)?\*\*FILE:[ \t]*(?P<spec>\S.*?)\*\*[ \t]*$")
_LINE_SPEC = re.compile(r"(?P<path>.*?):(?P<start>\d+)(?:-(?P<end>\d+))?")
_OLD_MARK = re.compile(r"^={3,}\s*OLD\s*={3,}\s*$")
_NEW_MARK = re.compile(r"^={3,}\s*NEW\s*={3,}\s*$")
_END_MARK = re.compile(r"^={3,}\s*END\s*={3,}\s*$")
_LEGACY_OLD = re.compile(r"^OLD:\s*$")
_LEGACY_NEW = re.compile(r"^NEW:\s*$")
_BACKTICK_RUN = re.compile(r"`{3,}")

_APPLY_LINE = (
    "Apply these edits in order. Each edit uses exact string matching, so the old_str must match exactly what "
    "appears between the code blocks."
)


@dataclass(frozen=True)
class Edit:
    """One exact-text replacement; lines are 1-based inclusive, and 0/0 means the range is unknown."""

    filename: str
    start_line: int
    end_line: int
    old_code: str
    new_code: str


@functools.cache
def load_template(name: str) -> str:
    """Text of `templates/<name>` shipped with this package."""
    return (resources.files("gemini_relay.content") / "templates" / name).read_text(encoding="utf-8")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """Replace `{{NAME}}` placeholders in one pass over the template only.

    Substituted text is never rescanned, so a `{{x}}` inside a user's prompt (or a diff) survives verbatim;
    placeholders without a value are left as they are.
    """
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def wrap_changemode(prompt: str) -> str:
    """Rewrite `file:X` to `@X` and wrap the request in the `[CHANGEMODE INSTRUCTIONS]` template."""
    request = _FILE_PREFIX.sub("@", prompt)
    return fill_template(load_template("changemode.md"), {"PROMPT": request})


def parse_edits(text: str, root: Path | None = None) -> list[Edit]:
    """Parse every `**FILE: …**` edit block in `text`, in order.

    Headers may carry `path:start` (end = start + old lines − 1), `path:start-end`, or just `path`; a bare path gets
    its range by locating OLD in the file under `root` (0/0 when that is impossible). A block ends at the next header
    or the end of the text, at a closing fence when the block opened one, and at `===END===` in the `===` form.
    Blocks without both markers are ignored; use `validate_edits` for jamubc's sanity checks.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    edits: list[Edit] = []
    spec: str | None = None
    body: list[str] = []
    for line in [*lines, None]:
        header = _HEADER.match(line) if line is not None else None
        if line is not None and header is None:
            body.append(line)
            continue
        if spec is not None:
            edit = _parse_block(spec, body, root)
            if edit is not None:
                edits.append(edit)
        spec = header.group("spec") if header is not None else None
        body = []
    return edits


def _parse_block(spec: str, body: list[str], root: Path | None) -> Edit | None:
    # Commit to one marker family per block, so an `OLD:` line inside `===OLD===` code cannot end a section.
    bridge_form = any(_OLD_MARK.match(line) or _NEW_MARK.match(line) for line in body)
    old_mark, new_mark = (_OLD_MARK, _NEW_MARK) if bridge_form else (_LEGACY_OLD, _LEGACY_NEW)
    state, fenced = "pre", False
    old: list[str] = []
    new: list[str] = []
    for line in body:
        if state == "pre":
            if old_mark.match(line):
                state = "old"
            elif line.lstrip().startswith("```"):
                fenced = True
        elif state == "old":
            if new_mark.match(line):
                state = "new"
            else:
                old.append(line)
        elif fenced and line.startswith("```"):
            state = "closed"
            break
        elif bridge_form and _END_MARK.match(line):
            break
        else:
            new.append(line)
    # A block that opened a fence must close it (as jamubc's regex demands), or trailing prose would leak into NEW.
    if state not in ("new", "closed") or (fenced and state != "closed"):
        return None
    if bridge_form:  # the bridge trims surrounding blank lines only
        old_code, new_code = _strip_blank_lines(old), _strip_blank_lines(new)
    else:  # jamubc's regex drops leading blank lines, then trimEnd()s
        old_code, new_code = _strip_blank_lines(old, trailing=False).rstrip(), _strip_blank_lines(new, False).rstrip()
    match = _LINE_SPEC.fullmatch(spec)
    if match is None:
        filename = spec.strip()
        start, end = _infer_range(root, filename, old_code) if root is not None else (0, 0)
    else:
        filename = match["path"].strip()
        start = int(match["start"])
        old_lines = old_code.count("\n") + 1 if old_code else 1
        end = int(match["end"]) if match["end"] else start + old_lines - 1
    return Edit(filename, start, end, old_code, new_code)


def _strip_blank_lines(lines: list[str], trailing: bool = True) -> str:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while trailing and end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


def _infer_range(root: Path, filename: str, old_code: str) -> tuple[int, int]:
    """Range of the first exact occurrence of `old_code` in the file, or (0, 0); never reads outside `root`."""
    if not old_code or not filename or "\0" in filename:
        return 0, 0
    real_root = os.path.realpath(root)
    real = os.path.realpath(Path(real_root) / filename)  # an absolute in-root path (the bridge's form) works too
    if not real.startswith(real_root.rstrip(os.sep) + os.sep):
        return 0, 0
    try:
        content = Path(real).read_text(encoding="utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except (OSError, UnicodeDecodeError, ValueError):
        return 0, 0
    at = content.find(old_code)
    if at < 0:
        return 0, 0
    start = content.count("\n", 0, at) + 1
    return start, start + old_code.count("\n")


def validate_edits(edits: Sequence[Edit]) -> list[str]:
    """jamubc's checks: a filename, start ≤ end, and not both sides empty. Returns the errors (empty when valid)."""
    errors: list[str] = []
    for edit in edits:
        if not edit.filename:
            errors.append("Edit missing filename")
        if edit.start_line > edit.end_line:
            errors.append(f"Invalid line range for {edit.filename}: {edit.start_line} > {edit.end_line}")
        if not edit.old_code and not edit.new_code:
            errors.append(f"Empty edit for {edit.filename}")
    return errors


def validation_failed_text(errors: Sequence[str]) -> str:
    """The relay's answer when parsed edits fail validation."""
    return "Edit validation failed:\n" + "\n".join(errors)


def no_edits_text(raw: str) -> str:
    """The answer when nothing parsed: the marker line, then Gemini's raw text unchanged."""
    return f"{NO_EDITS_PREFIX}\n\n{raw}"


def edits_as_meta(edits: Sequence[Edit]) -> list[dict[str, object]]:
    """Edits as `_meta.edits` entries; an unknown range is reported as null lines."""
    return [
        {
            "file": edit.filename,
            "startLine": edit.start_line or None,
            "endLine": edit.end_line or None,
            "old": edit.old_code,
            "new": edit.new_code,
        }
        for edit in edits
    ]


def _estimate(edit: Edit) -> int:
    return _EDIT_OVERHEAD + 2 * len(edit.filename) + len(edit.old_code) + len(edit.new_code)


def _chunk_edits(edits: Sequence[Edit], max_chars: int) -> list[list[Edit]]:
    """jamubc's chunker: whole files per chunk; a file larger than the budget is split between its edits."""
    groups: dict[str, list[Edit]] = {}
    for edit in edits:
        groups.setdefault(edit.filename, []).append(edit)
    chunks: list[list[Edit]] = []
    current: list[Edit] = []
    size = 0
    for file_edits in groups.values():
        units = [file_edits]
        if sum(_estimate(edit) for edit in file_edits) > max_chars:
            # An oversized file starts a fresh chunk and is then packed edit by edit.
            if current:
                chunks.append(current)
                current, size = [], 0
            units = [[edit] for edit in file_edits]
        for unit in units:
            unit_size = sum(_estimate(edit) for edit in unit)
            if current and size + unit_size > max_chars:
                chunks.append(current)
                current, size = [], 0
            current.extend(unit)
            size += unit_size
    if current:
        chunks.append(current)
    return chunks


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _header(index: int, total: int, count: int) -> str:
    if total > 1:
        return (
            f"[CHANGEMODE OUTPUT - Chunk {index} of {total}]\n\n"
            f"Gemini has analyzed your codebase and generated edits across {total} chunks.\n"
            f"This chunk contains {_plural(count, 'complete edit')} that can be applied independently.\n\n"
            "Each chunk contains self-contained edits grouped by file. You can safely apply these edits\n"
            "before fetching the next chunk.\n\n"
        )
    return (
        "[CHANGEMODE OUTPUT - Gemini has analyzed the files and provided these edits]\n\n"
        f"I have prepared {_plural(count, 'modification')} for your codebase.\n\n"
        "IMPORTANT: Apply these edits directly WITHOUT reading the files first. The edits below contain exact text "
        "matches from the current file contents.\n\n"
    )


def _fenced(code: str) -> str:
    # A fence longer than any backtick run inside keeps code that itself contains ``` intact.
    longest = max((len(run) for run in _BACKTICK_RUN.findall(code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}\n{code}\n{fence}"


def _section(number: int, edit: Edit) -> str:
    return (
        f"### Edit {number}: {edit.filename}\n\n"
        f"Replace this exact text:\n{_fenced(edit.old_code)}\n\n"
        f"With this text:\n{_fenced(edit.new_code)}\n"
    )


def _summary(edits: Sequence[Edit], across_chunks: bool) -> str:
    counts: dict[str, int] = {}
    for edit in edits:
        counts[edit.filename] = counts.get(edit.filename, 0) + 1
    title = "ChangeMode Summary (Complete analysis across all chunks):" if across_chunks else "ChangeMode Summary:"
    lines = "\n".join(f"- {name}: {_plural(count, 'edit')}" for name, count in counts.items())
    across = " (across all chunks)" if across_chunks else ""
    return f"{title}\nTotal edits: {len(edits)}{across}\nFiles affected: {len(counts)}\n\n{lines}"


def render_edits(edits: Sequence[Edit], max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """Render edits as `[CHANGEMODE OUTPUT …]` chunk bodies (empty list for no edits).

    Edits are grouped per file; `### Edit N` numbers run across chunks. Each complete chunk text is
    `body + changemode_footer(index, len(bodies), cache_key)`.
    """
    chunks = _chunk_edits(edits, max_chars)
    bodies: list[str] = []
    number = 0
    for index, chunk in enumerate(chunks, start=1):
        sections = []
        for edit in chunk:
            number += 1
            sections.append(_section(number, edit))
        body = _header(index, len(chunks), len(chunk)) + "\n".join(sections)
        if index == 1 and len(edits) >= _SUMMARY_MIN_EDITS:
            body = _summary(edits, len(chunks) > 1) + "\n\n" + body
        bodies.append(body)
    return bodies


def changemode_footer(index: int, total: int, cache_key: str | None) -> str:
    """Footer for chunk `index` of `total`; before the last chunk it names the exact gemini-fetch-chunk call."""
    footer = f"\n---\n{_APPLY_LINE}"
    if index < total:
        if cache_key is None:
            raise ValueError("a cache key is required while chunks remain")
        following = index + 1
        remaining = total - index
        footer += (
            "\n\n---\n"
            f"**Next Step**: After applying the edits above, retrieve the next chunk ({following} of {total}) using:"
            f'\n\n```\ngemini-fetch-chunk cacheKey="{cache_key}" chunkIndex={following}\n```\n\n'
            f"There {'is' if remaining == 1 else 'are'} {_plural(remaining, 'more chunk')} containing additional "
            "edits.\n\n"
            "**CONTINUE**: You are working on a multi-chunk changeMode response. After applying these edits, fetch "
            "the next chunk to continue with the remaining modifications."
        )
    elif total > 1:
        footer += (
            f"\n\n---\n**Complete**: This was the final chunk ({total} of {total}); all edits have been delivered."
        )
    return footer

"""Local git facts for the review toolset: which diff, its numstat, its text; and the assess heuristics.

Git runs as a supervised child (its own process group, bounded), with a scrubbed environment and fixed arguments:
refs are validated before they reach argv and every path argument follows `--`. Paths are reported relative to the
project root and the diff is limited to it (`--relative`), matching what the relay lets Gemini see. No model call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from gemini_relay.errors import InputError, RelayError
from gemini_relay.supervise.process import ProcessSpec, SpawnError, run_process

__all__ = [
    "DiffKind",
    "DiffSpec",
    "DiffStat",
    "FileChange",
    "GitError",
    "GitRequestError",
    "GitUnavailable",
    "NotARepository",
    "changes_and_untracked",
    "classify_complexity",
    "classify_kind",
    "diff_spec",
    "git_env",
    "numstat",
    "parse_numstat",
    "read_diff",
    "run_git",
    "summarize",
    "untracked_files",
    "validate_ref",
]

Complexity = Literal["trivial", "moderate", "complex"]
DiffKind = Literal["empty", "code", "mixed", "non-code", "generated"]

GIT_TIMEOUT = 30.0  # a diff of a huge repository; anything slower is reported, not waited for
GIT_GRACE = 1.0
REF = re.compile(r"^[\w./-]+$")
_NO_HEAD = re.compile(r"unknown revision|bad revision|ambiguous argument 'HEAD'|does not have any commits", re.I)
_NOT_A_REPO = re.compile(r"not a git repository", re.I)
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M", "--relative")
# Kept out of the child: they would point git at another repository, index or worktree than the project's.
_ENV_KEYS = ("PATH", "HOME", "USER", "TMPDIR", "XDG_CONFIG_HOME", "SYSTEMROOT")

# The bridge's classification sets (gemini-mcp-bridge assess), plus other ecosystems' lockfiles.
CODE_EXTENSIONS = frozenset(
    {".c", ".cc", ".cpp", ".cs", ".css", ".dart", ".go", ".h", ".hpp", ".html", ".java", ".js", ".jsx", ".kt", ".mjs"}
    | {".php", ".py", ".rb", ".rs", ".scss", ".sh", ".sql", ".swift", ".tsx", ".ts", ".vue"}
)
GENERATED_NAMES = frozenset(
    {"bun.lockb", "Cargo.lock", "composer.lock", "package-lock.json", "pnpm-lock.yaml", "yarn.lock"}
    | {"poetry.lock", "uv.lock", "Pipfile.lock", "Gemfile.lock", "go.sum", "flake.lock"}
)
GENERATED_SUFFIXES = (".min.js", ".min.css", ".snap")


class GitError(RelayError):
    """Git could not answer; what the review tools catch. Git itself failing is not the caller's doing."""

    stderr: str = ""  # git's own stderr (its tail), for a caller that reads more than the last line


class GitRequestError(GitError, InputError):
    """The caller's request cannot be answered by git: an unknown base ref, a diff too large to take in time."""


class NotARepository(GitRequestError):
    """The directory is not inside a git working tree."""


class GitUnavailable(GitError):
    """git itself cannot be run (not installed, not on PATH): the machine's setup, not the caller's request."""


@dataclass(frozen=True)
class DiffSpec:
    """What is reviewed: uncommitted work against HEAD (`base` None), or `base...HEAD`."""

    base: str | None = None

    @property
    def revisions(self) -> tuple[str, ...]:
        return (f"{self.base}...HEAD",) if self.base else ("HEAD",)

    def describe(self) -> str:
        return f"{self.base}...HEAD" if self.base else "uncommitted changes (staged and unstaged, against HEAD)"

    def command(self, context: int = 5) -> str:
        """The equivalent shell command, for prompts and messages."""
        return f"git diff {self.revisions[0]} -U{context}"


@dataclass(frozen=True)
class FileChange:
    """One numstat row; counts are None for a binary file, `old_path` is set for a rename or copy."""

    path: str
    insertions: int | None
    deletions: int | None
    old_path: str | None = None

    @property
    def binary(self) -> bool:
        return self.insertions is None


@dataclass(frozen=True)
class DiffStat:
    files: int
    insertions: int
    deletions: int
    binary: int = 0


def validate_ref(base: str) -> str:
    """A branch, tag or commit name safe on argv: `^[\\w./-]+$`, no leading `-`, no `..` range."""
    if not REF.fullmatch(base) or base.startswith("-") or ".." in base:
        raise InputError(
            f"base {base!r} is not a plain git ref: use a branch, tag or commit such as 'main' or 'origin/develop' "
            "(letters, digits, '_', '.', '/', '-'; no leading '-', no '..' ranges or revision syntax like HEAD~2)"
        )
    return base


def diff_spec(*, uncommitted: bool, base: str | None) -> DiffSpec:
    """`base` wins when given; otherwise uncommitted work, which must then be asked for."""
    if base is not None:
        return DiffSpec(validate_ref(base))
    if not uncommitted:
        raise InputError("Nothing to diff: set uncommitted to true, or pass base (e.g. 'main') to review base...HEAD")
    return DiffSpec()


def git_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = {key: environ[key] for key in _ENV_KEYS if key in environ}
    # Stable English messages; no prompts; no index.lock from an opportunistic index refresh.
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return env


async def run_git(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    *,
    limit: int | None = None,
    timeout: float = GIT_TIMEOUT,
    stdin: bytes | None = None,
) -> tuple[bytes, bool]:
    """stdout of `git <args>` (at most `limit` bytes; the flag says whether more was cut off), `stdin` fed once.

    Raises:
        GitError: git is missing, timed out, or exited non-zero (with its own message).
    """
    out = bytearray()
    cut = False

    def on_stdout(chunk: bytes) -> None:
        nonlocal cut
        room = len(chunk) if limit is None else max(limit - len(out), 0)
        out.extend(chunk[:room])
        cut = cut or room < len(chunk)

    spec = ProcessSpec(argv=["git", *args], env=env, cwd=cwd, stdin=stdin)
    try:
        with anyio.fail_after(timeout):
            done = await run_process(spec, on_stdout, grace=GIT_GRACE)
    except SpawnError as exc:
        raise GitUnavailable(f"git could not be run ({exc.strerror}); the review tools need git on PATH") from exc
    except TimeoutError:
        slow = f"git {args[0]} took longer than {int(timeout)}s in {cwd}; narrow the diff with base"
        raise GitRequestError(slow) from None
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()
        detail = message[-1] if message else f"exit {done.returncode}"
        if _NOT_A_REPO.search(done.stderr):
            raise NotARepository(f"{cwd} is not inside a git working tree; the review tools need a git repository")
        failed = GitError(f"git {args[0]} failed: {detail.removeprefix('fatal: ')}")
        failed.stderr = done.stderr
        raise failed
    return bytes(out), cut


async def verify_ref(root: Path, base: str, env: Mapping[str, str]) -> None:
    try:
        await run_git(["rev-parse", "--verify", "--quiet", f"{validate_ref(base)}^{{commit}}"], root, env)
    except (NotARepository, GitUnavailable):
        raise
    except GitError:
        raise GitRequestError(f"base {base!r} is not a branch, tag or commit in this repository") from None


async def _revisions(root: Path, spec: DiffSpec, env: Mapping[str, str], run: _Runner) -> tuple[bytes, bool]:
    """Run a diff against the spec's revisions; a repository without commits diffs against the empty tree."""
    if spec.base is not None:
        await verify_ref(root, spec.base, env)
    try:
        return await run(spec.revisions)
    except GitError as exc:
        if spec.base is not None or not _NO_HEAD.search(str(exc)):
            raise
    empty, _ = await run_git(["hash-object", "-t", "tree", "--stdin"], root, env)
    return await run((empty.decode().strip(),))


class _Runner:
    def __init__(self, root: Path, env: Mapping[str, str], args: Sequence[str], limit: int | None = None) -> None:
        self._root, self._env, self._args, self._limit = root, env, tuple(args), limit

    async def __call__(self, revisions: Sequence[str]) -> tuple[bytes, bool]:
        return await run_git(["diff", *self._args, *revisions, "--"], self._root, self._env, limit=self._limit)


async def numstat(root: Path, spec: DiffSpec, env: Mapping[str, str]) -> list[FileChange]:
    raw, _ = await _revisions(root, spec, env, _Runner(root, env, ("--numstat", "-z", *_DIFF_FLAGS)))
    return parse_numstat(raw)


async def read_diff(
    root: Path, spec: DiffSpec, env: Mapping[str, str], *, context: int = 5, max_bytes: int
) -> tuple[str, bool]:
    """The unified diff text (at most `max_bytes`, cut at a line end) and whether it was cut."""
    runner = _Runner(root, env, (f"-U{context}", *_DIFF_FLAGS), limit=max_bytes)
    raw, cut = await _revisions(root, spec, env, runner)
    if cut:
        raw = raw[: raw.rfind(b"\n") + 1]
    return raw.decode("utf-8", errors="replace"), cut


async def changes_and_untracked(
    root: Path, spec: DiffSpec, env: Mapping[str, str]
) -> tuple[list[FileChange], list[str] | GitError]:
    """numstat, and (for uncommitted work) the untracked files, with the two git calls overlapping.

    Raises:
        GitError: from numstat; an untracked-listing failure is returned instead (it only adds a remark).
    """
    changes: list[FileChange] | GitError = []
    untracked: list[str] | GitError = []

    # Each task keeps its own error: raised inside a task group it would arrive wrapped in an ExceptionGroup.
    async def run_numstat() -> None:
        nonlocal changes
        try:
            changes = await numstat(root, spec, env)
        except GitError as exc:
            changes = exc

    async def run_untracked() -> None:
        nonlocal untracked
        try:
            untracked = await untracked_files(root, env)
        except GitError as exc:
            untracked = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_numstat)
        if spec.base is None:
            tg.start_soon(run_untracked)
    if isinstance(changes, GitError):
        raise changes
    return changes, untracked


async def untracked_files(root: Path, env: Mapping[str, str]) -> list[str]:
    raw, _ = await run_git(["ls-files", "--others", "--exclude-standard", "-z", "--", "."], root, env)
    return [_decode(p) for p in raw.split(b"\0") if p]


def parse_numstat(raw: bytes) -> list[FileChange]:
    """`git diff --numstat -z`: `ins\\tdel\\tpath\\0`, or `ins\\tdel\\t\\0old\\0new\\0` for a rename; `-` for binary."""
    tokens = raw.split(b"\0")
    changes: list[FileChange] = []
    i = 0
    while i < len(tokens):
        fields = tokens[i].split(b"\t", 2)
        i += 1
        if len(fields) != 3:
            continue
        ins, dels, path = fields
        old: str | None = None
        if not path:  # a rename or copy: the old and new paths follow as their own tokens
            if i + 1 >= len(tokens):
                break
            old, path = _decode(tokens[i]), tokens[i + 1]
            i += 2
        changes.append(FileChange(_decode(path), _count(ins), _count(dels), old))
    return changes


def summarize(changes: Sequence[FileChange]) -> DiffStat:
    return DiffStat(
        files=len(changes),
        insertions=sum(c.insertions or 0 for c in changes),
        deletions=sum(c.deletions or 0 for c in changes),
        binary=sum(1 for c in changes if c.binary),
    )


def classify_complexity(stat: DiffStat, paths: Sequence[str]) -> Complexity:
    """complex: 9+ files or 3+ top-level directories; moderate: 3+ files or over 100 changed lines; else trivial."""
    top_level = {p.split("/", 1)[0] if "/" in p else "." for p in paths}
    if stat.files >= 9 or len(top_level) >= 3:
        return "complex"
    if stat.files >= 3 or stat.insertions + stat.deletions > 100:
        return "moderate"
    return "trivial"


def classify_kind(paths: Sequence[str]) -> DiffKind:
    if not paths:
        return "empty"
    if all(_generated(p) for p in paths):
        return "generated"
    code = sum(1 for p in paths if _extension(p) in CODE_EXTENSIONS)
    if code == len(paths):
        return "code"
    return "non-code" if code == 0 else "mixed"


def _generated(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name in GENERATED_NAMES or path.endswith(GENERATED_SUFFIXES)


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _count(raw: bytes) -> int | None:
    return None if raw == b"-" else int(raw or b"0")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")

"""git_diff and assess against real git repositories: stats, kinds, renames, binaries, refs, odd repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemini_relay.content.diff_assessment import assess_changes, suggestions
from gemini_relay.content.git_diff import (
    DiffSpec,
    DiffStat,
    FileChange,
    GitError,
    GitUnavailable,
    changes_and_untracked,
    classify_complexity,
    classify_kind,
    diff_spec,
    git_env,
    numstat,
    parse_numstat,
    read_diff,
    validate_ref,
)
from gemini_relay.errors import InputError
from tests.git_repo import GitRepo

pytestmark = pytest.mark.anyio

ENV = git_env(os.environ)
UNCOMMITTED = DiffSpec()


def lines(n: int, word: str = "line") -> str:
    return "".join(f"{word} {i}\n" for i in range(n))


async def assess(root: Path, spec: DiffSpec = UNCOMMITTED) -> dict[str, object]:
    changes, untracked = await changes_and_untracked(root, spec, ENV)
    assert isinstance(untracked, list)
    return assess_changes(spec, root, changes, untracked).as_meta()


async def test_a_code_only_change_is_code_with_its_line_counts(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"src/app.py": lines(10), "src/util.py": lines(3)})
    repo.write({"src/app.py": lines(10) + lines(5, "added"), "src/util.py": "line 0\n"})
    meta = await assess(tmp_path)
    assert meta["diffStat"] == {"files": 2, "insertions": 5, "deletions": 2, "binaryFiles": 0}
    assert meta["changedFiles"] == ["src/app.py", "src/util.py"]
    assert meta["diffKind"] == "code"
    assert meta["complexity"] == "trivial"


async def test_code_and_docs_together_are_mixed(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"app.ts": "a\n", "README.md": "r\n"})
    repo.write({"app.ts": "b\n", "README.md": "s\n"})
    meta = await assess(tmp_path)
    assert meta["diffKind"] == "mixed"
    assert "focused or deep" in str(meta["guidance"])


async def test_lockfiles_and_minified_bundles_alone_are_generated(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"package-lock.json": "{}\n", "web/yarn.lock": "a\n", "dist/app.min.js": "x\n"})
    repo.write({"package-lock.json": '{"v": 2}\n', "web/yarn.lock": "b\n", "dist/app.min.js": "y\n"})
    meta = await assess(tmp_path)
    assert meta["diffKind"] == "generated"
    assert str(meta["guidance"]).startswith("Only generated files changed")


async def test_docs_and_config_alone_are_non_code(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"docs/guide.md": "a\n", "pyproject.toml": "[x]\n"})
    repo.write({"docs/guide.md": "b\n", "pyproject.toml": "[y]\n"})
    assert (await assess(tmp_path))["diffKind"] == "non-code"


async def test_a_clean_tree_is_empty_and_says_so(tmp_path: Path) -> None:
    GitRepo.create(tmp_path, {"a.py": "a\n"})
    changes = await numstat(tmp_path, UNCOMMITTED, ENV)
    assessment = assess_changes(UNCOMMITTED, tmp_path, changes)
    assert assessment.kind == "empty" and assessment.stat == DiffStat(0, 0, 0)
    assert "No diff detected" in assessment.render()
    assert "Suggested depths" not in assessment.render()


async def test_a_rename_is_one_file_under_its_new_name_with_the_old_one_recorded(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"old/name.py": lines(20)})
    (tmp_path / "new").mkdir()
    repo.git("mv", "old/name.py", "new/name.py")
    changes = await numstat(tmp_path, UNCOMMITTED, ENV)
    assert changes == [FileChange("new/name.py", 0, 0, "old/name.py")]
    meta = await assess(tmp_path)
    assert meta["renamedFrom"] == {"new/name.py": "old/name.py"}
    assert "new/name.py (renamed from old/name.py) (+0 -0)" in assess_changes(UNCOMMITTED, tmp_path, changes).render()


async def test_a_binary_file_counts_as_a_file_without_lines(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"logo.png": b"\x89PNG\x00\x01", "a.py": "a\n"})
    repo.write({"logo.png": b"\x89PNG\x00\x02\x03", "a.py": "b\n"})
    changes = await numstat(tmp_path, UNCOMMITTED, ENV)
    assert FileChange("logo.png", None, None) in changes
    meta = await assess(tmp_path)
    assert meta["diffStat"] == {"files": 2, "insertions": 1, "deletions": 1, "binaryFiles": 1}


async def test_staged_and_unstaged_edits_of_one_file_are_counted_once(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"a.py": "one\n"})
    repo.write({"a.py": "one\ntwo\n"})
    repo.git("add", "a.py")
    repo.write({"a.py": "one\ntwo\nthree\n"})
    assert await numstat(tmp_path, UNCOMMITTED, ENV) == [FileChange("a.py", 2, 0)]


async def test_untracked_files_are_listed_apart_from_the_diff(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"a.py": "a\n", ".gitignore": "build/\n"})
    repo.write({"new.py": "n\n", "build/out.o": "x"})
    meta = await assess(tmp_path)
    assert meta["changedFiles"] == [] and meta["untrackedFiles"] == ["new.py"]


async def test_paths_with_spaces_and_non_ascii_names_survive(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"my dir/café.py": "a\n"})
    repo.write({"my dir/café.py": "b\n"})
    assert [c.path for c in await numstat(tmp_path, UNCOMMITTED, ENV)] == ["my dir/café.py"]


async def test_a_base_diff_covers_the_commits_since_the_merge_base_only(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"a.py": "a\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.write({"b.py": "b\n"})
    repo.commit("feature work")
    repo.git("checkout", "-q", "main")
    repo.write({"main_only.py": "m\n"})
    repo.commit("main moves on")
    repo.git("checkout", "-q", "feature")
    repo.write({"a.py": "uncommitted\n"})  # not part of base...HEAD
    changes = await numstat(tmp_path, DiffSpec("main"), ENV)
    assert [c.path for c in changes] == ["b.py"]
    diff, cut = await read_diff(tmp_path, DiffSpec("main"), ENV, max_bytes=100_000)
    assert "+b" in diff and "main_only" not in diff and not cut


async def test_an_unknown_base_is_refused_by_name(tmp_path: Path) -> None:
    GitRepo.create(tmp_path, {"a.py": "a\n"})
    with pytest.raises(GitError, match="base 'nope' is not a branch, tag or commit"):
        await numstat(tmp_path, DiffSpec("nope"), ENV)


@pytest.mark.parametrize("ref", ["-x", "--output=/tmp/x", "a..b", "main~1", "main^", "a b", "$(id)", "a;b", ""])
def test_a_ref_that_is_not_a_plain_name_is_refused_before_git_runs(ref: str) -> None:
    with pytest.raises(InputError, match="is not a plain git ref"):
        validate_ref(ref)


def test_neither_uncommitted_nor_base_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="set uncommitted to true, or pass base"):
        diff_spec(uncommitted=False, base=None)
    assert diff_spec(uncommitted=True, base="origin/main") == DiffSpec("origin/main")


async def test_a_directory_outside_any_repository_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="is not inside a git working tree"):
        await numstat(tmp_path, UNCOMMITTED, ENV)


async def test_a_repository_without_commits_diffs_its_staged_files(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path)
    repo.write({"first.py": "x\ny\n"})
    repo.git("add", "first.py")
    assert await numstat(tmp_path, UNCOMMITTED, ENV) == [FileChange("first.py", 2, 0)]


async def test_a_project_root_below_the_repository_root_sees_only_its_own_files(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"svc/api/a.py": "a\n", "other/b.py": "b\n"})
    repo.write({"svc/api/a.py": "A\n", "other/b.py": "B\n"})
    changes = await numstat(tmp_path / "svc", UNCOMMITTED, ENV)
    assert [c.path for c in changes] == ["api/a.py"]


async def test_a_diff_over_the_byte_limit_is_cut_at_a_line_end(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path, {"big.txt": lines(2000)})
    repo.write({"big.txt": lines(2000, "changed")})
    diff, cut = await read_diff(tmp_path, UNCOMMITTED, ENV, max_bytes=5000)
    assert cut and len(diff.encode()) <= 5000 and diff.endswith("\n")


def test_parse_numstat_reads_plain_binary_and_renamed_rows() -> None:
    raw = b"3\t1\tsrc/a.py\0-\t-\timg.png\0" + b"0\t0\t\0old.py\0new.py\0"
    assert parse_numstat(raw) == [
        FileChange("src/a.py", 3, 1),
        FileChange("img.png", None, None),
        FileChange("new.py", 0, 0, "old.py"),
    ]


@pytest.mark.parametrize(
    ("files", "insertions", "paths", "expected"),
    [
        (1, 10, ["a.py"], "trivial"),
        (2, 101, ["a.py", "b.py"], "moderate"),
        (3, 3, ["a.py", "b.py", "c.py"], "moderate"),
        (9, 9, [f"{i}.py" for i in range(9)], "complex"),
        (3, 3, ["a/x.py", "b/y.py", "c/z.py"], "complex"),
    ],
)
def test_complexity_follows_file_count_line_count_and_spread(
    files: int, insertions: int, paths: list[str], expected: str
) -> None:
    assert classify_complexity(DiffStat(files, insertions, 0), paths) == expected


def test_kind_is_empty_code_mixed_non_code_or_generated() -> None:
    assert classify_kind([]) == "empty"
    assert classify_kind(["a.py", "b.RS"]) == "code"
    assert classify_kind(["a.py", "notes.md"]) == "mixed"
    assert classify_kind(["Makefile", "x.yaml"]) == "non-code"
    assert classify_kind(["Cargo.lock", "ui/snap/__snapshots__/a.snap"]) == "generated"


def test_estimates_grow_with_the_file_count_up_to_their_caps() -> None:
    small = {s.depth: s.estimated_seconds for s in suggestions(DiffStat(5, 0, 0), "code")}
    huge = {s.depth: s.estimated_seconds for s in suggestions(DiffStat(500, 0, 0), "code")}
    assert small == {"scan": 30, "focused": 80, "deep": 185}
    assert huge == {"scan": 30, "focused": 240, "deep": 1200}


async def test_a_missing_git_binary_is_named_as_such(tmp_path: Path) -> None:
    GitRepo.create(tmp_path, {"a.py": "a\n"})
    with pytest.raises(GitUnavailable, match="the review tools need git on PATH"):
        await numstat(tmp_path, UNCOMMITTED, git_env({"PATH": str(tmp_path / "empty")}))

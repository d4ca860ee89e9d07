"""The write guardrail against real git working trees: what counts as a write, and what is ignored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemini_relay.content.git_diff import git_env
from gemini_relay.content.guardrail import Snapshot, WriteCheck, compare, take_snapshot
from tests.git_repo import GitRepo

pytestmark = pytest.mark.anyio

ENV = git_env(os.environ)


async def snap(root: Path) -> Snapshot:
    found = await take_snapshot(root, ENV)
    assert found is not None
    return found


async def repo(tmp_path: Path) -> GitRepo:
    made = GitRepo.create(tmp_path, {"a.py": "a\n", "b.py": "b\n", ".gitignore": "build/\n"})
    made.write({"dirty.py": "untracked already\n"})
    return made


async def test_an_untouched_tree_is_clean(tmp_path: Path) -> None:
    await repo(tmp_path)
    assert compare(await snap(tmp_path), await snap(tmp_path)).clean


async def test_an_edit_a_new_file_and_a_deletion_are_all_named(tmp_path: Path) -> None:
    await repo(tmp_path)
    before = await snap(tmp_path)
    (tmp_path / "a.py").write_text("a changed\n", encoding="utf-8")
    (tmp_path / "new.txt").write_text("n\n", encoding="utf-8")
    (tmp_path / "b.py").unlink()
    check = compare(before, await snap(tmp_path))
    assert check.changed == ("a.py", "b.py", "new.txt")
    assert check.describe() == "The agent changed files in the working tree during this run: a.py, b.py, new.txt"


async def test_a_further_edit_to_an_already_dirty_file_is_caught(tmp_path: Path) -> None:
    made = await repo(tmp_path)
    made.write({"a.py": "dirty before the run\n"})
    before = await snap(tmp_path)
    stat = (tmp_path / "a.py").stat()
    (tmp_path / "a.py").write_text("dirty before the run, and more\n", encoding="utf-8")
    os.utime(tmp_path / "a.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: the size still differs
    assert compare(before, await snap(tmp_path)).changed == ("a.py",)


async def test_an_edit_to_a_preexisting_untracked_file_is_caught(tmp_path: Path) -> None:
    await repo(tmp_path)
    before = await snap(tmp_path)
    (tmp_path / "dirty.py").write_text("changed by the agent\n", encoding="utf-8")
    assert compare(before, await snap(tmp_path)).changed == ("dirty.py",)


async def test_ignored_files_are_not_watched(tmp_path: Path) -> None:
    await repo(tmp_path)
    before = await snap(tmp_path)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.o").write_bytes(b"\0")
    assert compare(before, await snap(tmp_path)).clean


async def test_a_directory_outside_git_has_no_snapshot(tmp_path: Path) -> None:
    assert await take_snapshot(tmp_path, ENV) is None


def test_a_failed_check_is_never_clean_and_says_why() -> None:
    check = WriteCheck(error="git status failed: index corrupt")
    assert not check.clean
    expected = "gemini-relay could not check whether the agent wrote files (git status failed: index corrupt)"
    assert check.describe() == expected


def test_long_lists_are_cut_with_a_count() -> None:
    check = WriteCheck(tuple(f"f{i:02d}" for i in range(25)))
    assert check.describe().endswith("f19 and 5 more")


async def test_without_git_on_path_there_is_no_snapshot_rather_than_a_failure(tmp_path: Path) -> None:
    await repo(tmp_path)
    assert await take_snapshot(tmp_path, git_env({"PATH": str(tmp_path / "empty")})) is None

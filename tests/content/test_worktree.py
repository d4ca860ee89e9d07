"""Worktrees of isolated runs on a real repository: made under the state dir from a clean HEAD, kept while a job of
the store ran in them, removed (worktree, branch, record) when that job expires or their creator died without one."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from gemini_relay.content.worktree import Worktrees
from gemini_relay.content.worktree_reap import reap
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import InputError
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.maintenance import sweep
from tests.git_repo import GitRepo
from tests.jobs.store_conformance import full_meta, full_result
from tests.supervise.test_liveness import gone_process

pytestmark = pytest.mark.anyio
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
TTL = 3600.0


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo.create(tmp_path / "project", {"app.py": "x = 1\n", "pkg/mod.py": "y = 2\n"})


def branches(repo: GitRepo) -> str:
    return repo.git("branch", "--list", "gemini-relay/*")


async def test_a_worktree_is_made_under_the_state_dir_and_a_subdirectory_project_works_in_its_place(
    repo: GitRepo, tmp_path: Path
) -> None:
    worktrees = Worktrees(tmp_path / "state", ENV)
    made = await worktrees.create(repo.root / "pkg")
    assert made.path.parent == tmp_path / "state" / "worktrees"
    assert made.cwd == made.path / "pkg" and (made.cwd / "mod.py").read_text(encoding="utf-8") == "y = 2\n"
    assert made.branch in branches(repo)
    assert worktrees.find(made.branch) == made


async def test_a_finished_jobs_worktree_is_kept_until_the_sweep_expires_the_job(repo: GitRepo, tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    worktrees = Worktrees(tmp_path / "state", ENV)
    made = await worktrees.create(repo.root)
    meta = full_meta("job1")
    store.create(replace(meta, spec=replace(meta.spec, cwd=made.cwd)))
    store.write_result("job1", full_result(RunState.DONE))
    assert await reap(worktrees, store, TTL) == []
    ended = store.finished_at("job1")
    assert ended is not None
    sweep(store, TTL, now=ended + TTL + 1)
    assert await reap(worktrees, store, TTL, now=ended + TTL + 1) == [made.branch]
    assert not made.path.exists() and branches(repo) == "" and worktrees.records() == []
    assert repo.git("worktree", "list").count("\n") == 1


async def test_a_worktree_with_no_job_is_kept_while_its_creator_lives_and_reaped_once_it_died(
    repo: GitRepo, tmp_path: Path
) -> None:
    worktrees = Worktrees(tmp_path / "state", ENV)
    made = await worktrees.create(repo.root)
    assert await reap(worktrees, None, TTL) == []  # being set up: its job is not registered yet
    orphan = replace(made, owner=gone_process())
    (worktrees.root / f"{made.name}.json").write_text(json.dumps(orphan.to_json()), encoding="utf-8")
    assert await reap(worktrees, None, TTL) == [made.branch]
    assert not made.path.exists() and branches(repo) == ""


async def test_a_worktree_whose_repository_is_gone_is_still_removed(repo: GitRepo, tmp_path: Path) -> None:
    worktrees = Worktrees(tmp_path / "state", ENV)
    made = await worktrees.create(repo.root)
    await worktrees.discard(replace(made, repo=tmp_path / "deleted-project"))
    assert not made.path.exists() and worktrees.records() == []


async def test_discard_removes_nothing_outside_the_state_dirs_worktrees(repo: GitRepo, tmp_path: Path) -> None:
    worktrees = Worktrees(tmp_path / "state", ENV)
    made = await worktrees.create(repo.root)
    with pytest.raises(InputError, match="is not a worktree of this relay"):
        await worktrees.discard(replace(made, path=repo.root))
    assert (repo.root / "app.py").exists()


def test_a_branch_the_relay_did_not_make_is_refused(tmp_path: Path) -> None:
    worktrees = Worktrees(tmp_path / "state", ENV)
    for branch in ("main", "gemini-relay/../../etc", "gemini-relay/wt-0123456789ab"):
        with pytest.raises(InputError, match="No worktree for branch"):
            worktrees.find(branch)


async def test_a_repository_without_a_commit_is_refused(tmp_path: Path) -> None:
    GitRepo.create(tmp_path / "empty")
    with pytest.raises(InputError, match="has no commit yet"):
        await Worktrees(tmp_path / "state", ENV).create(tmp_path / "empty")

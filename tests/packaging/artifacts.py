"""The published artifacts, built as a release builds them: the sdist and the wheel (`python -m build` on a clean
copy of the checkout's files, the wheel made from the sdist) and the MCP Bundle (`mcpb pack` of mcpb/ with that wheel
and a uv.lock). uv runs offline here: scripts/test fills uv's cache with the dependencies before the suite."""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import pytest
from uv import find_uv_bin

from gemini_relay import __version__
from tests.harness import REPO
from tests.real_clients import MCPB, require

MCPB_SOURCE = REPO / "mcpb"  # the bundle's files but the wheel and the lock, which packing adds
WHEEL_NAME = f"gemini_relay-{__version__}-py3-none-any.whl"
SDIST_NAME = f"gemini_relay-{__version__}.tar.gz"
BUNDLE_NAME = f"gemini-relay-{__version__}.mcpb"
# Folders no release artifact takes files from: copying them would only slow the build's copy down.
NOT_PACKAGED = ("tests/", "bench/", "docs/", "scripts/", ".ci/", "mcpb/")
STEP_TIMEOUT = 240.0  # a bound for one build step on a loaded 2-core machine (a quiet one takes a few seconds)
T = TypeVar("T")
FILL_CACHE = "scripts/test fills it (uv pip compile and uv pip install of pyproject.toml's dependencies)"


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path
    source: Path  # the clean copy the sdist was built from: the checkout's files a release would take


def _step(argv: list[str | Path], cwd: Path | None, env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        start_new_session=True,
        check=False,
    )


def _failed(argv: list[str | Path], done: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(str(a) for a in argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


def run(argv: list[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run one build step to completion; its output is the failure message when it fails."""
    done = _step(argv, cwd, env)
    if done.returncode != 0:
        pytest.fail(_failed(argv, done))
    return done.stdout


def released_files() -> list[str]:
    """The checkout's files a release can take (tracked, or new and not ignored), relative to the repo."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO)
    names = sorted({name for name in listed.split("\0") if name})
    return [n for n in names if not n.startswith(NOT_PACKAGED) and (REPO / n).is_file()]


def package_files() -> set[str]:
    """Every file of the gemini_relay package in the checkout, as the wheel names them."""
    return {name.removeprefix("src/") for name in released_files() if name.startswith("src/gemini_relay/")}


def build_dist(out: Path) -> Dist:
    """The sdist, then the wheel from the sdist (`python -m build`'s default: a file the sdist misses fails the
    wheel), without build isolation: the test venv's setuptools builds, so nothing is downloaded."""
    source = out / "source"
    for name in released_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    dist = out / "dist"
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, source])
    return Dist(dist / SDIST_NAME, dist / WHEEL_NAME, source)


def uv_cache() -> Path:
    """The user's uv cache (a test's HOME is its own, so the cache is named explicitly)."""
    return Path(os.environ.get("UV_CACHE_DIR") or run([find_uv_bin(), "cache", "dir"]).strip())


def offline_env(home: Path) -> dict[str, str]:
    """A fresh user's environment for uv and the server: its own HOME, uv offline on the warm cache, the test
    venv's base Python (no download), only `uv`/`uvx` and the system's commands on PATH, no relay host or warm CLI
    left behind by a test."""
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    uv = Path(find_uv_bin())
    for tool in ("uv", "uvx"):
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(uv.with_name(tool))
    base_python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return {
        "HOME": str(home),
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "UV_CACHE_DIR": str(uv_cache()),
        "UV_OFFLINE": "1",
        "UV_PYTHON": str(base_python),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",  # the machine's or the user's uv.toml is not the artifact's
        "GEMINI_RELAY_HOST": "off",
        "GEMINI_RELAY_WARM": "off",
    }


def run_offline(argv: list[str | Path], env: dict[str, str], cwd: Path) -> str:
    """Run a uv step offline, to its output; a cache that lacks a dependency skips (fails under scripts/test) saying
    how to fill it, any other failure fails."""
    done = _step(argv, cwd, env)
    if done.returncode == 0:
        return done.stdout
    if "offline" in done.stderr.lower() or "network connectivity is disabled" in done.stderr.lower():
        message = f"uv's cache at {env['UV_CACHE_DIR']} lacks a dependency ({FILL_CACHE}):\n{done.stderr[-2000:]}"
        if os.environ.get("GEMINI_RELAY_REQUIRE_CLIENTS"):
            pytest.fail(message)
        pytest.skip(message)
    pytest.fail(_failed(argv, done))


def pack_bundle(dist: Dist, out: Path, env: dict[str, str]) -> Path:
    """mcpb/ plus the wheel and its uv.lock, packed with the official CLI."""
    stage = out / "bundle"
    shutil.copytree(MCPB_SOURCE, stage, ignore=shutil.ignore_patterns("__pycache__", ".venv", "uv.lock"))
    shutil.copy2(dist.wheel, stage / WHEEL_NAME)
    run_offline([find_uv_bin(), "lock", "--directory", stage], env, out)
    bundle = out / BUNDLE_NAME
    run([require(MCPB, "@anthropic-ai/mcpb"), "pack", stage, bundle])
    return bundle


def once(root: Path, name: str, make: Callable[[Path], T]) -> T:
    """`make(root/packaging/name)` once per test session: pytest-xdist runs a session fixture once per worker, so the
    first worker here makes it and the others, waiting on the lock, get its result (or its skip or failure) back
    instead of building again."""
    shared = root / "packaging"
    shared.mkdir(parents=True, exist_ok=True)
    record = shared / f"{name}.pickle"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not record.exists():
            try:
                outcome: tuple[str, object] = ("made", make(shared / name))
            except pytest.skip.Exception as skipped:
                outcome = ("skip", str(skipped))
            except BaseException as error:  # a failure is replayed to the other workers, then raised here
                record.write_bytes(pickle.dumps(("fail", f"{type(error).__name__}: {error}")))
                raise
            record.write_bytes(pickle.dumps(outcome))
        kind, value = pickle.loads(record.read_bytes())
    if kind == "skip":
        pytest.skip(str(value))
    if kind == "fail":
        pytest.fail(f"building {name} failed in another worker: {value}")
    return cast(T, value)


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where one session's workers share the artifacts: the session's basetemp under xdist (its parent holds each
    worker's basetemp), else this process's own."""
    basetemp = tmp_path_factory.getbasetemp()
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp

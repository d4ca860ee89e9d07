"""Binary discovery, the --help flag parser on the real 0.61.0 help text, and the probe cache (real scripts)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from gemini_relay.backends.probe import ProbeCache, ProbeResult, locate, parse_flags, run_probe
from tests.executables import shell_script

HELP = Path(__file__).resolve().parents[1] / "data" / "streams" / "gemini-cli-0.61.0-help.txt"
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
BOUND = 10.0


def counting_cli(tmp_path: Path, body: str = 'echo "Usage: fake [--model] [--yolo]"\n') -> tuple[Path, Path]:
    """A fake CLI that appends one line per invocation to a count file, then runs `body`."""
    count = tmp_path / "invocations.txt"
    binary = shell_script(tmp_path / "bin" / "fake-cli", f'echo "$1" >> "{count}"\n' + body)
    return binary, count


def invocations(count: Path) -> list[str]:
    return count.read_text(encoding="utf-8").splitlines() if count.exists() else []


# --- locate ---------------------------------------------------------------------------------------------------


def test_a_name_is_found_on_the_given_path_and_resolved(tmp_path: Path) -> None:
    real = shell_script(tmp_path / "real" / "gemini", "exit 0\n")
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    (link_dir / "gemini").symlink_to(real)
    assert locate(None, "gemini", {"PATH": str(link_dir)}) == real.resolve()


def test_a_configured_name_beats_the_default(tmp_path: Path) -> None:
    shell_script(tmp_path / "gemini", "exit 0\n")
    other = shell_script(tmp_path / "gemini-nightly", "exit 0\n")
    assert locate("gemini-nightly", "gemini", {"PATH": str(tmp_path)}) == other


def test_a_configured_path_is_used_directly(tmp_path: Path) -> None:
    binary = shell_script(tmp_path / "opt" / "gemini", "exit 0\n")
    assert locate(str(binary), "gemini", {"PATH": ""}) == binary


def test_a_missing_binary_is_none(tmp_path: Path) -> None:
    assert locate(None, "gemini", {"PATH": str(tmp_path)}) is None
    assert locate(str(tmp_path / "nope" / "gemini"), "gemini", {"PATH": str(tmp_path)}) is None


def test_a_file_that_is_not_executable_is_not_a_binary(tmp_path: Path) -> None:
    plain = tmp_path / "gemini"
    plain.write_text("#!/bin/sh\n", encoding="utf-8")
    plain.chmod(0o644)
    assert locate(None, "gemini", {"PATH": str(tmp_path)}) is None
    assert locate(str(plain), "gemini", {}) is None


def test_a_directory_is_not_a_binary(tmp_path: Path) -> None:
    (tmp_path / "gemini").mkdir()
    (tmp_path / "gemini").chmod(0o755)
    assert locate(str(tmp_path / "gemini"), "gemini", {}) is None
    assert locate(None, "gemini", {"PATH": str(tmp_path)}) is None


# --- parse_flags ----------------------------------------------------------------------------------------------


def test_every_long_option_of_the_real_help_text_is_found() -> None:
    assert parse_flags(HELP.read_text(encoding="utf-8")) == {
        "--accept-raw-output-risk",
        "--acp",
        "--admin-policy",
        "--allowed-mcp-server-names",
        "--allowed-tools",
        "--approval-mode",
        "--debug",
        "--delete-session",
        "--experimental-acp",
        "--extensions",
        "--help",
        "--include-directories",
        "--list-extensions",
        "--list-sessions",
        "--model",
        "--output-format",
        "--policy",
        "--prompt",
        "--prompt-interactive",
        "--raw-output",
        "--resume",
        "--sandbox",
        "--screen-reader",
        "--session-file",
        "--session-id",
        "--skip-trust",
        "--version",
        "--worktree",
        "--yolo",
    }


def test_short_options_choices_and_urls_are_not_flags() -> None:
    flags = parse_flags(HELP.read_text(encoding="utf-8"))
    assert not [f for f in flags if not f.startswith("--")]
    assert "--stream-json" not in flags
    assert not [f for f in flags if "http" in f or "youtube" in f]


def test_flag_like_text_inside_words_is_not_a_flag() -> None:
    assert parse_flags("a--b foo-bar--baz x --real-one, (--in-parens) -p/--prompt\n--Upper") == {
        "--real-one",
        "--in-parens",
        "--prompt",
    }


def test_empty_help_has_no_flags() -> None:
    assert parse_flags("") == frozenset()


# --- run_probe ------------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("script", "flag", "expected"),
    [
        pytest.param(
            'echo "0.61.0"\necho "a warning" >&2\n',
            "--version",
            ProbeResult(ok=True, text="0.61.0\na warning\n", returncode=0),
            id="a probe returns stdout then stderr",
        ),
        pytest.param(
            'echo "Unknown argument: --help" >&2\nexit 1\n',
            "--help",
            ProbeResult(ok=False, text="Unknown argument: --help\n", returncode=1),
            id="a failing probe is not ok and keeps its output",
        ),
    ],
)
async def test_a_probe_answers_with_its_exit_and_its_output(
    tmp_path: Path, script: str, flag: str, expected: ProbeResult
) -> None:
    binary = shell_script(tmp_path / "cli", script)
    with anyio.fail_after(BOUND):
        result = await run_probe([str(binary), flag], ENV, tmp_path)
    assert result == expected


@pytest.mark.anyio
async def test_a_probe_of_a_missing_binary_is_not_ok_and_does_not_raise(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        result = await run_probe([str(tmp_path / "missing"), "--help"], ENV, tmp_path)
    assert not result.ok
    assert result.returncode is None
    assert "cannot execute" in result.text


@pytest.mark.anyio
async def test_a_probe_that_never_answers_times_out(tmp_path: Path) -> None:
    binary = shell_script(tmp_path / "hang", 'read -r _ < "$0.fifo"\n')
    os.mkfifo(f"{binary}.fifo")  # nobody ever opens it for writing: the read blocks until the probe is stopped
    with anyio.fail_after(BOUND):
        result = await run_probe([str(binary), "--help"], ENV, tmp_path, timeout=0.3)
    assert result == ProbeResult(ok=False, text="hang --help did not answer within 0.3s", timed_out=True)


# --- ProbeCache -----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_successful_probe_is_run_once_and_cached(tmp_path: Path) -> None:
    binary, count = counting_cli(tmp_path)
    cache = ProbeCache()
    with anyio.fail_after(BOUND):
        first = await cache.get(binary, "--help", ENV, tmp_path)
        second = await cache.get(binary, "--help", ENV, tmp_path)
    assert first.ok
    assert second is first
    assert invocations(count) == ["--help"]


@pytest.mark.anyio
async def test_concurrent_callers_share_one_probe(tmp_path: Path) -> None:
    binary, count = counting_cli(tmp_path)
    cache = ProbeCache()
    results: list[ProbeResult] = []

    async def ask() -> None:
        results.append(await cache.get(binary, "--help", ENV, tmp_path))

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(ask)
    assert len(results) == 8
    assert all(r is results[0] for r in results)
    assert results[0].ok
    assert invocations(count) == ["--help"]


@pytest.mark.anyio
async def test_each_argument_is_probed_and_cached_separately(tmp_path: Path) -> None:
    binary, count = counting_cli(tmp_path)
    cache = ProbeCache()
    with anyio.fail_after(BOUND):
        for arg in ("--help", "--version", "--help", "--version"):
            await cache.get(binary, arg, ENV, tmp_path)
    assert invocations(count) == ["--help", "--version"]


@pytest.mark.anyio
async def test_a_failed_probe_is_not_cached_so_a_fixed_binary_is_picked_up(tmp_path: Path) -> None:
    # Fails on its first run, succeeds afterwards (as if it were installed or repaired in between).
    binary, count = counting_cli(tmp_path, f'[ "$(wc -l < "{tmp_path / "invocations.txt"}")" -gt 1 ] || exit 2\n')
    cache = ProbeCache()
    with anyio.fail_after(BOUND):
        first = await cache.get(binary, "--help", ENV, tmp_path)
        second = await cache.get(binary, "--help", ENV, tmp_path)
        third = await cache.get(binary, "--help", ENV, tmp_path)
    assert not first.ok
    assert first.returncode == 2
    assert second.ok
    assert third is second
    assert invocations(count) == ["--help", "--help"]


@pytest.mark.anyio
async def test_different_binaries_do_not_share_a_cache_entry(tmp_path: Path) -> None:
    one, count_one = counting_cli(tmp_path / "one")
    two, count_two = counting_cli(tmp_path / "two")
    cache = ProbeCache()
    with anyio.fail_after(BOUND):
        await cache.get(one, "--help", ENV, tmp_path)
        await cache.get(two, "--help", ENV, tmp_path)
    assert invocations(count_one) == ["--help"]
    assert invocations(count_two) == ["--help"]

"""AcpBackend.check: what the warm backend would refuse is refused before a job exists, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.config import Settings
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import BackendUnavailable, InputError


def backend(tmp_path: Path) -> AcpBackend:
    settings = Settings.from_env({"HOME": str(tmp_path), "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path)})
    return AcpBackend(settings, WarmPool())


def test_a_malformed_conversation_id_is_refused_by_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        backend(tmp_path).check(RunSpec(tool="gemini-ask", prompt="p", cwd=tmp_path, conversation_id="abc 🧵 x"))
    assert caught.value.field == "conversationId"


def test_a_model_that_reads_as_a_flag_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        backend(tmp_path).check(RunSpec(tool="gemini-ask", prompt="p", cwd=tmp_path, model="-x"))


def test_a_well_formed_request_passes(tmp_path: Path) -> None:
    backend(tmp_path).check(RunSpec(tool="gemini-ask", prompt="p", cwd=tmp_path, conversation_id="abc-123"))


def test_the_warm_cli_gets_a_v8_heap_limit_so_finished_sessions_are_collected(tmp_path: Path) -> None:
    assert backend(tmp_path).env()["NODE_OPTIONS"] == "--max-old-space-size=512"
    settings = Settings.from_env({"GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), "GEMINI_RELAY_WARM_HEAP_MB": "2048"})
    assert AcpBackend(settings, WarmPool()).env()["NODE_OPTIONS"] == "--max-old-space-size=2048"


def test_a_launch_is_resolved_once_and_again_when_its_binary_is_gone(tmp_path: Path) -> None:
    bin_a, bin_b = tmp_path / "a", tmp_path / "b"
    for folder in (bin_a, bin_b):
        folder.mkdir()
        (folder / "gemini").write_text("#!/bin/sh\n")
        (folder / "gemini").chmod(0o755)
    env = {"HOME": str(tmp_path), "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), "PATH": f"{bin_a}:{bin_b}"}
    warm = AcpBackend(Settings.from_env(env), WarmPool())
    first = warm.launch()
    assert warm.launch() is first and first.binary == str(bin_a / "gemini")  # no PATH search on a later ask
    (bin_a / "gemini").unlink()
    assert warm.launch().binary == str(bin_b / "gemini")  # the one on PATH now
    (bin_b / "gemini").unlink()
    with pytest.raises(BackendUnavailable):
        warm.launch()

"""AcpBackend.check: what the warm backend would refuse is refused before a job exists, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.config import Settings
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import InputError


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

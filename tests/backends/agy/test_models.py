"""agy's models and agents envelopes (agy.md §1.5-§1.6), the fallback list, and fetching them from the fake agy."""

from __future__ import annotations

import json

import anyio
import pytest

from gemini_relay.backends.agy.catalogs import (
    FALLBACK_MODELS,
    EnvelopeError,
    fetch_agents,
    fetch_models,
    parse_agents,
    parse_models,
)
from gemini_relay.backends.model_names import ModelInfo
from gemini_relay.errors import BackendUnavailable
from tests.backends.agy.conftest import AgyWorld
from tests.fakes.fake_agy import MODELS

# agy.md §1.5's envelope (agy 1.1.12+), with its elisions filled in.
MODELS_ENVELOPE = json.dumps(
    {
        "status": "SUCCESS",
        "response": "gemini-3.1-pro-high\tGemini 3.1 Pro (High)\n",
        "usage": {},
        "duration_seconds": 0.4,
        "num_turns": 0,
        "command": {
            "name": "models",
            "data": {"models": [{"id": "gemini-3.1-pro-high", "label": "Gemini 3.1 Pro (High)"}]},
        },
    }
)
# agy.md §1.6, measured on 1.1.22.
AGENTS_ENVELOPE = (
    '{"conversation_id":"","status":"SUCCESS","response":"","duration_seconds":0,"num_turns":0,"usage":{},'
    '"command":{"name":"agents","data":{"agents":[]}}}'
)


def envelope(command: str, data: object, status: str = "SUCCESS") -> str:
    return json.dumps({"status": status, "command": {"name": command, "data": data}})


def test_the_models_envelope_yields_ids_and_labels() -> None:
    assert parse_models(MODELS_ENVELOPE) == (ModelInfo("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"),)


def test_an_explicit_empty_catalog_is_valid() -> None:
    assert parse_models(envelope("models", {"models": []})) == ()


def test_a_model_without_a_label_is_labelled_by_its_id() -> None:
    assert parse_models(envelope("models", {"models": [{"id": "x-1"}, "y-2"]})) == (
        ModelInfo("x-1", "x-1"),
        ModelInfo("y-2", "y-2"),
    )


@pytest.mark.parametrize(
    "stdout",
    [
        envelope("models", {"models": None}),
        envelope("models", {}),
        envelope("agents", {"models": []}),
        envelope("models", {"models": []}, status="ERROR"),
        json.dumps({"status": "SUCCESS"}),
        "Fetching available models...",
        "[]",
    ],
)
def test_a_null_or_missing_catalog_another_command_or_a_failure_is_an_error(stdout: str) -> None:
    with pytest.raises(EnvelopeError):
        parse_models(stdout)


def test_the_measured_agents_envelope_and_bare_string_entries() -> None:
    assert parse_agents(AGENTS_ENVELOPE) == ()
    assert parse_agents(envelope("agents", {"agents": ["reviewer", "", 3, "planner"]})) == ("reviewer", "planner")


def test_the_fallback_list_holds_the_documented_ids() -> None:
    ids = {m.id for m in FALLBACK_MODELS}
    assert {"gemini-3.1-pro-high", "gemini-3.8-flash-high", "gemini-3.7-flash-medium", "claude-sonnet-4-6"} <= ids
    assert ModelInfo("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)") in FALLBACK_MODELS


@pytest.mark.anyio
async def test_the_live_catalog_comes_from_the_global_flag_before_the_subcommand(world: AgyWorld) -> None:
    with anyio.fail_after(20):
        catalog = await fetch_models(world.agy, world.backend().env(), world.project)
    assert catalog.live and catalog.notice is None
    assert catalog.models == tuple(ModelInfo(i, label) for i, label in MODELS)
    assert world.log()[-1]["argv"] == ["--output-format", "json", "models"]


@pytest.mark.anyio
async def test_a_failing_models_command_falls_back_with_a_notice_quoting_agy(world: AgyWorld) -> None:
    world.install(models_exit="1")
    with anyio.fail_after(20):
        catalog = await fetch_models(world.agy, world.backend().env(), world.project)
    assert not catalog.live and catalog.models == FALLBACK_MODELS
    assert catalog.notice is not None and "exited 1" in catalog.notice and "service unavailable" in catalog.notice


@pytest.mark.anyio
async def test_a_missing_binary_falls_back_too(world: AgyWorld) -> None:
    with anyio.fail_after(20):
        catalog = await fetch_models(world.base / "missing-agy", world.backend().env(), world.project)
    assert not catalog.live and catalog.notice is not None


@pytest.mark.anyio
async def test_the_backend_fetches_the_live_catalog_once(world: AgyWorld) -> None:
    backend = world.backend()
    with anyio.fail_after(20):
        first = await backend.models()
        second = await backend.models()
    assert first.live and second is first
    assert sum(1 for e in world.log() if e["argv"][-1:] == ["models"]) == 1


@pytest.mark.anyio
async def test_agents_list_global_and_project_agents(world: AgyWorld) -> None:
    for root, name in (
        (world.home / ".gemini" / "config" / "agents", "globalist"),
        (world.project / ".agents" / "agents", "local"),
    ):
        (root / name).mkdir(parents=True)
        (root / name / "agent.md").write_text(f"# {name}\n", encoding="utf-8")
    with anyio.fail_after(20):
        names = await fetch_agents(world.agy, world.backend().env(), world.project)
    assert names == ("globalist", "local")
    argv = world.log()[-1]["argv"]
    assert argv[-1] == "agents" and argv[argv.index("--add-dir") + 1] == str(world.project)


@pytest.mark.anyio
async def test_agents_failures_are_backend_unavailable(world: AgyWorld) -> None:
    with anyio.fail_after(20), pytest.raises(BackendUnavailable):
        await fetch_agents(world.base / "missing-agy", world.backend().env(), world.project)
    world.install(help="minimal")  # no --add-dir: the fake exits 2 like an old agy
    with anyio.fail_after(20), pytest.raises(BackendUnavailable, match="exited 2"):
        await world.backend().agents()

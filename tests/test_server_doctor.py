"""gemini-doctor proves readiness: for the real Gemini CLI against the emulator, doctor says ready exactly when the
next run works, and for each setup that breaks runs it names the one change that fixes it — the auth type the CLI
picks from its settings and environment (a set GEMINI_API_KEY is not enough), folder trust, a key the API refuses."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client

from tests.fakes.gemini_home import CLI_SETTINGS
from tests.harness import Relay, module_event_loop, shared_server
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


def settings_without(*path: str) -> dict[str, Any]:
    """The test home's settings.json with one key taken out (`"security", "folderTrust"`)."""
    settings: dict[str, Any] = json.loads(json.dumps(CLI_SETTINGS))
    node = settings
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return settings


@dataclass(frozen=True)
class Setup:
    id: str
    ready: bool
    fix: str  # in doctor's problems when not ready; in its auth or trust line when ready
    said: str = ""  # what the failed run's answer says (its fix), when not ready
    settings: dict[str, Any] | None = None  # the CLI home's settings.json instead of the isolated one
    env: dict[str, str | None] | None = None
    prepare: Callable[[Relay], None] | None = None
    shown: tuple[str, ...] = ()  # more lines doctor's text must hold


def project_env_file(relay: Relay) -> None:
    (relay.project / ".env").write_text("GOOGLE_GENAI_USE_VERTEXAI=true\n", encoding="utf-8")


def trusted_folder(relay: Relay) -> None:
    rules = {str(relay.project): "TRUST_FOLDER"}
    (relay.home / ".gemini" / "trustedFolders.json").write_text(json.dumps(rules), encoding="utf-8")


def rejected_key(relay: Relay) -> None:
    relay.api.reject_key("dummy")


def denied_key(relay: Relay) -> None:
    """A key the API knows (its models listing works) that may not call the models: generateContent answers 403."""
    relay.api.deny_key("dummy")


NO_AUTH = settings_without("security", "auth")
NO_TRUST = settings_without("security", "folderTrust")
GATEWAY = {**CLI_SETTINGS, "security": {**CLI_SETTINGS["security"], "auth": {"selectedType": "gateway"}}}
SELECT_API_KEY = 'Add {"security": {"auth": {"selectedType": "gemini-api-key"}}} to'
UNSET_VERTEX = "Unset GOOGLE_GENAI_USE_VERTEXAI to use GEMINI_API_KEY"
SELECTED = 'Set security.auth.selectedType to "gemini-api-key" (or "vertex-ai") in'
SET_KEY = "Set GEMINI_API_KEY in the server's env"
TRUST = "Set GEMINI_CLI_TRUST_WORKSPACE=true in the server's env"
DENIED = "may not call gemini-2.5-pro"
WARM: dict[str, str | None] = {"GEMINI_RELAY_WARM": "on"}
SETUPS = [
    Setup(
        "isolated",
        True,
        "- auth: gemini-api-key (security.auth.selectedType in",
        shown=(
            "Verdict: ✅ System Ready",
            "0.61.0",  # the pinned CLI's `--version`
            "let the key call gemini-2.5-pro (a countTokens call, no tokens)",
            "exits 15 min after its last run or request (GEMINI_RELAY_HOST_IDLE)",  # the host's idle exit
        ),
    ),  # fmt: skip
    Setup("base URL without selectedType", False, SELECT_API_KEY, SELECT_API_KEY, settings=NO_AUTH),
    Setup(
        "Vertex AI switch beats the key",
        False,
        UNSET_VERTEX,
        UNSET_VERTEX,
        settings=NO_AUTH,
        env={"GOOGLE_GENAI_USE_VERTEXAI": "true"},
    ),  # fmt: skip
    Setup(
        "Vertex AI switch in the project's .env",
        False,
        UNSET_VERTEX,
        UNSET_VERTEX,
        settings=NO_AUTH,
        prepare=project_env_file,
    ),  # fmt: skip
    Setup("gateway selected", False, SELECTED, SELECTED, settings=GATEWAY),
    Setup("key unset", False, SET_KEY, SET_KEY, env={"GEMINI_API_KEY": None}),
    Setup("untrusted folder", False, TRUST, "GEMINI_CLI_TRUST_WORKSPACE=true", settings=NO_TRUST),
    Setup(
        "trusted by the env",
        True,
        "is trusted (GEMINI_CLI_TRUST_WORKSPACE=true)",
        settings=NO_TRUST,
        env={"GEMINI_CLI_TRUST_WORKSPACE": "true"},
    ),  # fmt: skip
    Setup(
        "trusted by trustedFolders.json", True, "trusts it (TRUST_FOLDER)", settings=NO_TRUST, prepare=trusted_folder
    ),  # fmt: skip
    Setup(
        "key refused by the API",
        False,
        "Set a GEMINI_API_KEY the API accepts (https://aistudio.google.com/apikey)",
        "The API refused the key: set a valid GEMINI_API_KEY",
        prepare=rejected_key,
    ),  # fmt: skip
    Setup("key may not call the model", False, DENIED, "HTTP 403", prepare=denied_key),
    # Warm runs (`gemini --acp`) pick their auth type as ACP mode does: with GOOGLE_GEMINI_BASE_URL set and no
    # selectedType it is `gateway`, which ACP accepts; they do not check folder trust.
    Setup(
        "warm: base URL without selectedType",
        True,
        "- auth: gateway (GOOGLE_GEMINI_BASE_URL is set",
        settings=NO_AUTH,
        env=WARM,
        shown=("Verdict: ✅ System Ready", "exit 41"),  # the cold path's refusal is still said, as a note
    ),  # fmt: skip
    Setup("warm: untrusted folder", True, "not checked by warm runs", settings=NO_TRUST, env=WARM),
    Setup("warm: key unset", False, SET_KEY, "Gemini API key is missing", env={**WARM, "GEMINI_API_KEY": None}),
    Setup("warm: key may not call the model", False, DENIED, "HTTP 403", env=WARM, prepare=denied_key),
]


# The setups made by files and the emulator alone (no env of their own) share one server: each case writes its
# files, runs, then puts the world back as it was (the CLI reads its settings afresh on every cold run).
FILE_SETUPS = [s for s in SETUPS if s.env is None]
ENV_SETUPS = [s for s in SETUPS if s.env is not None]


anyio_backend = module_event_loop()
doctor_world, doctor_client = shared_server("doctor")


@pytest.mark.parametrize("setup", FILE_SETUPS, ids=[s.id for s in FILE_SETUPS])
async def test_doctor_says_ready_exactly_when_a_run_works_and_names_the_fix(
    doctor_world: Relay, doctor_client: Client, setup: Setup
) -> None:
    prepare(doctor_world, setup)
    try:
        await check_doctor_and_run(doctor_world, doctor_client, setup)
    finally:
        (doctor_world.home / ".gemini" / "settings.json").write_text(json.dumps(CLI_SETTINGS), encoding="utf-8")
        (doctor_world.project / ".env").unlink(missing_ok=True)
        (doctor_world.home / ".gemini" / "trustedFolders.json").unlink(missing_ok=True)
        doctor_world.api.allow_key("dummy")


@pytest.mark.parametrize("setup", ENV_SETUPS, ids=[s.id for s in ENV_SETUPS])
async def test_doctor_on_a_server_with_this_env_says_ready_exactly_when_a_run_works_and_names_the_fix(
    relay: Relay, setup: Setup
) -> None:
    prepare(relay, setup)
    async with relay.client(**(setup.env or {})) as client:
        await check_doctor_and_run(relay, client, setup)


def prepare(relay: Relay, setup: Setup) -> None:
    if setup.settings is not None:
        (relay.home / ".gemini" / "settings.json").write_text(json.dumps(setup.settings), encoding="utf-8")
    if setup.prepare is not None:
        setup.prepare(relay)
    relay.api.clear_requests()


async def check_doctor_and_run(relay: Relay, client: Client, setup: Setup) -> None:
    doctor = await client.call_tool("gemini-doctor", {})
    checked = [r.kind for r in relay.api.requests]
    ask = await client.call_tool("gemini-ask", {"prompt": "[[fake:echo:works]]"})
    structured = doctor.structured_content
    assert structured is not None
    assert structured["ready"] is setup.ready, text_of(doctor)
    assert ask.is_error is not setup.ready, text_of(ask)  # doctor was right about the run
    if setup.ready:
        assert setup.fix in text_of(doctor)
    else:
        assert any(setup.fix in problem for problem in structured["problems"]), structured["problems"]
        assert setup.said in text_of(ask)  # the failed run names the fix too
    assert all(line in text_of(doctor) for line in setup.shown), text_of(doctor)
    # The readiness check spends no tokens: doctor's own request is at most one countTokens call.
    assert checked in ([], ["count_tokens"], ["rejected_key"], ["denied"]), checked
    if setup.id == "isolated":
        assert checked == ["count_tokens"]
    assert not [
        r for r in relay.api.requests if r.kind not in ("main", "router", "count_tokens", "rejected_key", "denied")
    ]


async def test_the_api_backend_is_ready_only_when_the_key_may_call_the_default_model(relay: Relay) -> None:
    env = {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None}
    for denied in (False, True):
        if denied:
            relay.api.deny_key("dummy")
        relay.api.clear_requests()
        async with relay.client(**env) as client:
            doctor = await client.call_tool("gemini-doctor", {})
            checked = sorted(r.kind for r in relay.api.requests)
            ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
        structured = doctor.structured_content
        assert structured is not None
        assert structured["ready"] is not denied, text_of(doctor)
        assert ask.is_error is denied, text_of(ask)
        assert checked == (["denied", "models"] if denied else ["count_tokens", "models"])  # no generate call
        if denied:
            assert any(DENIED in p and "HTTP 403 PERMISSION_DENIED" in p for p in structured["problems"]), structured
            assert "HTTP 403" in text_of(ask)

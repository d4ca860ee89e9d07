"""How the Gemini CLI 0.61.0 will authenticate a headless run, decided as it decides (validateNonInteractiveAuth):
`security.auth.selectedType` from its merged settings, else the environment — GOOGLE_GENAI_USE_GCA=true, then
GOOGLE_GENAI_USE_VERTEXAI=true, then GOOGLE_GEMINI_BASE_URL (the `gateway` type, which headless runs refuse), then
GEMINI_API_KEY, then Cloud Shell / compute ADC — and then what that type needs. A set GEMINI_API_KEY does not mean
the CLI uses it: each verdict says which type it picked, why, and the one change that makes it work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from gemini_relay.backends.gemini_cli.cli_config import CliView, read_cli_view
from gemini_relay.backends.gemini_cli.errors import AUTH_RECOVERY
from gemini_relay.errors import RunFailed

API_KEY_TYPE = "gemini-api-key"
GATEWAY_TYPE = "gateway"
HEADLESS_TYPES = ("oauth-personal", "compute-default-credentials", API_KEY_TYPE, "vertex-ai")
_SELECT_API_KEY = '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'
SET_KEY = "Set GEMINI_API_KEY in the server's env (a key from https://aistudio.google.com/apikey)."


@dataclass(frozen=True)
class AuthVerdict:
    auth_type: str | None
    why: str  # `settings.json selects it` / `GOOGLE_GENAI_USE_VERTEXAI=true`
    ok: bool
    summary: str
    fix: str = ""


def cli_auth(view: CliView) -> AuthVerdict:
    verdict = _verdict(view)
    if view.env.get("GEMINI_API_KEY") and verdict.auth_type not in (API_KEY_TYPE, None):
        return replace(verdict, summary=f"{verdict.summary}; GEMINI_API_KEY is set but not used")
    return verdict


def acp_auth(view: CliView) -> AuthVerdict:
    """How a warm run (`gemini --acp`, 0.61.0's session/new) authenticates, which is not how `-p` does:
    `security.auth.selectedType`, else `gateway` when GOOGLE_GEMINI_BASE_URL is set, else `gemini-api-key` — the
    GOOGLE_GENAI_USE_* switches, folder trust and enforcedType are not consulted, and `gateway` is accepted."""
    selected = view.get("security", "auth", "selectedType")
    if isinstance(selected, str) and selected:
        where = view.source_of("security", "auth", "selectedType")
        auth_type, why = selected, f"security.auth.selectedType in {where or 'its settings'}"
    elif view.env.get("GOOGLE_GEMINI_BASE_URL"):
        auth_type, why = "gateway", "GOOGLE_GEMINI_BASE_URL is set and no settings.json selects a type"
    else:
        auth_type, why = API_KEY_TYPE, "ACP mode's default"
    summary = f"{auth_type} ({why})"
    if auth_type == GATEWAY_TYPE:
        return AuthVerdict(auth_type, why, True, summary + ": GOOGLE_GEMINI_BASE_URL with GEMINI_API_KEY if set")
    if auth_type == API_KEY_TYPE and not view.env.get("GEMINI_API_KEY"):
        return AuthVerdict(auth_type, why, False, summary + ", but GEMINI_API_KEY is not set", SET_KEY)
    if auth_type in HEADLESS_TYPES:
        return _verdict_for(view, auth_type, why)
    place = str(view.source_of("security", "auth", "selectedType") or _user_settings(view))
    return AuthVerdict(auth_type, why, False, f"{summary}, which the CLI does not know",
                       f'Set security.auth.selectedType to "{API_KEY_TYPE}" (or "vertex-ai") in {place}.')  # fmt: skip


def with_auth_fix(
    failure: RunFailed, child_env: Mapping[str, str], workspace: Path, *, warm: bool = False
) -> RunFailed:
    """An auth failure of the CLI (cold exit 41, warm -32000) with the precise fix gemini-doctor would give — which
    auth type the CLI picked and what it still needs — in place of the generic advice. Reads files only."""
    if failure.recovery == AUTH_RECOVERY:
        view = read_cli_view(child_env, workspace)
        verdict = acp_auth(view) if warm else cli_auth(view)
        if not verdict.ok and verdict.fix:
            failure.recovery = f"The Gemini CLI uses {verdict.summary}. {verdict.fix}"
    return failure


def _verdict(view: CliView) -> AuthVerdict:
    selected = view.get("security", "auth", "selectedType")
    enforced = view.get("security", "auth", "enforcedType")
    auth_type: str | None
    if isinstance(selected, str) and selected:
        where = view.source_of("security", "auth", "selectedType")
        auth_type, why = selected, f"security.auth.selectedType in {where or 'its settings'}"
    else:
        auth_type, why = _from_env(view)
    if isinstance(enforced, str) and enforced and auth_type != enforced:
        return AuthVerdict(auth_type, why, False, f"{auth_type or 'none'} ({why}), but its settings enforce {enforced}",
                           f"Make the CLI use {enforced}, as security.auth.enforcedType requires.")  # fmt: skip
    if auth_type is None:
        return AuthVerdict(None, "nothing selects one", False, "no auth method", SET_KEY)
    if auth_type not in HEADLESS_TYPES:
        return _refused_type(view, auth_type, why)
    return _verdict_for(view, auth_type, why)


def _verdict_for(view: CliView, auth_type: str, why: str) -> AuthVerdict:
    """What a type headless and warm runs both accept still needs."""
    summary = f"{auth_type} ({why})"
    if auth_type == API_KEY_TYPE:
        if not view.env.get("GEMINI_API_KEY"):
            return AuthVerdict(auth_type, why, False, summary + ", but GEMINI_API_KEY is not set", SET_KEY)
        return AuthVerdict(auth_type, why, True, summary)
    if auth_type == "vertex-ai":
        located = view.env.get("GOOGLE_CLOUD_PROJECT") and view.env.get("GOOGLE_CLOUD_LOCATION")
        if located or view.env.get("GOOGLE_API_KEY"):
            return AuthVerdict(auth_type, why, True, summary)
        return AuthVerdict(auth_type, why, False, summary + ", without GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION",
                           _vertex_fix(view, why))  # fmt: skip
    if auth_type == "oauth-personal":
        if (view.home / ".gemini" / "oauth_creds.json").is_file():
            return AuthVerdict(auth_type, why, True, summary + ": a signed-in Google account (oauth_creds.json)")
        return AuthVerdict(auth_type, why, False, summary + ", and no Google account is signed in",
                           "Use an API key instead: set GEMINI_API_KEY and "
                           + ("unset GOOGLE_GENAI_USE_GCA" if why.startswith("GOOGLE_GENAI_USE_GCA") else
                              f'set security.auth.selectedType to "{API_KEY_TYPE}" in {_user_settings(view)}')
                           + " (personal logins moved to agy on 2026-06-18), or run `gemini` once in a terminal "
                           "to sign in.")  # fmt: skip
    return AuthVerdict(auth_type, why, True, summary + " (Application Default Credentials, not checked here)")


def _from_env(view: CliView) -> tuple[str | None, str]:
    env = view.env
    if env.get("GOOGLE_GENAI_USE_GCA") == "true":
        return "oauth-personal", "GOOGLE_GENAI_USE_GCA=true" + _in_env_file(view, "GOOGLE_GENAI_USE_GCA")
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return "vertex-ai", "GOOGLE_GENAI_USE_VERTEXAI=true" + _in_env_file(view, "GOOGLE_GENAI_USE_VERTEXAI")
    if env.get("GOOGLE_GEMINI_BASE_URL"):
        return "gateway", "GOOGLE_GEMINI_BASE_URL is set and no settings.json selects a type"
    if env.get("GEMINI_API_KEY"):
        return API_KEY_TYPE, "GEMINI_API_KEY is set" + _in_env_file(view, "GEMINI_API_KEY")
    if env.get("CLOUD_SHELL") == "true" or env.get("GEMINI_CLI_USE_COMPUTE_ADC") == "true":
        return "compute-default-credentials", "Cloud Shell or GEMINI_CLI_USE_COMPUTE_ADC=true"
    return None, "nothing selects one"


def _refused_type(view: CliView, auth_type: str, why: str) -> AuthVerdict:
    """`gateway`, `cloud-shell` or a misspelling: every headless run exits 41 ("Invalid auth method selected.")."""
    summary = f"{auth_type} ({why}), which headless runs refuse (exit 41)"
    if why.startswith("GOOGLE_GEMINI_BASE_URL"):
        fix = (f"Add {_SELECT_API_KEY} to {_user_settings(view)}: with GOOGLE_GEMINI_BASE_URL set the CLI picks "
               "`gateway` otherwise (the endpoint is still used).")  # fmt: skip
    else:
        where = view.source_of("security", "auth", "selectedType") or _user_settings(view)
        fix = f'Set security.auth.selectedType to "{API_KEY_TYPE}" (or "vertex-ai") in {where}.'
    return AuthVerdict(auth_type, why, False, summary, fix)


def _vertex_fix(view: CliView, why: str) -> str:
    if why.startswith("GOOGLE_GENAI_USE_VERTEXAI") and view.env.get("GEMINI_API_KEY"):
        return ("Unset GOOGLE_GENAI_USE_VERTEXAI to use GEMINI_API_KEY, or set GOOGLE_CLOUD_PROJECT and "
                "GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY) for Vertex AI.")  # fmt: skip
    return "Set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY) in the server's env."


def _in_env_file(view: CliView, key: str) -> str:
    """` (from /p/.env)` when the variable reached the CLI only through the .env file it loads."""
    return f" (from {view.env_file})" if view.env_file is not None and key in view.env_only else ""


def _user_settings(view: CliView) -> str:
    return str(view.home / ".gemini" / "settings.json")

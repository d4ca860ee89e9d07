"""How the Gemini CLI would authenticate, read from env and its settings without spending a token."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.backends.gemini_cli.settings import gemini_home


@dataclass(frozen=True)
class AuthState:
    ok: bool
    summary: str
    fix: str = ""


def gemini_auth_state(env: Mapping[str, str]) -> AuthState:
    home = gemini_home(env) / ".gemini"
    selected = _selected_type(home / "settings.json")
    suffix = f" (settings.json selectedType: {selected})" if selected else ""
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        if env.get(key):
            return AuthState(True, f"API key from {key}{suffix}")
    if env.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() == "true":
        if env.get("GOOGLE_CLOUD_PROJECT"):
            return AuthState(True, f"Vertex AI, project from GOOGLE_CLOUD_PROJECT{suffix}")
        return AuthState(False, "Vertex AI without a project", "Set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION).")
    if (home / "oauth_creds.json").is_file():
        return AuthState(True, f"signed-in Google account (oauth_creds.json){suffix}")
    return AuthState(
        False,
        "no credentials found",
        "Set GEMINI_API_KEY in the server's env (API-key and enterprise accounts keep the Gemini CLI; personal "
        "logins moved to agy on 2026-06-18), or run `gemini` once in a terminal to sign in.",
    )


def _selected_type(settings: Path) -> str | None:
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    security = data.get("security") if isinstance(data, dict) else None
    auth = security.get("auth") if isinstance(security, dict) else None
    selected = auth.get("selectedType") if isinstance(auth, dict) else None
    return selected if isinstance(selected, str) else None

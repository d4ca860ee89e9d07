"""The api backend's settings section (GEMINI_DEFAULT_MODEL; its credentials are read per call, api/auth.py) and the
name the registry knows it by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gemini_relay.config import text_setting
from gemini_relay.core.vocabulary import BackendName

NAME = BackendName("api")
API_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_MODEL_ENV = "GEMINI_DEFAULT_MODEL"  # the model a call that names none runs on


@dataclass(frozen=True)
class ApiSettings:
    default_model: str | None = None  # GEMINI_DEFAULT_MODEL (None: common.DEFAULT_MODEL)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ApiSettings:
        return cls(default_model=text_setting(env, DEFAULT_MODEL_ENV))


def has_api_key(env: Mapping[str, str]) -> bool:
    return any(env.get(key, "").strip() for key in API_KEYS)

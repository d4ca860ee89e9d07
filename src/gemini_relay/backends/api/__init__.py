"""The api backend (GEMINI_MCP_BACKEND=api): the Gemini REST API through google-genai, no CLI and no Node.

Public surface:
- `ENTRY`: its line in the registry (backends/backend_registry.py).
- `build_api_backend(settings)` / `ApiBackend(settings)`: the backend (`name` "api", `command` "gemini-api",
  `max_concurrent` None); its `run(spec)` is an async generator of core.events ending in Finished,
  or raises RunFailed / RunTimedOut / BackendUnavailable / InputError.
- `ApiBackend.models()` -> Catalog (live models.list, else the built-in list with a notice);
  `ApiBackend.diagnose()` -> Diagnosis (check lines, no tokens spent); `ApiBackend.help()` -> text;
  `ApiBackend.list_conversations(limit)` -> list[Conversation]; `ApiBackend.check_spec(spec)` raises the
  InputError a run would (model id, malformed or unknown conversationId) so the server can refuse before a job.
- `validate_conversation_id(raw)`: InputError unless `raw` is a conversation id this backend can have minted.
- `resolve_auth(env)` -> ApiAuth (BackendUnavailable when no key), `resolve_model(requested, default)`.
- `SEARCH_TOOLS`: the tool names whose runs get the Google Search grounding tool (gemini-search).
Importing the package does not import google-genai (~0.3 s); a run, models() or diagnose() does.
"""

from gemini_relay.backends.api.auth import ApiAuth, resolve_auth
from gemini_relay.backends.api.backend import ApiBackend, build_api_backend
from gemini_relay.backends.api.common import SEARCH_TOOLS, Check, Diagnosis, resolve_model
from gemini_relay.backends.api.conversation_store import ConversationStore, validate_conversation_id
from gemini_relay.backends.api.settings import API_KEYS, NAME, has_api_key
from gemini_relay.backends.entry import BackendEntry
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings


def _build(settings: Settings, _probes: ProbeCache) -> ApiBackend:
    return ApiBackend(settings)


def _detect(settings: Settings) -> str | None:
    return "an API key is set" if has_api_key(settings.env) else None


ENTRY = BackendEntry(
    name=NAME,
    title="Gemini API through google-genai",
    build=_build,
    aliases=("gemini-api",),
    detect=_detect,
    absent="no API key is set",
    found_by_keys=API_KEYS,
    enable="set GEMINI_API_KEY (a key from https://aistudio.google.com/apikey): no CLI and no Node needed",
    preference=30,
    fallback_model="gemini-2.5-flash",
    agent=False,
    web_search="the Gemini API's Google Search grounding",
    guide=(
        "The api backend runs no agent: the model does not read the project itself (send files along with @path), "
        "never edits files, and ignores agent, sandbox, skipPermissions, addDirs and allowSlashCommands (each with a "
        "notice)."
    ),
)

__all__ = [
    "ENTRY",
    "NAME",
    "SEARCH_TOOLS",
    "ApiAuth",
    "ApiBackend",
    "Check",
    "ConversationStore",
    "Diagnosis",
    "build_api_backend",
    "resolve_auth",
    "resolve_model",
    "validate_conversation_id",
]

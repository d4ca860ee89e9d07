"""The Gemini CLI's answers for gemini-models, gemini-conversations, gemini-doctor and gemini-help."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import anyio

from gemini_relay.backends.capabilities import ConversationRows, DoctorSection, ModelListing
from gemini_relay.backends.gemini_cli.auth import API_KEY_TYPE, GATEWAY_TYPE, acp_auth, cli_auth
from gemini_relay.backends.gemini_cli.cli_config import read_cli_view
from gemini_relay.backends.gemini_cli.sessions import list_conversations
from gemini_relay.backends.gemini_cli.settings import GeminiCliSettings, gemini_home
from gemini_relay.backends.keycheck import KeyCheck, check_key
from gemini_relay.backends.model_names import GEMINI_ALIASES, GEMINI_MODELS
from gemini_relay.backends.probe import ProbeResult, run_probe
from gemini_relay.config import Settings

CLI_DEFAULT_MODEL = "gemini-2.5-pro"  # the Gemini CLI 0.61.0's DEFAULT_GEMINI_MODEL, what `auto` routes to first


class GeminiCliView(Protocol):
    """What these answers read of GeminiCliBackend (declared here, so this module does not import the backend back)."""

    @property
    def section(self) -> GeminiCliSettings: ...

    @property
    def settings(self) -> Settings: ...

    def env(self) -> dict[str, str]: ...

    def locate(self) -> Path | None: ...

    async def help(self) -> ProbeResult: ...

    async def version(self) -> ProbeResult: ...


async def model_listing(gemini: GeminiCliView) -> ModelListing:
    default = gemini.section.default_model or "auto (the Gemini CLI routes each prompt)"
    lines = [
        "Models for the gemini backend (Gemini CLI):",
        "",
        *(f"- {model}" for model in GEMINI_MODELS),
        "- auto (let the CLI's router choose per prompt)",
        "",
        "Aliases: " + ", ".join(f"{alias} → {target}" for alias, target in GEMINI_ALIASES.items()),
        f"Default: {default}",
        "",
        "Any other model id your API key can use is passed through with -m.",
    ]
    return ModelListing(lines, models=[(model, model) for model in GEMINI_MODELS])


async def conversation_rows(gemini: GeminiCliView, limit: int) -> ConversationRows:
    return ConversationRows("Gemini CLI", list_conversations(gemini_home(gemini.env()), limit))


async def doctor_section(gemini: GeminiCliView) -> DoctorSection:
    """Ready means the next run will not fail for setup: the binary and Node run, and — read as the CLI reads them on
    the path that run takes (warm `--acp` when GEMINI_RELAY_WARM is on, else cold `-p`: cli_config.py, auth.py) —
    its settings load, its auth type is one that path accepts and has what it needs, a cold run's folder is trusted,
    and the key may call the default model (one countTokens call, no tokens; bounded, beside the probes)."""
    lines = ["## Gemini CLI"]
    problems: list[str] = []
    notes: list[str] = []
    root = gemini.settings.project_root
    view = read_cli_view(gemini.env(), root)
    warm = gemini.settings.warm
    cold_auth = cli_auth(view)
    auth = acp_auth(view) if warm else cold_auth
    binary = gemini.locate()
    checked: list[KeyCheck] = []
    model = _default_model(gemini.section.default_model)
    key = view.env.get("GEMINI_API_KEY")
    calls_api = auth.auth_type == API_KEY_TYPE or auth.auth_type == GATEWAY_TYPE

    async def check_call() -> None:
        checked.append(
            await check_key(
                key or None,
                model,
                base_url=view.env.get("GOOGLE_GEMINI_BASE_URL"),
                version=view.env.get("GOOGLE_GENAI_API_VERSION"),
                bearer=view.env.get("GEMINI_API_KEY_AUTH_MECHANISM") == "bearer",
            )
        )

    async with anyio.create_task_group() as checks:
        if binary is not None and auth.ok and calls_api:
            checks.start_soon(check_call)  # the network call runs while the CLI's probes start Node
        if binary is None:
            lines.append("- binary: not found")
            problems.append("Install the Gemini CLI: `npm install -g @google/gemini-cli`, or set GEMINI_CLI_PATH.")
        else:
            version = await gemini.version()
            shown = version.text.strip().splitlines()[-1] if version.ok else f"unknown ({version.text.strip()[:200]})"
            lines += [f"- binary: {binary}", f"- version: {shown}"]
            if not version.ok:
                problems.append(f"`{binary} --version` failed; reinstall the Gemini CLI.")
        node = await run_probe(["node", "--version"], gemini.env(), root, timeout=10.0)
    lines.append(f"- node: {node.text.strip() if node.ok else 'not found'}")
    if not node.ok:
        problems.append("Install Node.js 20 or newer (the Gemini CLI runs on it).")
    lines.append(
        "- runs: warm (`gemini --acp`, GEMINI_RELAY_WARM=on); addDirs, sandbox and /commands run cold (`-p`)"
        if warm
        else "- runs: cold (`gemini -p`, GEMINI_RELAY_WARM=off)"
    )
    lines.append("- settings: " + (", ".join(f"{p} ({scope})" for scope, p in view.files.items()) or "none"))
    problems += [f"Fix {error}: the Gemini CLI refuses to start with it." for error in view.errors]
    lines.append(f"- auth: {auth.summary}")
    if not auth.ok:
        problems.append(auth.fix)
    elif warm and not cold_auth.ok:
        notes.append(f"- ⚠️ cold runs: {cold_auth.summary}. {cold_auth.fix}")
    trust = view.trust
    state = "trusted" if trust.trusted else "not trusted"
    if warm:
        lines.append(f"- folder trust: {root} is {state} ({trust.why}; not checked by warm runs)")
        if not trust.trusted:
            notes.append(f"- ⚠️ cold runs in {root} exit 55: set GEMINI_CLI_TRUST_WORKSPACE=true in the server's env.")
    else:
        lines.append(f"- folder trust: {root} is {state} ({trust.why})")
        if not trust.trusted:
            problems.append(
                f"Set GEMINI_CLI_TRUST_WORKSPACE=true in the server's env: the Gemini CLI runs headless only in a "
                f"folder it trusts, and every run in {root} exits 55 now."
            )
    for result in checked:
        lines.append(f"- call: {result.detail}")
        if not result.ok:
            problems.append(_call_fix(result, model))
    return DoctorSection(lines + notes, problems)


def _default_model(configured: str | None) -> str:
    """The model a call runs on by default: GEMINI_DEFAULT_MODEL (an alias resolved), else the CLI's own default."""
    raw = (configured or "").strip().removeprefix("models/")
    if not raw or raw.lower().startswith("auto"):
        return CLI_DEFAULT_MODEL
    return GEMINI_ALIASES.get(raw.lower(), raw)


def _call_fix(result: KeyCheck, model: str) -> str:
    if result.denied:
        return (
            f"Use a GEMINI_API_KEY that may call {model} (its project needs the Gemini API; "
            "https://aistudio.google.com/apikey), or set GEMINI_DEFAULT_MODEL to a model it may call — now "
            f"{result.detail}"
        )
    if result.status == 404:
        return f"The endpoint has no model {model}: set GEMINI_DEFAULT_MODEL to one gemini-models lists."
    if result.status is not None:
        return "Set a GEMINI_API_KEY the API accepts (https://aistudio.google.com/apikey) in the server's env."
    return "Check the network, or GOOGLE_GEMINI_BASE_URL when it points the CLI at another endpoint."


async def help_text(gemini: GeminiCliView) -> str:
    result = await gemini.help()
    return result.text.strip() if result.ok else f"`gemini --help` failed:\n{result.text.strip()}"

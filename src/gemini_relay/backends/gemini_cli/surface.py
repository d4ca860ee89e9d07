"""The Gemini CLI's answers for gemini-models, gemini-conversations, gemini-doctor and gemini-help."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from gemini_relay.backends.capabilities import ConversationRows, DoctorSection, ModelListing
from gemini_relay.backends.gemini_cli.auth import API_KEY_TYPE, cli_auth
from gemini_relay.backends.gemini_cli.cli_config import read_cli_view
from gemini_relay.backends.gemini_cli.sessions import list_conversations
from gemini_relay.backends.gemini_cli.settings import GeminiCliSettings, gemini_home
from gemini_relay.backends.keycheck import check_key
from gemini_relay.backends.models import GEMINI_ALIASES, GEMINI_MODELS
from gemini_relay.backends.probe import ProbeResult, run_probe
from gemini_relay.config import Settings


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
    """Ready means the next run will not fail for setup: the binary and Node run, and — read as the CLI reads them
    (cli_config.py, auth.py) — its settings load, its auth type is one headless runs accept and has what it needs,
    it trusts the project folder, and the endpoint accepts the key (one models listing, no tokens)."""
    lines = ["## Gemini CLI"]
    problems: list[str] = []
    binary = gemini.locate()
    if binary is None:
        lines.append("- binary: not found")
        problems.append("Install the Gemini CLI: `npm install -g @google/gemini-cli`, or set GEMINI_CLI_PATH.")
    else:
        version = await gemini.version()
        shown = version.text.strip().splitlines()[-1] if version.ok else f"unknown ({version.text.strip()[:200]})"
        lines += [f"- binary: {binary}", f"- version: {shown}"]
        if not version.ok:
            problems.append(f"`{binary} --version` failed; reinstall the Gemini CLI.")
    node = await run_probe(["node", "--version"], gemini.env(), gemini.settings.project_root, timeout=10.0)
    lines.append(f"- node: {node.text.strip() if node.ok else 'not found'}")
    if not node.ok:
        problems.append("Install Node.js 20 or newer (the Gemini CLI runs on it).")
    root = gemini.settings.project_root
    view = read_cli_view(gemini.env(), root)
    lines.append("- settings: " + (", ".join(f"{p} ({scope})" for scope, p in view.files.items()) or "none"))
    problems += [f"Fix {error}: the Gemini CLI refuses to start with it." for error in view.errors]
    auth = cli_auth(view)
    lines.append(f"- auth: {auth.summary}")
    if not auth.ok:
        problems.append(auth.fix)
    trust = view.trust
    lines.append(f"- folder trust: {root} is {'trusted' if trust.trusted else 'not trusted'} ({trust.why})")
    if not trust.trusted:
        problems.append(
            f"Set GEMINI_CLI_TRUST_WORKSPACE=true in the server's env: the Gemini CLI runs headless only in a folder "
            f"it trusts, and every run in {root} exits 55 now."
        )
    key = view.env.get("GEMINI_API_KEY")
    if binary is not None and auth.ok and auth.auth_type == API_KEY_TYPE and key:
        checked = await check_key(
            key,
            base_url=view.env.get("GOOGLE_GEMINI_BASE_URL"),
            version=view.env.get("GOOGLE_GENAI_API_VERSION"),
            bearer=view.env.get("GEMINI_API_KEY_AUTH_MECHANISM") == "bearer",
        )
        lines.append(f"- endpoint: {checked.detail}")
        if not checked.ok:
            problems.append(
                "Set a GEMINI_API_KEY the API accepts (https://aistudio.google.com/apikey) in the server's env."
                if checked.status is not None
                else "Check the network, or GOOGLE_GEMINI_BASE_URL when it points the CLI at another endpoint."
            )
    return DoctorSection(lines, problems)


async def help_text(gemini: GeminiCliView) -> str:
    result = await gemini.help()
    return result.text.strip() if result.ok else f"`gemini --help` failed:\n{result.text.strip()}"

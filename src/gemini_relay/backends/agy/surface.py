"""agy's answers for gemini-models, gemini-conversations, gemini-doctor and gemini-help (no tokens spent)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from gemini_relay.backends.agy.args import MODEL_ALIASES as AGY_ALIASES
from gemini_relay.backends.agy.catalogs import FALLBACK_MODELS, FALLBACK_NOTICE
from gemini_relay.backends.agy.errors import SIGN_IN
from gemini_relay.backends.agy.sessions import ConversationListing
from gemini_relay.backends.agy.settings import AgySettings
from gemini_relay.backends.agy.usage import UsageReading
from gemini_relay.backends.agy.version import AgyVersion
from gemini_relay.backends.capabilities import ConversationRows, DoctorSection, ModelListing
from gemini_relay.backends.model_names import Catalog
from gemini_relay.backends.probe import ProbeResult
from gemini_relay.core.vocabulary import QuotaLevel
from gemini_relay.errors import BackendUnavailable


class AgyView(Protocol):
    """What these answers read of AgyBackend (declared here, so this module does not import the backend back)."""

    @property
    def section(self) -> AgySettings: ...

    def locate(self) -> Path | None: ...

    async def version(self, binary: Path | None = None) -> AgyVersion: ...

    async def help(self) -> ProbeResult: ...

    async def models(self) -> Catalog: ...

    async def usage(self) -> UsageReading: ...

    async def conversations(self, limit: int, cwd: Path | None = None) -> ConversationListing: ...


async def model_listing(agy: AgyView) -> ModelListing:
    try:
        catalog = await agy.models()
    except BackendUnavailable as exc:
        catalog = Catalog(FALLBACK_MODELS, live=False, notice=FALLBACK_NOTICE.format(why=exc))
    return ModelListing.of_catalog(
        "agy backend (Antigravity CLI)",
        catalog,
        AGY_ALIASES,
        agy.section.default_model or "agy's own default",
        more=("", "Non-Gemini models draw on a separate quota group (see gemini-doctor)."),
    )


async def conversation_rows(agy: AgyView, limit: int) -> ConversationRows:
    listing = await agy.conversations(limit)
    return ConversationRows("agy", listing.conversations, list(listing.notices))


async def doctor_section(agy: AgyView) -> DoctorSection:
    lines = ["## agy (Antigravity CLI)"]
    binary = agy.locate()
    if binary is None:
        return DoctorSection(
            [*lines, "- binary: not found"], ["Install agy (the Antigravity CLI) or set AGY_CLI_PATH."]
        )
    lines.append(f"- binary: {binary}")
    try:
        version = await agy.version(binary)
    except BackendUnavailable as exc:
        return DoctorSection([*lines, f"- version: refused ({exc})"], [str(exc)])
    lines += [f"- version: {version}", "", "### Login & Quota"]
    reading = await agy.usage()
    if not reading.ok:
        # /usage asks agy's backend without a turn: it fails for the reasons a run would, signed out first.
        return DoctorSection(
            [*lines, f"- unavailable: {reading.error}"],
            [f"agy could not report its quota ({reading.error}). {SIGN_IN}"],
        )
    now, thresholds = datetime.now(UTC), agy.section.thresholds
    problems: list[str] = []
    for group in reading.groups:
        lines.append(f"- {group.describe(now, thresholds)}")
        if group.level(now, thresholds) is QuotaLevel.EXHAUSTED and group.mentions_gemini():
            problems.append(f"The {group.name} quota is exhausted; wait for its reset or pick another model group.")
    if not reading.groups:
        lines.append("- signed in; agy reported no quota groups")
    return DoctorSection(lines, problems)


async def help_text(agy: AgyView) -> str:
    result = await agy.help()
    return result.text.strip() if result.ok else f"`agy --help` failed:\n{result.text.strip()}"

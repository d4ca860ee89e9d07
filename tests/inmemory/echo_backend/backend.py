"""EchoBackend: answers each prompt with itself, and fills the capabilities gemini-models and gemini-doctor ask for."""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator

from gemini_relay.backends.capabilities import DoctorSection, ModelListing
from gemini_relay.backends.checks import check_spec
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, Finished, SessionStarted, TextDelta, Usage
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import ConfigError

NAME = BackendName("echo")
MODEL = "echo-1"


class EchoBackend:
    def __init__(self, settings: Settings, probes: ProbeCache) -> None:
        self._prefix = settings.env.get("ECHO_PREFIX", "echo: ")  # its own settings section: ECHO_*

    @property
    def name(self) -> BackendName:
        return NAME

    @property
    def command(self) -> str:
        return "echo"

    @property
    def max_concurrent(self) -> int | None:
        return None

    def validate_config(self) -> None:
        if "\n" in self._prefix:
            raise ConfigError("ECHO_PREFIX must be one line")

    def check(self, spec: RunSpec) -> None:
        check_spec(spec)

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        session = spec.conversation_id or str(uuid.uuid4())
        yield SessionStarted(session, model=MODEL)
        yield TextDelta(self._prefix + spec.prompt)
        yield Finished(ok=True, status="SUCCESS", usage=Usage(input_tokens=1, output_tokens=1), session_id=session)

    async def model_listing(self) -> ModelListing:
        return ModelListing(["Models for the echo backend:", "", f"- {MODEL}"])

    async def doctor_section(self) -> DoctorSection:
        return DoctorSection(["## Echo", f"- prefix: {self._prefix!r}"], [])

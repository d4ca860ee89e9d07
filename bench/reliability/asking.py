"""asking: hostile answers to the relay's questions. A client answers elicitation off the question's form (an action
that is no action, a number, an object as the choice, a choice not offered) to gemini-files' delete question and to
the warm Gemini CLI's permission question (a shell command). Nothing asked about may happen (the file stays, the
command does not run), the call is answered (never "internal error", never a hang) and names the answer invalid.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from bench.reliability.table import Figure, at_least, zero
from bench.reliability.world import Answer, call, left_running, world
from tests.elicitation import OFF_SCHEMA, Recorder, off_schema
from tests.fakes.fake_gemini_api import TINY_PNG

CATEGORY = "asking"
INTERNAL = "internal error"
HOSTILE: list[dict[str, Any]] = [*OFF_SCHEMA, {"action": "accept", "content": {"choice": "not-an-offered-option"}}]
WARM = {"GEMINI_RELAY_WARM": "on", "GEMINI_RELAY_WARM_MAX_RSS_MB": "4096", "GEMINI_MCP_BACKEND": "gemini"}
OFFERED = "not one the question offered"  # AskOutcome.INVALID_ANSWER, as the caller reads it
MEDIA = {"GEMINI_MCP_BACKEND": "api", "GEMINI_RELAY_TOOLSETS": "media"}


@contextlib.contextmanager
def client_sends_anything() -> Iterator[None]:
    """The SDK client checks what its elicitation callback returns; lifted here so off-form answers reach the server
    (a client that is not the SDK sends what it likes)."""
    from mcp_types import methods

    checked = methods.validate_client_result
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings")  # the off-form answers, dumped
    methods.validate_client_result = lambda *_: None
    try:
        yield
    finally:
        methods.validate_client_result = checked


def internal(label: str, answer: Answer) -> list[str]:
    return [f"{label}: {answer.text[:160]!r}"] if INTERNAL in answer.text.lower() else []


async def deletes(rounds: int) -> tuple[int, list[str], list[str], list[str]]:
    """(answers tried, files deleted anyway, unclear or internal answers, processes left). One server: each answer
    is tried on a fresh upload."""
    tried, acted, unclear = 0, [], []
    with world("asking-files", **MEDIA) as w:
        (w.relay.project / "ref.png").write_bytes(TINY_PNG)
        recorder = Recorder(None)
        try:
            async with w.relay.asking_client(recorder) as c:
                for n in range(rounds):
                    for raw in HOSTILE:
                        recorder.reply = off_schema(raw)
                        label = f"delete #{n} answered {raw}"
                        up = await call(c, "gemini-files", {"action": "upload", "path": "ref.png"})
                        uri = str((up.structured or {}).get("file_uri") or "")
                        if up.is_error or not uri:
                            unclear.append(f"{label}: the upload failed: {up.text[:120]!r}")
                            continue
                        answer = await call(c, "gemini-files", {"action": "delete", "name": uri})
                        listed = await call(c, "gemini-files", {"action": "list"})
                        tried += 1
                        names = [f.get("name") for f in (listed.structured or {}).get("files") or []]
                        if uri not in names:
                            acted.append(f"{label}: the file was deleted")
                        unclear += internal(label, answer)
                        if not answer.is_error or OFFERED not in answer.text:
                            unclear.append(f"{label}: not named an invalid answer: {answer.text[:160]!r}")
        except Exception as exc:  # noqa: BLE001 - a hang or a dead server is the finding
            unclear.append(f"gemini-files after {tried} answers: {exc!r}"[:200])
        left = await left_running(w)
    return tried, acted, unclear, left


async def permissions(rounds: int) -> tuple[int, list[str], list[str], list[str]]:
    """(answers tried, commands run anyway, unclear or internal answers, processes left). One server and its warm
    CLI: each answer is tried on a command of its own."""
    tried, acted, unclear = 0, [], []
    with world("asking-warm", **WARM) as w:
        recorder = Recorder(None)
        try:
            async with w.relay.asking_client(recorder) as c:
                for n in range(rounds):
                    for index, raw in enumerate(HOSTILE):
                        marker = w.relay.project / f"ran-{n}-{index}.txt"
                        recorder.reply = off_schema(raw)
                        asked = len(recorder.asked)
                        label = f"permission #{n} answered {raw}"
                        answer = await call(c, "gemini-ask", {"prompt": f"[[fake:shell:touch {marker.name}]]"})
                        tried += 1
                        if len(recorder.asked) == asked:
                            unclear.append(f"{label}: the question never reached the client: {answer.text[:120]!r}")
                        if marker.exists():
                            acted.append(f"{label}: the command ran")
                        unclear += internal(label, answer)
                        if OFFERED not in answer.text:
                            unclear.append(f"{label}: not named an invalid answer: {answer.text[-300:]!r}")
        except Exception as exc:  # noqa: BLE001 - a hang or a dead server is the finding
            unclear.append(f"warm gemini-ask after {tried} answers: {exc!r}"[:200])
        left = await left_running(w)
    return tried, acted, unclear, left


async def attack(short: bool) -> list[Figure]:
    with client_sends_anything():
        files = await deletes(1 if short else 5)
        warm = await permissions(1 if short else 3)
    goal, warm_goal = (len(HOSTILE) * rounds for rounds in ((1, 1) if short else (5, 3)))
    return [
        at_least(CATEGORY, "off-form answers to gemini-files' delete question", files[0], goal),
        zero(CATEGORY, "files deleted on an off-form answer", files[1]),
        zero(CATEGORY, "delete answers not named invalid, hangs or internal error", files[2]),
        at_least(CATEGORY, "off-form answers to the warm CLI's permission question", warm[0], warm_goal),
        zero(CATEGORY, "commands run on an off-form answer", warm[1]),
        zero(CATEGORY, "permission answers not named invalid, hangs or internal error", warm[2]),
        zero(CATEGORY, "processes left (hostile answers)", files[3] + warm[3]),
    ]

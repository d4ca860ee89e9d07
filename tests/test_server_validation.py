"""A sweep of malformed values over every argument that shapes a run: each is refused in the validation shape,
before a job exists and before anything reaches the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

BAD_STRINGS = ["a\x00b", "x" * 5000, "../../../etc/passwd", "\x1b[31mred", "-rf", " ", "line\nbreak"]
# (tool, field, base arguments): the fields a backend would otherwise meet first in a job's supervisor.
FIELDS: list[tuple[str, str, dict[str, Any]]] = [
    (tool, field, base)
    for tool, base in (
        ("gemini-ask", {"prompt": "p"}),
        ("gemini-run", {"prompt": "p"}),
        ("gemini-plan", {"task": "t"}),
        ("gemini-brainstorm", {"prompt": "p"}),
    )
    for field in ("model", "conversationId", "agent")
    if not (tool in ("gemini-plan", "gemini-brainstorm") and field in ("conversationId", "agent"))
]


def job_dirs(state: Path) -> list[Path]:
    jobs = state / "jobs"
    return sorted(p for p in jobs.iterdir() if p.is_dir()) if jobs.is_dir() else []


async def test_every_malformed_run_argument_is_refused_with_its_field_and_no_job(relay: Relay, tmp_path: Path) -> None:
    state = tmp_path / "state"
    offences: list[str] = []
    async with relay.client(GEMINI_RELAY_STATE_DIR=str(state), GEMINI_RELAY_TOOLSETS="jobs") as client:
        for tool, field, base in FIELDS:
            for value in BAD_STRINGS:
                result = await client.call_tool(tool, {**base, field: value})
                text = text_of(result)
                expected = f"Error executing {tool}: Invalid arguments for {tool}: {field}"
                if not (result.is_error and text.startswith(expected)):
                    offences.append(f"{tool} {field}={value[:20]!r}: {text[:160]!r}")
        bad_dirs = await client.call_tool("gemini-ask", {"prompt": "p", "addDirs": ["/nonexistent/dir"]})
        assert text_of(bad_dirs).startswith("Error executing gemini-ask: Invalid arguments for gemini-ask: addDirs")
    assert not offences, "\n".join(offences)
    assert job_dirs(state) == []
    assert relay.main_requests() == []

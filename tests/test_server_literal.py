"""No `@` the relay leaves in a prompt makes the real Gemini CLI read a file, and `/name` runs no project command,
end to end through the server, the CLI 0.61.0 and the emulator. That every tool's text (search queries, diffs under
review) and allowSlashCommands reach the backend whole is proved in memory (inmemory/test_literal_text.py); that the
backend neutralises the whole text, and only an allowed slash survives, against the real CLI in
tests/backends/test_literal_prompt.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

KEYS = {"id_rsa": "RSA-SECRET-1", "keys/deploy.pem": "PEM-SECRET-2", ".env": "ENV-SECRET-3"}
OUTSIDE = "OUTSIDE-SECRET-4"
# Forms the relay's inliner does not take (no space before `@`, e-mail style, a name that matched nothing at
# the root so the CLI would glob for it, a trailing dot) and paths that leave the root.
HIDDEN = "x@id_rsa, mail a@id_rsa. also @deploy.pem and y@.env z@../outside.txt w@link/outside.txt"


def plant(relay: Relay) -> None:
    plant_keys(relay.project, relay.base)


def plant_keys(project: Path, base: Path) -> None:
    """Key files in `project`, a secret in `base` outside it, and a link from the project out to `base`."""
    for name, secret in KEYS.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(secret + "\n", encoding="utf-8")
    (base / "outside.txt").write_text(OUTSIDE + "\n", encoding="utf-8")
    (project / "link").symlink_to(base)


def leaked(relay: Relay) -> list[str]:
    sent = json.dumps([r.body for r in relay.api.requests], ensure_ascii=False)
    return [s for s in (*KEYS.values(), OUTSIDE) if s in sent]


async def test_no_at_or_slash_left_in_a_prompt_or_a_schema_description_reads_a_key_file_or_runs_a_command(
    relay: Relay,
) -> None:
    plant(relay)
    commands = relay.project / ".gemini" / "commands"
    commands.mkdir(parents=True)
    (commands / "x.toml").write_text('prompt = "TEMPLATE-TEXT-5"\n', encoding="utf-8")
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "description": f"see {HIDDEN}"}},
        "required": ["a"],
    }
    async with relay.client() as client:
        plain = await client.call_tool("gemini-ask", {"prompt": f"/x summarise {HIDDEN}"})
        relay.api.set_scenario("json", '{"a":"b"}')
        structured = await client.call_tool("gemini-ask", {"prompt": "fill it", "jsonSchema": schema})
    assert not plain.is_error and not structured.is_error, (text_of(plain), text_of(structured))
    assert text_of(structured).startswith("⚠️ jsonSchema: the Gemini CLI has no schema flag")
    assert text_of(structured).endswith('Gemini response:\n{"a":"b"}')
    assert len(relay.main_requests()) == 2
    assert leaked(relay) == []
    assert "TEMPLATE-TEXT-5" not in json.dumps([r.body for r in relay.api.requests])
    instruction = relay.main_requests()[1].body["contents"][0]["parts"][-1]["text"]
    assert '"required": ["a"]' in instruction  # the schema reached the model as an instruction

"""No `@` the relay leaves in a prompt makes the real Gemini CLI read a file, and `/name` runs no project command
unless allowSlashCommands: every tool's text, end to end through the server, the CLI 0.61.0 and the emulator."""

from __future__ import annotations

import json

import pytest

from tests.git_repo import GitRepo
from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

KEYS = {"id_rsa": "RSA-SECRET-1", "keys/deploy.pem": "PEM-SECRET-2", ".env": "ENV-SECRET-3"}
OUTSIDE = "OUTSIDE-SECRET-4"
# Forms the relay's inliner does not take (no space before `@`, e-mail style, a name that matched nothing at
# the root so the CLI would glob for it, a trailing dot) and paths that leave the root.
HIDDEN = "x@id_rsa, mail a@id_rsa. also @deploy.pem and y@.env z@../outside.txt w@link/outside.txt"


def plant(relay: Relay) -> None:
    for name, secret in KEYS.items():
        (relay.project / name).parent.mkdir(parents=True, exist_ok=True)
        (relay.project / name).write_text(secret + "\n", encoding="utf-8")
    (relay.base / "outside.txt").write_text(OUTSIDE + "\n", encoding="utf-8")
    (relay.project / "link").symlink_to(relay.base)


def leaked(relay: Relay) -> list[str]:
    sent = json.dumps([r.body for r in relay.api.requests], ensure_ascii=False)
    return [s for s in (*KEYS.values(), OUTSIDE) if s in sent]


async def test_no_at_left_in_a_prompt_or_a_schema_description_reads_a_key_file(relay: Relay) -> None:
    plant(relay)
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": f"see {HIDDEN}"}}}
    async with relay.client() as client:
        plain = await client.call_tool("gemini-ask", {"prompt": f"summarise {HIDDEN}"})
        relay.api.set_scenario("json", '{"a":"b"}')
        structured = await client.call_tool("gemini-ask", {"prompt": "fill it", "jsonSchema": schema})
    assert not plain.is_error and not structured.is_error, (text_of(plain), text_of(structured))
    assert len(relay.main_requests()) == 2
    assert leaked(relay) == []


async def test_no_at_in_a_search_query_or_a_diff_under_review_reads_a_key_file(relay: Relay) -> None:
    plant(relay)
    repo = GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    repo.write({"app.py": f"def main():\n    return '{HIDDEN}'\n"})
    review = {"GEMINI_RELAY_TOOLSETS": "review"}
    async with relay.client(**review) as client:
        search = await client.call_tool("gemini-search", {"query": f"what is {HIDDEN}"})
        reviewed = await client.call_tool("gemini-review", {"depth": "scan", "focus": f"look at {HIDDEN}"})
    assert not search.is_error and not reviewed.is_error, (text_of(search), text_of(reviewed))
    assert len(relay.main_requests()) >= 2
    assert leaked(relay) == []


async def test_a_prompt_starting_with_a_slash_runs_no_project_command_unless_allowed(relay: Relay) -> None:
    commands = relay.project / ".gemini" / "commands"
    commands.mkdir(parents=True)
    (commands / "x.toml").write_text('prompt = "TEMPLATE-TEXT-5"\n', encoding="utf-8")
    async with relay.client() as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "/x hello"})
        assert "TEMPLATE-TEXT-5" not in json.dumps([r.body for r in relay.api.requests])
        allowed = await client.call_tool("gemini-ask", {"prompt": "/x hello", "allowSlashCommands": True})
    assert not refused.is_error and not allowed.is_error
    assert "TEMPLATE-TEXT-5" in json.dumps(relay.main_requests()[-1].body)

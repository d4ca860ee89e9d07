"""Prompt text the Gemini CLI takes literally, proved against the real 0.61.0 binary and the emulator.

Each real-CLI test first shows the hole with the raw text (the CLI reads the file or runs the template), then
shows the neutralised text reaching the model without it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gemini_relay.backends.literal_prompt import (
    neutralise_at_references,
    neutralise_prompt,
    neutralise_slash_command,
)
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import isolated_cli_env
from tests.harness import TEST_MODEL, gemini_binary

SECRETS = {"id_rsa": "RSA-SECRET-1", "sub/deep.key": "GLOB-SECRET-2", "sub/.env.local": "ENV-SECRET-3"}
OUTSIDE = "OUTSIDE-SECRET-4"
TEMPLATE = "TEMPLATE-TEXT-5"
# Forms the relay's own inliner leaves alone: no space before `@`, a name that matched nothing at the root
# (the CLI globs for it), a trailing dot, e-mail style, a hunk header, a quoted path, paths leaving the root.
AT_FORMS = (
    "x@id_rsa and mail a@id_rsa. then @deep.key, (@sub/.env.local) @@ -1,3 +1,4 @@ "
    '@"sub/deep.key" y@../outside.txt z@link/outside.txt'
)


def test_every_at_the_cli_could_expand_gets_its_backslash() -> None:
    assert neutralise_at_references('x@a (@b) @"c d" @@ -1 +1 @@') == 'x\\@a (\\@b) \\@"c d" \\@@ -1 +1 \\@@'


def test_an_at_the_cli_would_not_expand_stays_as_it_is() -> None:
    text = "a lone @ here, @; @) @. end @.\n@\t\\@escaped and at the end @"
    assert neutralise_at_references(text) == text


def test_a_dot_after_at_expands_unless_it_ends_the_word() -> None:
    assert neutralise_at_references("@.env") == "\\@.env"
    assert neutralise_at_references("see @.") == "see @."


def test_a_leading_slash_command_gets_a_leading_space_but_comments_and_double_slashes_do_not() -> None:
    assert neutralise_slash_command("/x run") == " /x run"
    assert neutralise_slash_command("// a comment") == "// a comment"
    assert neutralise_slash_command("/* c */") == "/* c */"
    assert neutralise_slash_command("run /x") == "run /x"


def test_slash_commands_survive_only_when_allowed() -> None:
    assert neutralise_prompt("/x @a", allow_slash_commands=True) == "/x \\@a"
    assert neutralise_prompt("/x @a", allow_slash_commands=False) == " /x \\@a"


@dataclass
class CliWorld:
    base: Path
    project: Path
    api: FakeGeminiApi
    env: dict[str, str]

    def run(self, prompt: str) -> str:
        """One real CLI run with `prompt` on stdin; returns everything its agent-turn requests carried."""
        before = len(self.api.requests)
        done = subprocess.run(
            [str(gemini_binary()), "--output-format", "stream-json", "-m", TEST_MODEL],
            input=prompt,
            text=True,
            capture_output=True,
            cwd=self.project,
            env=self.env,
            timeout=120,
            start_new_session=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        main = [r.body for r in self.api.requests[before:] if r.kind == "main"]
        assert main, done.stderr[-2000:]
        return json.dumps(main, ensure_ascii=False)


@pytest.fixture
def cli_world(tmp_path: Path) -> Iterator[CliWorld]:
    project = tmp_path / "proj"
    for name, secret in SECRETS.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(secret + "\n", encoding="utf-8")
    (tmp_path / "outside.txt").write_text(OUTSIDE + "\n", encoding="utf-8")
    (project / "link").symlink_to(tmp_path)
    commands = project / ".gemini" / "commands"
    commands.mkdir(parents=True)
    (commands / "x.toml").write_text(f'prompt = "{TEMPLATE}"\n', encoding="utf-8")
    with FakeGeminiApi() as api:
        yield CliWorld(tmp_path, project, api, {"LANG": "C.UTF-8", **isolated_cli_env(tmp_path, api.base_url)})


def test_the_real_cli_reads_no_file_for_a_neutralised_at(cli_world: CliWorld) -> None:
    raw = cli_world.run(AT_FORMS)
    assert SECRETS["id_rsa"] in raw and SECRETS["sub/deep.key"] in raw  # the hole, as the CLI ships
    sent = cli_world.run(neutralise_prompt(AT_FORMS, allow_slash_commands=False))
    assert not [s for s in (*SECRETS.values(), OUTSIDE) if s in sent]
    assert "x\\\\@id_rsa and mail a\\\\@id_rsa." in sent  # the prose reached the model, escape and all


def test_the_real_cli_runs_no_project_command_for_a_neutralised_slash(cli_world: CliWorld) -> None:
    assert TEMPLATE in cli_world.run("/x hello")  # the hole, as the CLI ships
    sent = cli_world.run(neutralise_prompt("/x hello", allow_slash_commands=False))
    assert TEMPLATE not in sent
    assert " /x hello" in sent

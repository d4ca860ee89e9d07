"""Setup edits files the user owns, so it loses no byte of them: a link to a dotfile not made yet stays a link; a
file the Claude CLI made that the user has edited since stays; JSON numbers come back as the file wrote them; the
user's comments in and next to setup's Codex table stay on --remove; two setups at once keep both records; a folder,
a FIFO or an unwritable string at a config's path is refused with a line and the next client is still written; a file
its owner could not write is not replaced (even by root), and one setup may write keeps its owner."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.real_clients import NODE22
from tests.setup.fake_claude import install_fake_claude, on_path
from tests.setup.homes import SetupHome

WAIT = 60.0
CURSOR = ".cursor/mcp.json"
VSCODE = ".config/Code/User/mcp.json"


def setup_process(*args: str, **env: str) -> subprocess.Popen[str]:
    """`python -m gemini_relay setup ...` in the fixture's home, as its own process."""
    return subprocess.Popen(
        [sys.executable, "-m", "gemini_relay", "setup", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
        start_new_session=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Its stdout and stderr once it exits; killed (its group) and failed when it does not within WAIT."""
    try:
        return process.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"{process.args!r} did not finish within {WAIT:g}s")


def test_a_link_to_a_dotfile_not_made_yet_stays_a_link_and_remove_deletes_only_its_target(
    home: SetupHome, tmp_path: Path
) -> None:
    dotfile = tmp_path / "dotfiles" / "cursor-mcp.json"
    dotfile.parent.mkdir()
    link = home.file(CURSOR)
    link.parent.mkdir()
    link.symlink_to(dotfile)
    added = home.setup("--client", "cursor", "--yes")
    assert added.code == 0, added.out
    assert link.is_symlink() and "gemini-relay" in json.loads(dotfile.read_text(encoding="utf-8"))["mcpServers"]
    removed = home.setup("--client", "cursor", "--remove", "--yes")
    assert removed.code == 0, removed.out
    assert link.is_symlink() and link.readlink() == dotfile  # the user's link, as it was
    assert not dotfile.exists()  # setup made it, nothing changed it since
    assert "the link stays" in removed.out


def test_a_file_the_claude_cli_made_in_a_new_claude_folder_stays_once_the_user_edited_it(home: SetupHome) -> None:
    install_fake_claude(on_path())
    added = home.setup("--client", "claude-code", "--yes")
    settings = home.file(".claude/settings.json")
    assert added.code == 0, added.out
    assert settings.exists()
    settings.write_text('{"theme": "mine"}\n', encoding="utf-8")
    removed = home.setup("--client", "claude-code", "--remove", "--yes")
    assert removed.code == 0, removed.out
    assert settings.read_text(encoding="utf-8") == '{"theme": "mine"}\n'
    assert not home.file(".claude.json").exists()  # setup's own file, unchanged since: gone


def test_json_numbers_come_back_as_the_file_wrote_them(home: SetupHome) -> None:
    text = '{\n  "limit": 1e400,\n  "ratio": 1.50,\n  "big": 123456789012345678901234567890,\n  "neg": -0\n}\n'
    home.file(CURSOR, text)
    added = home.setup("--client", "cursor", "--yes")
    written = home.file(CURSOR).read_text(encoding="utf-8")
    assert added.code == 0, added.out
    assert '"limit": 1e400' in written and '"ratio": 1.50' in written and "Infinity" not in written
    assert '"big": 123456789012345678901234567890' in written and '"neg": -0' in written
    if NODE22.exists():  # the reader that matters: Cursor and VS Code are Node
        parsed = subprocess.run(
            [
                str(NODE22),
                "-e",
                "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'))",
                str(home.file(CURSOR)),
            ],
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        assert parsed.returncode == 0, parsed.stderr


def test_remove_keeps_the_users_comments_inside_and_next_to_setups_codex_table(home: SetupHome) -> None:
    users = 'model = "gpt-5.4"  # mine\n'
    home.file(".codex/config.toml", users)
    home.setup("--client", "codex", "--yes")
    config = home.file(".codex/config.toml")
    text = config.read_text(encoding="utf-8")
    text = text.replace("[mcp_servers.gemini-relay]\n", "[mcp_servers.gemini-relay]\n# the relay goes first\n")
    text = text.replace("required = true\n", "required = true  # keep waiting for it\n")
    text += '# my profiles below\n\n[profiles.fast]\nmodel = "o4"\n'
    config.write_text(text, encoding="utf-8")
    removed = home.setup("--client", "codex", "--remove", "--yes")
    after = config.read_text(encoding="utf-8")
    assert removed.code == 0, removed.out
    for comment in ("# the relay goes first", "# keep waiting for it", "# my profiles below", "# mine"):
        assert comment in after, after
    assert tomllib.loads(after) == {"model": "gpt-5.4", "profiles": {"fast": {"model": "o4"}}}
    assert (
        after
        == users
        + "# the relay goes first\n# keep waiting for it\n"
        + '# my profiles below\n\n[profiles.fast]\nmodel = "o4"\n'
    )


def test_two_setups_at_once_both_stay_recorded_and_remove_undoes_both(home: SetupHome, tmp_path: Path) -> None:
    install_fake_claude(on_path())
    gate_path = tmp_path / "gate.sock"
    with socket.socket(socket.AF_UNIX) as gate:
        gate.bind(str(gate_path))
        gate.listen(1)
        gate.settimeout(WAIT)
        first = setup_process("--client", "claude-code", "--yes", FAKE_CLAUDE_GATE=str(gate_path))
        held, _ = gate.accept()  # the first setup is inside its write now
        second = setup_process("--client", "cursor", "--yes")
        with selectors.DefaultSelector() as ready:  # it waits for the lock (says so), or (no lock) finishes
            assert second.stderr is not None
            ready.register(second.stderr, selectors.EVENT_READ)
            assert ready.select(WAIT), "the second setup neither waited nor finished"
        held.sendall(b"g")
        held.close()
        outs = [finish(process) for process in (first, second)]
    assert (first.returncode, second.returncode) == (0, 0), outs
    assert "waiting for it to finish" in outs[1][1]
    record = home.record()
    assert record is not None
    assert {str(home.file(".claude.json")), str(home.file(CURSOR))} <= set(record["files"])
    removed = home.setup("--remove", "--yes")
    assert removed.code == 0, removed.out
    assert not home.file(CURSOR).exists() and not home.file(".claude.json").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo", "lone-surrogate"])
def test_a_config_setup_cannot_read_is_refused_with_a_line_and_the_next_client_is_still_written(
    home: SetupHome, kind: str
) -> None:
    path = home.file(CURSOR)
    path.parent.mkdir()
    if kind == "folder":
        path.mkdir()
        why = "it is a folder, not a file"
    elif kind == "fifo":
        os.mkfifo(path)
        why = "it is a FIFO, not a file"
    else:
        path.write_text('{"name": "\\ud800"}\n', encoding="utf-8")
        why = "a string in it holds a lone surrogate (\\ud800)"
    run = setup_process("--client", "cursor", "--client", "vscode", "--yes")
    out, err = finish(run)  # a FIFO is never waited on
    assert run.returncode == 1, out + err
    assert f"cannot read ~/{CURSOR}: {why}" in out, out
    assert "Traceback" not in err, err
    assert home.json(VSCODE)["servers"]["gemini-relay"]["type"] == "stdio"


def test_a_config_its_owner_cannot_write_is_not_replaced_even_by_root(home: SetupHome) -> None:
    text = '{"mcpServers": {}}\n'
    path = home.file(CURSOR, text)
    path.chmod(0o444)
    refused = home.setup("--client", "cursor", "--client", "vscode", "--yes")
    assert refused.code == 1
    assert f"cannot write ~/{CURSOR}: it is read-only for" in refused.out and "(mode 0444)" in refused.out
    assert "add it by hand" in refused.out
    assert path.read_text(encoding="utf-8") == text and path.stat().st_mode & 0o777 == 0o444
    assert not Path(f"{path}.gemini-relay-backup").exists()
    assert home.json(VSCODE)["servers"]["gemini-relay"]["type"] == "stdio"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_config_root_writes_for_its_owner_keeps_that_owner_and_mode(home: SetupHome) -> None:
    path = home.file(CURSOR, '{"mcpServers": {}}\n')
    path.chmod(0o640)
    os.chown(path, 12345, 23456)
    added = home.setup("--client", "cursor", "--yes")
    info = path.stat()
    assert added.code == 0, added.out
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (12345, 23456, 0o640)
    assert "gemini-relay" in home.json(CURSOR)["mcpServers"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"limit": NaN}\n', "it holds NaN, which is not JSON"),
        ('{"a": 1, "a": 2}\n', 'it holds the key "a" twice in one object'),
    ],
    ids=["nan", "duplicate-key"],
)
def test_json_that_cannot_come_back_as_it_was_is_refused_and_left_as_it_is(
    home: SetupHome, text: str, why: str
) -> None:
    path = home.file(CURSOR, text)
    refused = home.setup("--client", "cursor", "--yes")
    assert refused.code == 1
    assert f"cannot read ~/{CURSOR}: {why}" in refused.out, refused.out
    assert path.read_text(encoding="utf-8") == text

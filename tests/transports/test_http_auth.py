"""HTTP is authenticated by default: with no token configured, `--http` makes one (0600 in the state dir, reused),
says on stderr how a client and the job page present it, and only `--no-auth` serves without one.

Each test runs the real `gemini-relay --http` on a fresh state dir.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx2

from tests.executables import relay_command
from tests.transports.http_server import ACCEPT, INIT, STORED_TOKEN, bare_env, serve_http

START_TIMEOUT = 60.0


def post(url: str, token: str | None = None) -> int:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    with httpx2.Client(timeout=30) as http:
        return http.post(url, content=json.dumps(INIT), headers=headers).status_code


def relay(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return relay_command(*args, env=env)


def test_http_without_a_token_makes_one_and_answers_an_unauthenticated_request_with_401(tmp_path: Path) -> None:
    env = bare_env(tmp_path)
    log = tmp_path / "stderr.log"
    with serve_http(env, tmp_path, log) as server:
        assert post(server.url) == 401
        stored = tmp_path / "state" / STORED_TOKEN
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert server.token and len(server.token) >= 32
        assert post(server.url, server.token) == 200
        first, port = server.token, server.port
    # Its stderr is not a terminal: the startup lines name the header and the page URL, but not the token.
    text = log.read_text(encoding="utf-8")
    assert f"Authorization: Bearer <the first line of {stored}>" in text
    assert f"Job page at http://127.0.0.1:{port}/#token=<the same token>" in text
    assert first not in text
    with serve_http(env, tmp_path, log) as again:
        assert again.token == first  # reused on the next start
        assert post(again.url, first) == 200


def test_on_a_terminal_the_startup_lines_give_the_exact_header_and_page_url(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gemini_relay", "--http", "127.0.0.1:0"],
        cwd=tmp_path,
        env=bare_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while b"Job page at" not in seen or not seen.endswith(b"\n"):
            ready, _, _ = select.select([leader], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no startup lines within {START_TIMEOUT}s: {seen!r}"
            seen += os.read(leader, 65536)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        os.close(leader)
    text = seen.decode()
    token = (tmp_path / "state" / STORED_TOKEN).read_text(encoding="utf-8").strip()
    port = re.search(r"Serving MCP over HTTP at http://127\.0\.0\.1:(\d+)/mcp", text)
    assert port, text
    assert f"Authorization: Bearer {token}\r\n" in text
    assert f"Job page at http://127.0.0.1:{port.group(1)}/#token={token}\r\n" in text


def test_no_auth_serves_without_a_token_and_says_what_that_means(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with serve_http(bare_env(tmp_path), tmp_path, log, "--no-auth") as server:
        assert post(server.url) == 200
    text = log.read_text(encoding="utf-8")
    assert "NO AUTHENTICATION (--no-auth): anyone who can reach 127.0.0.1" in text
    assert "can run tools and read every job" in text
    assert not (tmp_path / "state" / STORED_TOKEN).exists()
    help_text = relay(["--help"], bare_env(tmp_path)).stdout
    assert "--no-auth" in help_text and "anyone who can reach" in " ".join(help_text.split())


def test_no_auth_with_a_token_configured_is_refused_at_startup(tmp_path: Path) -> None:
    env = {**bare_env(tmp_path), "GEMINI_RELAY_HTTP_TOKEN": "tok"}
    refused = relay(["--http", "127.0.0.1:0", "--no-auth"], env)
    assert refused.returncode == 2
    assert "--no-auth" in refused.stderr and "GEMINI_RELAY_HTTP_TOKEN" in refused.stderr
    token_file = tmp_path / "token"
    token_file.write_text("t\n", encoding="utf-8")
    both = relay(["--http", "127.0.0.1:0", "--no-auth", "--token-file", str(token_file)], bare_env(tmp_path))
    assert both.returncode == 2 and "--no-auth" in both.stderr


def test_a_token_file_or_the_environment_still_set_the_token_and_none_is_made(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n", encoding="utf-8")
    token_file.chmod(0o600)
    env = {**bare_env(tmp_path), "GEMINI_RELAY_HTTP_TOKEN": "from-env"}
    with serve_http(env, tmp_path, tmp_path / "stderr.log", "--token-file", str(token_file)) as server:
        assert post(server.url, "from-file") == 200
        assert post(server.url, "from-env") == 401
    with serve_http(env, tmp_path, tmp_path / "stderr.log") as server:
        assert post(server.url, "from-env") == 200
    assert not (tmp_path / "state" / STORED_TOKEN).exists()
    text = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert f"Authorization: Bearer <the first line of {token_file}>" in text
    assert "Authorization: Bearer <$GEMINI_RELAY_HTTP_TOKEN>" in text


def test_a_stored_token_other_users_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    stored = tmp_path / "state" / STORED_TOKEN
    stored.parent.mkdir()
    stored.write_text("leaked\n", encoding="utf-8")
    stored.chmod(0o644)
    refused = relay(["--http", "127.0.0.1:0"], bare_env(tmp_path))
    assert refused.returncode == 2
    assert f"{stored} is readable by other users" in refused.stderr and "remove it" in refused.stderr


def test_a_stored_token_path_that_is_a_directory_is_refused_with_the_fix_not_a_traceback(tmp_path: Path) -> None:
    stored = tmp_path / "state" / STORED_TOKEN
    stored.mkdir(parents=True)
    refused = relay(["--http", "127.0.0.1:0"], bare_env(tmp_path))
    assert refused.returncode == 2
    assert f"{stored} is a directory" in refused.stderr and "remove it" in refused.stderr
    assert "Traceback" not in refused.stderr

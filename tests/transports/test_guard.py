"""Which addresses the HTTP listener accepts, and where its token comes from (in-process, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.errors import ConfigError
from gemini_relay.transports.address import Address, parse_address, require_loopback
from gemini_relay.transports.token import http_auth, load_token
from tests.executables import relay_command


def test_the_address_defaults_to_127_0_0_1_port_8765() -> None:
    assert parse_address(None) == Address("127.0.0.1", 8765)
    assert parse_address("") == Address("127.0.0.1", 8765)
    assert parse_address(":9000") == Address("127.0.0.1", 9000)
    assert parse_address("localhost") == Address("localhost", 8765)
    assert parse_address("[::1]:9001") == Address("::1", 9001)


@pytest.mark.parametrize("raw", ["127.0.0.1:http", "127.0.0.1:70000", "::1:9000", "[::1"])
def test_a_malformed_address_is_refused_with_the_form_expected(raw: str) -> None:
    with pytest.raises(ConfigError, match="--http"):
        parse_address(raw)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost", "127.1"])
def test_loopback_addresses_and_names_resolving_only_to_loopback_are_accepted(host: str) -> None:
    require_loopback(Address(host, 8765))


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("0.0.0.0", "0.0.0.0: it means every interface"),
        ("::", r"\[::\]: it means every interface"),
        ("192.168.1.5", "192.168.1.5: not a loopback address"),
        ("10.1", "10.1: it resolves to 10.0.0.1, not loopback"),  # a name (inet_aton shorthand) for a LAN address
    ],
)
def test_any_other_address_is_refused_with_the_reason(host: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=f"refusing to listen on {reason}"):
        require_loopback(Address(host, 8765))


def test_the_command_refuses_a_wildcard_bind_at_startup_with_exit_code_2(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GEMINI_RELAY_STATE_DIR": str(tmp_path / "state")}
    proc = relay_command("--http", "0.0.0.0:8765", env=env)
    assert proc.returncode == 2
    assert "gemini-relay: refusing to listen on 0.0.0.0: it means every interface; use 127.0.0.1" in proc.stderr


def test_a_token_file_gives_its_first_line_and_wins_over_the_environment_which_wins_over_the_stored_one(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  s3cret \nignored\n", encoding="utf-8")
    token_file.chmod(0o600)
    state = tmp_path / "state"
    env = {"GEMINI_RELAY_HTTP_TOKEN": "from-env"}
    assert http_auth(token_file, state, env, no_auth=False).token == "s3cret"
    assert http_auth(None, state, env, no_auth=False).token == "from-env"
    assert not state.exists()  # nothing is made while a token is configured
    made = http_auth(None, state, {"GEMINI_RELAY_HTTP_TOKEN": " "}, no_auth=False)
    assert made.token and made.token == (state / "http-token").read_text(encoding="utf-8").strip()
    assert http_auth(None, state, {}, no_auth=False) == made  # reused
    assert http_auth(None, state, {}, no_auth=True).token is None


def test_an_empty_or_missing_token_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is empty"):
        load_token(empty)
    with pytest.raises(ConfigError, match="cannot read the token file"):
        load_token(tmp_path / "missing")


def test_a_stored_token_that_is_a_symlink_or_empty_is_refused_and_a_race_yields_one_token(tmp_path: Path) -> None:
    from gemini_relay.transports.token import stored_token

    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "elsewhere").write_text("x\n", encoding="utf-8")
    (state / "http-token").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="cannot read the stored HTTP token"):
        stored_token(state / "http-token")
    (state / "http-token").unlink()
    (state / "http-token").write_text("\n", encoding="utf-8")
    (state / "http-token").chmod(0o600)
    with pytest.raises(ConfigError, match="is empty; remove it"):
        stored_token(state / "http-token")
    tokens = {stored_token(tmp_path / "fresh" / "http-token") for _ in range(3)}
    assert len(tokens) == 1 and sorted(p.name for p in (tmp_path / "fresh").iterdir()) == ["http-token"]

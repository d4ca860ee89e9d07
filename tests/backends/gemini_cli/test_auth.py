"""The Gemini CLI's own decisions, read from its files and environment as it reads them: the auth type it picks
(settings first, then the environment in its order), what that type still needs, and whether it trusts the folder.
The cases tests/test_server_doctor.py runs through the real CLI are the proof; these cover the rest of the rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gemini_relay.backends.gemini_cli.auth import acp_auth, cli_auth
from gemini_relay.backends.gemini_cli.cli_config import CliView, read_cli_view


def world(tmp_path: Path, settings: dict[str, Any] | None = None, **env: str) -> tuple[Path, dict[str, str]]:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".gemini").mkdir(parents=True)
    project.mkdir()
    if settings is not None:
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    system = tmp_path / "system" / "settings.json"
    return project, {"HOME": str(home), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system), **env}


def view(tmp_path: Path, settings: dict[str, Any] | None = None, **env: str) -> CliView:
    project, environ = world(tmp_path, settings, **env)
    return read_cli_view(environ, project)


def test_the_environment_order_is_the_clis_vertex_before_the_base_url_before_the_key(tmp_path: Path) -> None:
    both = view(tmp_path, GEMINI_API_KEY="k", GOOGLE_GENAI_USE_VERTEXAI="true", GOOGLE_GEMINI_BASE_URL="http://x")
    verdict = cli_auth(both)
    assert verdict.auth_type == "vertex-ai" and not verdict.ok
    assert verdict.summary.endswith("; GEMINI_API_KEY is set but not used")


def test_a_key_alone_is_the_api_key_type(tmp_path: Path) -> None:
    verdict = cli_auth(view(tmp_path, GEMINI_API_KEY="k"))
    assert (verdict.auth_type, verdict.ok) == ("gemini-api-key", True)


def test_nothing_at_all_says_to_set_the_key(tmp_path: Path) -> None:
    verdict = cli_auth(view(tmp_path))
    assert verdict.auth_type is None and "Set GEMINI_API_KEY" in verdict.fix


def test_system_settings_outrank_the_users(tmp_path: Path) -> None:
    project, environ = world(tmp_path, {"security": {"auth": {"selectedType": "gemini-api-key"}}}, GEMINI_API_KEY="k")
    system = Path(environ["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    system.parent.mkdir()
    system.write_text('{"security": {"auth": {"selectedType": "cloud-shell"}}}', encoding="utf-8")
    verdict = cli_auth(read_cli_view(environ, project))
    assert verdict.auth_type == "cloud-shell" and not verdict.ok and str(system) in verdict.fix


def test_settings_may_hold_comments(tmp_path: Path) -> None:
    project, environ = world(tmp_path, GEMINI_API_KEY="k")
    text = '{\n  // the key\n  "security": {"auth": {"selectedType": "gemini-api-key" /* url: "http://a" */}}\n}'
    (Path(environ["HOME"]) / ".gemini" / "settings.json").write_text(text, encoding="utf-8")
    seen = read_cli_view(environ, project)
    assert seen.errors == [] and cli_auth(seen).ok


def test_a_broken_settings_file_is_an_error_the_cli_would_stop_on(tmp_path: Path) -> None:
    project, environ = world(tmp_path)
    (Path(environ["HOME"]) / ".gemini" / "settings.json").write_text("{nope", encoding="utf-8")
    assert "is not valid JSON" in read_cli_view(environ, project).errors[0]


def test_a_workspace_settings_file_counts_only_in_a_trusted_folder(tmp_path: Path) -> None:
    project, environ = world(tmp_path, GEMINI_API_KEY="k")
    (project / ".gemini").mkdir()
    (project / ".gemini" / "settings.json").write_text('{"security":{"auth":{"selectedType":"gateway"}}}', "utf-8")
    assert cli_auth(read_cli_view(environ, project)).auth_type == "gemini-api-key"  # untrusted: ignored
    trusted = read_cli_view({**environ, "GEMINI_CLI_TRUST_WORKSPACE": "true"}, project)
    assert cli_auth(trusted).auth_type == "gateway"


def test_a_google_login_without_a_saved_login_is_not_ready(tmp_path: Path) -> None:
    verdict = cli_auth(view(tmp_path, GOOGLE_GENAI_USE_GCA="true", GEMINI_API_KEY="k"))
    assert verdict.auth_type == "oauth-personal" and not verdict.ok and "unset GOOGLE_GENAI_USE_GCA" in verdict.fix


def test_an_enforced_type_the_cli_would_not_use_is_not_ready(tmp_path: Path) -> None:
    settings = {"security": {"auth": {"selectedType": "gemini-api-key", "enforcedType": "vertex-ai"}}}
    verdict = cli_auth(view(tmp_path, settings, GEMINI_API_KEY="k"))
    assert not verdict.ok and "enforce vertex-ai" in verdict.summary


def test_trust_rules_take_the_longest_match_and_a_parent_rule_trusts_its_siblings(tmp_path: Path) -> None:
    project, environ = world(tmp_path)
    rules = tmp_path / "trusted.json"
    environ["GEMINI_CLI_TRUSTED_FOLDERS_PATH"] = str(rules)
    rules.write_text(json.dumps({str(tmp_path / "elsewhere"): "TRUST_PARENT"}), encoding="utf-8")
    assert read_cli_view(environ, project).trust.trusted  # the parent of `elsewhere` holds the project
    rules.write_text(json.dumps({str(tmp_path): "TRUST_FOLDER", str(project): "DO_NOT_TRUST"}), encoding="utf-8")
    seen = read_cli_view(environ, project).trust
    assert not seen.trusted and "DO_NOT_TRUST" in seen.why


def test_an_invalid_trust_file_is_an_error(tmp_path: Path) -> None:
    project, environ = world(tmp_path)
    (Path(environ["HOME"]) / ".gemini" / "trustedFolders.json").write_text('{"/x": "YES"}', encoding="utf-8")
    seen = read_cli_view(environ, project)
    assert not seen.trust.trusted and "invalid trust level" in seen.errors[0]


def test_an_untrusted_folders_env_file_gives_only_the_credential_variables(tmp_path: Path) -> None:
    project, environ = world(tmp_path)
    (project / ".env").write_text("GEMINI_API_KEY='from-file'\nGOOGLE_GENAI_USE_VERTEXAI=true\n", encoding="utf-8")
    seen = read_cli_view(environ, project)
    assert seen.env["GEMINI_API_KEY"] == "from-file" and "GOOGLE_GENAI_USE_VERTEXAI" not in seen.env
    assert read_cli_view({**environ, "GEMINI_API_KEY": "own"}, project).env["GEMINI_API_KEY"] == "own"


def test_warm_runs_pick_their_type_as_acp_mode_does_not_as_headless_runs_do(tmp_path: Path) -> None:
    """Gemini CLI 0.61.0's session/new: selectedType, else `gateway` with GOOGLE_GEMINI_BASE_URL, else the key;
    the GOOGLE_GENAI_USE_* switches are not read, and `gateway` is accepted."""
    gateway = acp_auth(view(tmp_path / "a", GEMINI_API_KEY="k", GOOGLE_GEMINI_BASE_URL="http://x"))
    assert (gateway.auth_type, gateway.ok) == ("gateway", True)
    assert not cli_auth(view(tmp_path / "b", GEMINI_API_KEY="k", GOOGLE_GEMINI_BASE_URL="http://x")).ok  # exit 41
    vertex_switch = acp_auth(view(tmp_path / "c", GEMINI_API_KEY="k", GOOGLE_GENAI_USE_VERTEXAI="true"))
    assert (vertex_switch.auth_type, vertex_switch.ok) == ("gemini-api-key", True)
    no_key = acp_auth(view(tmp_path / "d"))
    assert (no_key.auth_type, no_key.ok) == ("gemini-api-key", False) and "Set GEMINI_API_KEY" in no_key.fix
    unknown = acp_auth(view(tmp_path / "e", {"security": {"auth": {"selectedType": "cloud-shell"}}}))
    assert not unknown.ok and 'selectedType to "gemini-api-key"' in unknown.fix

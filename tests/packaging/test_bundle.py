"""The MCP Bundle (`.mcpb`): mcpb/manifest.json (manifest 0.4, server type `uv`) passes the official CLI's
validation, packs with the built wheel and its uv.lock, and, unpacked as a host unpacks it, starts the way a host
starts it: the launch command is the one the official library's getMcpConfigForManifest makes from the manifest and
the user's settings (what Claude Desktop runs), and uv installs the bundle's environment (offline here, from the warm
cache: a host does the same with the network)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from gemini_relay import __version__
from tests.harness import node_available
from tests.packaging.artifacts import MCPB_SOURCE, WHEEL_NAME, offline_env, run
from tests.packaging.test_dist import DEFAULT_TOOLS, serve_and_ping
from tests.real_clients import MCPB, NODE_MODULES, PINNED, installed_version, require

MANIFEST = MCPB_SOURCE / "manifest.json"
MCPB_LIBRARY = NODE_MODULES / "@anthropic-ai" / "mcpb" / "dist" / "index.js"
# What a host does with an installed bundle's manifest and the user's settings: mcpb's own getMcpConfigForManifest.
HOST_CONFIG_JS = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [library, manifestPath, extensionPath, userConfig, home] = process.argv.slice(-5);
const { getMcpConfigForManifest } = await import(pathToFileURL(library).href);
const config = await getMcpConfigForManifest({
  manifest: JSON.parse(readFileSync(manifestPath, "utf8")),
  extensionPath,
  systemDirs: { HOME: home, DESKTOP: `${home}/Desktop`, DOCUMENTS: `${home}/Documents` },
  userConfig: JSON.parse(userConfig),
  pathSeparator: "/",
});
process.stdout.write(JSON.stringify(config ?? null));
"""


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return loaded


def host_config(extension: Path, user_config: dict[str, str], home: Path) -> dict[str, Any]:
    if not node_available():
        pytest.skip("node is not installed")
    library = require(MCPB_LIBRARY, "@anthropic-ai/mcpb")
    argv: list[str | Path] = ["node", "--input-type=module", "-e", HOST_CONFIG_JS]
    out = run([*argv, library, extension / "manifest.json", extension, json.dumps(user_config), home])
    config: dict[str, Any] | None = json.loads(out)
    assert config is not None, "the host would not start the bundle (a required setting missing)"
    return config


def test_the_manifest_passes_the_official_mcpb_validation_of_the_pinned_cli() -> None:
    out = run([require(MCPB, "@anthropic-ai/mcpb"), "validate", MANIFEST])
    assert "Manifest schema validation passes!" in out
    assert installed_version("@anthropic-ai/mcpb") == PINNED["@anthropic-ai/mcpb"]  # 2.1.2: manifest 0.4, type uv


def test_the_manifest_is_a_uv_bundle_of_this_version_listing_the_default_tools() -> None:
    m = manifest()
    assert (m["manifest_version"], m["name"], m["version"]) == ("0.4", "gemini-relay", __version__)
    assert m["server"]["type"] == "uv"
    assert (MCPB_SOURCE / m["server"]["entry_point"]).is_file()
    assert [tool["name"] for tool in m["tools"]] == DEFAULT_TOOLS
    assert m["compatibility"]["runtimes"]["python"] == ">=3.11"
    project = tomllib.loads((MCPB_SOURCE / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["version"] == __version__
    assert project["project"]["dependencies"] == [f"gemini-relay=={__version__}"]
    assert project["tool"]["uv"]["sources"]["gemini-relay"] == {"path": WHEEL_NAME}


def test_the_user_settings_are_the_api_key_as_a_secret_the_backend_and_the_project_folder() -> None:
    settings = manifest()["user_config"]
    assert set(settings) == {"gemini_api_key", "backend", "project_root"}
    assert settings["gemini_api_key"]["sensitive"] is True and settings["gemini_api_key"]["type"] == "string"
    assert settings["project_root"]["type"] == "directory"
    env = manifest()["server"]["mcp_config"]["env"]
    assert env["GEMINI_API_KEY"] == "${user_config.gemini_api_key}"
    assert env["GEMINI_MCP_BACKEND"] == "${user_config.backend}"
    assert env["GEMINI_RELAY_PROJECT_ROOT"] == "${user_config.project_root}"


def test_the_packed_bundle_holds_the_manifest_the_entry_point_the_wheel_and_its_lock(
    bundle: Path, tmp_path: Path
) -> None:
    unpacked = tmp_path / "unpacked"
    run([require(MCPB, "@anthropic-ai/mcpb"), "unpack", bundle, unpacked])
    files = {str(p.relative_to(unpacked)) for p in unpacked.rglob("*") if p.is_file()}
    assert files == {"manifest.json", "pyproject.toml", "server/main.py", "uv.lock", WHEEL_NAME}
    assert json.loads((unpacked / "manifest.json").read_text(encoding="utf-8")) == manifest()
    assert f'source = {{ path = "{WHEEL_NAME}" }}' in (unpacked / "uv.lock").read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_a_host_starts_the_unpacked_bundle_as_its_manifest_says_and_it_serves_mcp(
    bundle: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = offline_env(home)
    extension = home / "extensions" / "gemini-relay"  # where a host unpacks an installed bundle
    run([require(MCPB, "@anthropic-ai/mcpb"), "unpack", bundle, extension])
    project = tmp_path / "project"
    project.mkdir()
    settings = {"gemini_api_key": "test-key-never-sent", "backend": "api", "project_root": str(project)}
    config = host_config(extension, settings, home)
    assert config["env"] == {
        "GEMINI_API_KEY": "test-key-never-sent",
        "GEMINI_MCP_BACKEND": "api",
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    command = shutil.which(config["command"], path=env["PATH"])
    assert command is not None, f"{config['command']} is not on the host's PATH"
    params = StdioServerParameters(command=command, args=config["args"], env={**env, **config["env"]}, cwd=str(home))
    stderr = tmp_path / "server-stderr.log"
    info, tools, pong = await serve_and_ping(params, stderr)
    assert (info.name, info.version) == ("gemini-relay", __version__)
    assert tools == DEFAULT_TOOLS
    assert pong.splitlines()[-1] == "from the wheel"
    assert f"serving on stdio (root {project})" in stderr.read_text(encoding="utf-8")  # the folder setting arrived
    assert (extension / ".venv").is_dir()  # uv made the bundle's own environment, as on a host

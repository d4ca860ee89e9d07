"""server.json, the MCP registry's entry for this server: valid against the registry's published schema (vendored
in tests/data with its source), and true to the package it points at (name, version, console script, the
environment variables the server reads)."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # jsonschema ships no type information

from gemini_relay import __version__
from tests.harness import REPO

SCHEMA_FILE = REPO / "tests" / "data" / "server.schema.json"
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"  # tests/data/*.source.md
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def server_json() -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((REPO / "server.json").read_text(encoding="utf-8"))
    return entry


def pypi_package() -> dict[str, Any]:
    packages = [p for p in server_json()["packages"] if p["registryType"] == "pypi"]
    assert len(packages) == 1
    package: dict[str, Any] = packages[0]
    return package


def test_the_vendored_schema_is_the_published_2025_12_11_file() -> None:
    raw = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256
    assert json.loads(raw)["$id"] == SCHEMA_URL


def test_server_json_is_valid_against_the_registry_schema() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(server_json())]
    assert errors == []
    assert server_json()["$schema"] == SCHEMA_URL


def test_the_schema_refuses_what_the_registry_refuses() -> None:
    """The check above can fail: the schema catches a long description and a name without a namespace."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    assert not validator.is_valid({**server_json(), "description": "x" * 101})
    assert not validator.is_valid({**server_json(), "name": "gemini-relay"})


def test_server_json_names_this_package_its_version_and_a_reverse_dns_name() -> None:
    entry = server_json()
    package = pypi_package()
    assert entry["version"] == package["version"] == __version__
    assert package["identifier"] == PYPROJECT["name"] == "gemini-relay"
    assert package["transport"] == {"type": "stdio"}
    assert package["runtimeHint"] == "uvx"  # uvx <identifier> runs the console script of the same name
    assert PYPROJECT["scripts"] == {package["identifier"]: "gemini_relay.cli:main"}
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/gemini-relay", entry["name"])
    assert entry["repository"]["url"] == PYPROJECT["urls"]["Repository"]
    assert entry["repository"]["url"].endswith("/" + entry["name"].removeprefix("io.github."))  # the namespace proof
    assert len(entry["description"]) <= 100


def test_the_readme_carries_the_mcp_name_marker_the_registry_checks_on_pypi() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"mcp-name: {server_json()['name']}" in readme


def test_every_declared_variable_is_one_the_server_or_its_clis_read_with_a_description_and_keys_are_secret() -> None:
    variables = pypi_package()["environmentVariables"]
    names = [v["name"] for v in variables]
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "src").rglob("*.py"))
    docs = "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "README.md", *(REPO / "docs").rglob("*.md")])
    assert len(names) == len(set(names))
    assert {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_MCP_BACKEND", "GEMINI_RELAY_PROJECT_ROOT"} <= set(names)
    for variable in variables:
        name = variable["name"]
        assert f'"{name}"' in sources, f"{name} is not read by the server"
        assert re.search(f"`{name}[`=]", docs), f"{name} is not documented"
        assert len(variable["description"]) >= 20
        assert variable.get("isSecret", False) == bool(re.search(r"KEY|TOKEN", name)), name

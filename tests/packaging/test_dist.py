"""The sdist and wheel a release publishes: built by `python -m build`, accepted by `twine check`, complete (every
file of the package, the license, the metadata PyPI shows), and runnable by a user who has only the wheel: `uvx`
installs it into a fresh environment and it serves MCP over stdio."""

from __future__ import annotations

import json
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import anyio
import mcp_types as types
import pytest
import trove_classifiers
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from uv import find_uv_bin

from gemini_relay import __version__
from gemini_relay.tools.registry import registry
from tests.conformance.fixtures.catalog import PROMPTS, RESOURCES, TEMPLATES
from tests.conformance.fixtures.tools import FIXTURES
from tests.harness import REPO
from tests.packaging.artifacts import Dist, offline_env, package_files, run, run_offline

DEFAULT_TOOLS = [tool.name for tool in registry(test_tools=False)]
MCP_BOUND = 120.0  # a bound for a start and three requests on a loaded machine (a quiet one takes about 2 s)
PYPROJECT_FILE = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PYPROJECT = PYPROJECT_FILE["project"]


def metadata(dist: Dist) -> Message:
    with zipfile.ZipFile(dist.wheel) as wheel:
        text = wheel.read(f"gemini_relay-{__version__}.dist-info/METADATA").decode("utf-8")
    return Parser().parsestr(text)


def mcp_name() -> str:
    name: str = json.loads((REPO / "server.json").read_text(encoding="utf-8"))["name"]
    return name


def test_the_sdist_and_the_wheel_pass_twine_check_strict(dist: Dist) -> None:
    out = run([sys.executable, "-m", "twine", "check", "--strict", dist.sdist, dist.wheel])
    assert out.count("PASSED") == 2, out


def test_the_wheel_holds_every_file_of_the_package_and_nothing_else(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = {n for n in wheel.namelist() if not n.startswith(f"gemini_relay-{__version__}.dist-info/")}
    expected = package_files()
    # The package data the server reads at run time, named so a missing glob in pyproject.toml reads plainly.
    for data in (
        "gemini_relay/py.typed",
        "gemini_relay/content/data/rate_card.json",
        "gemini_relay/content/templates/review-deep.md",
        "gemini_relay/transports/front_answers.json",
        "gemini_relay/transports/page/static/index.html",
    ):
        assert data in names
    assert names == expected, {"missing": sorted(expected - names), "extra": sorted(names - expected)}


def test_the_wheel_holds_no_conformance_fixture_by_name_or_by_content(dist: Dist) -> None:
    """The conformance runner's fixtures are test code (tests/conformance/fixtures/): the wheel ships only the
    hook that imports them when GEMINI_RELAY_FIXTURES names them (server/fixture_hook.py)."""
    markers = {f'"{fixture.name}"' for fixture in FIXTURES} | {f'"{prompt.name}"' for prompt in PROMPTS}
    markers |= {str(resource.uri) for resource in RESOURCES} | {template.uri_template for template in TEMPLATES}
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = [n for n in wheel.namelist() if not n.endswith("/")]
        texts = {n: wheel.read(n).decode("utf-8", "replace") for n in names if n.endswith((".py", ".json", ".md"))}
    moved = {"server/fixtures.py", "server/catalog.py", "tools/conformance/", "conformance/fixtures/"}
    assert not [n for n in names if any(part in n for part in moved)], names
    found = {name: sorted(m for m in markers if m in text) for name, text in texts.items()}
    assert not {name: hits for name, hits in found.items() if hits}
    assert "gemini_relay/server/fixture_hook.py" in names


def test_the_sdist_holds_the_source_license_and_changelog_and_no_partial_test_suite(dist: Dist) -> None:
    top = f"gemini_relay-{__version__}/"
    with tarfile.open(dist.sdist) as sdist:
        names = {m.name.removeprefix(top) for m in sdist.getmembers() if m.isfile()}
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "PKG-INFO"} <= names
    assert {f"src/{name}" for name in package_files()} <= names
    assert not [n for n in names if n.startswith("tests/")]


def test_the_wheel_metadata_is_complete_and_names_the_one_version(dist: Dist) -> None:
    meta = metadata(dist)
    assert meta["Name"] == "gemini-relay"
    assert meta["Version"] == __version__
    # The one place: pyproject reads the version from the package (server.json and mcpb/ are checked against it).
    assert "version" not in PYPROJECT and PYPROJECT["dynamic"] == ["version"]
    assert PYPROJECT_FILE["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gemini_relay.__version__"}
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["Summary"] == PYPROJECT["description"]
    assert "mcp" in (meta["Keywords"] or "").split(",")
    classifiers = meta.get_all("Classifier") or []
    assert classifiers and not [c for c in classifiers if c not in trove_classifiers.classifiers]  # PyPI refuses
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the expression says it
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls)
    with zipfile.ZipFile(dist.wheel) as wheel:
        info = f"gemini_relay-{__version__}.dist-info/"
        assert "MIT License" in wheel.read(f"{info}licenses/LICENSE").decode("utf-8")
        entry_points = wheel.read(f"{info}entry_points.txt").decode("utf-8")
    assert "gemini-relay = gemini_relay.cli:main" in entry_points


def test_the_long_description_carries_the_registry_name_marker(dist: Dist) -> None:
    """The MCP registry proves a PyPI package is this server by `mcp-name: <server.json name>` in its description."""
    body = metadata(dist).get_payload()
    assert isinstance(body, str)
    assert f"mcp-name: {mcp_name()}" in body


def test_the_changelog_has_an_unreleased_section_and_the_current_version(dist: Dist) -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    assert f"## [{__version__}]" in changelog


def text_of(result: types.CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


async def serve_and_ping(params: StdioServerParameters, errlog: Path) -> tuple[types.Implementation, list[str], str]:
    """initialize, tools/list and a gemini-ping over stdio: the server's identity, tool names and the pong."""
    with errlog.open("a", encoding="utf-8") as err, anyio.fail_after(MCP_BOUND):
        async with Client(stdio_client(params, errlog=err), mode="legacy") as client:
            info = client.server_info
            tools = [tool.name for tool in (await client.list_tools()).tools]
            pong = text_of(await client.call_tool("gemini-ping", {"prompt": "from the wheel"}))
    assert info is not None
    return info, tools, pong


@pytest.mark.anyio
async def test_uvx_runs_the_built_wheel_in_a_fresh_environment_and_it_serves_mcp_over_stdio(
    dist: Dist, tmp_path: Path
) -> None:
    env = offline_env(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    uvx = Path(find_uv_bin()).with_name("uvx")
    # The installed module is the wheel's, in uv's fresh environment: not the checkout's source.
    show_module = "import gemini_relay; print(gemini_relay.__file__)"
    where: list[str | Path] = [uvx, "--isolated", "--from", dist.wheel, "python", "-c", show_module]
    module = Path(run_offline(where, env, project).strip())
    assert not module.is_relative_to(REPO) and module.is_relative_to(env["UV_CACHE_DIR"]), module
    params = StdioServerParameters(
        command=str(uvx), args=["--isolated", "--from", str(dist.wheel), "gemini-relay"], env=env, cwd=str(project)
    )
    info, tools, pong = await serve_and_ping(params, tmp_path / "server-stderr.log")
    assert (info.name, info.version) == ("gemini-relay", __version__)
    assert tools == DEFAULT_TOOLS
    assert pong.splitlines()[-1] == "from the wheel"  # after any first-call notice about the backend choice

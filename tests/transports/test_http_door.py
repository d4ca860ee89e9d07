"""What the HTTP listener refuses, with which status: foreign Host, foreign Origin, missing or wrong token, big bodies.

One token-protected server for the module (no backend is needed to be refused).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.transports.http_server import ACCEPT, INIT, HttpServer, bare_env, serve_http

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    base = tmp_path_factory.mktemp("door")
    env = bare_env(base)
    with serve_http(env, base, base / "server-stderr.log", token=TOKEN) as running:
        yield running


def post(server: HttpServer, headers: dict[str, str] | None = None, body: bytes | None = None) -> httpx2.Response:
    payload = body if body is not None else json.dumps(INIT).encode()
    with httpx2.Client(timeout=30) as http:
        return http.post(server.url, content=payload, headers={**ACCEPT, **(headers or {})})


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_right_token_opens_a_session(server: HttpServer) -> None:
    response = post(server, bearer())
    assert response.status_code == 200
    assert response.headers["mcp-session-id"]
    assert '"serverInfo":{"name":"gemini-relay"' in response.text


def test_the_bearer_scheme_is_case_insensitive_and_a_same_origin_page_is_let_in(server: HttpServer) -> None:
    origin = f"http://127.0.0.1:{server.port}"
    assert post(server, {"Authorization": f"bearer {TOKEN}", "Origin": origin}).status_code == 200


def test_a_request_without_the_token_is_refused_with_401_and_a_bearer_challenge(server: HttpServer) -> None:
    response = post(server)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="gemini-relay"'


@pytest.mark.parametrize("authorization", [f"Bearer {TOKEN}x", "Bearer", f"Basic {TOKEN}", TOKEN])
def test_a_wrong_token_is_refused_with_401(server: HttpServer, authorization: str) -> None:
    response = post(server, {"Authorization": authorization})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="gemini-relay"'


def test_a_foreign_host_is_refused_with_421_before_the_token_is_looked_at(server: HttpServer) -> None:
    assert post(server, {"Host": "evil.example"}).status_code == 421
    assert post(server, {"Host": "evil.example", **bearer()}).status_code == 421
    assert post(server, {"Host": f"evil.example:{server.port}", **bearer()}).status_code == 421


def test_a_foreign_origin_is_refused_with_403_even_with_the_token(server: HttpServer) -> None:
    assert post(server, {"Origin": "http://evil.example", **bearer()}).status_code == 403
    # another local web app (another port) is a foreign origin too
    assert post(server, {"Origin": f"http://localhost:{server.port + 1}", **bearer()}).status_code == 403


@pytest.mark.parametrize("site", ["cross-site", "same-site", "Cross-Site"])
def test_a_browser_request_from_another_site_is_refused_with_403_even_without_an_origin(
    server: HttpServer, site: str
) -> None:
    assert post(server, {"Sec-Fetch-Site": site, **bearer()}).status_code == 403


@pytest.mark.parametrize("site", ["same-origin", "none"])
def test_a_same_origin_or_typed_in_browser_request_is_let_in(server: HttpServer, site: str) -> None:
    assert post(server, {"Sec-Fetch-Site": site, **bearer()}).status_code == 200


def test_a_body_over_4_mib_is_refused_with_413(server: HttpServer) -> None:
    body = json.dumps({**INIT, "padding": "x" * (4 * 1024 * 1024)}).encode()
    response = post(server, bearer(), body)
    assert response.status_code == 413


def test_the_server_logs_never_carry_the_token(server: HttpServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    post(server)
    post(server, {"Authorization": "Bearer wrong-guess"})
    logs = [p.read_text(encoding="utf-8") for p in Path(tmp_path_factory.getbasetemp()).glob("door*/server-stderr.log")]
    assert logs and all(TOKEN not in log and "wrong-guess" not in log for log in logs)
    assert any("bearer token required" in log for log in logs)

"""The job page keeps /mcp's door: loopback Host (421), same Origin (403), the token (401) — header or the cookie
that `/?token=` sets — and its file endpoint serves only media a job recorded, inside the allowed roots.

One token-protected server for the module over a state dir holding a finished job with files of every kind.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from gemini_relay.jobs.store.files import FileJobStore
from gemini_relay.transports.guard import page_cookie_name
from tests.transports.http_server import HttpServer, serve_http
from tests.transports.page_jobs import finished_job

TOKEN = "page-s3cret"
PNG = bytes.fromhex("89504e470d0a1a0a") + b"not really decoded by these tests"
VIDEO = bytes(range(256)) * 64
PAGE_PATHS = ["/", "/page.js", "/page.css", "/api/jobs", "/events"]
UNTRUSTED = '<script>alert("x")</script> <img src=x onerror=alert(1)>'


@dataclass
class World:
    server: HttpServer
    job_id: str
    project: Path

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.port}{path}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("page-door")
    project = base / "proj"
    (project / "gemini-media").mkdir(parents=True)
    image = project / "gemini-media" / "cat.png"
    image.write_bytes(PNG)
    video = project / "gemini-media" / "clip.mp4"
    video.write_bytes(VIDEO)
    outside = base / "outside.png"
    outside.write_bytes(PNG)
    (project / "link.png").symlink_to(outside)  # inside by name, outside by realpath
    notes = project / "notes.txt"
    notes.write_text("not media", encoding="utf-8")
    svg = project / "logo.svg"
    svg.write_text("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>", encoding="utf-8")
    store = FileJobStore(base / "state")
    recorded = (image, outside, project / "link.png", notes, svg, project / "missing.png", video)
    job_id = finished_job(store, project, UNTRUSTED, recorded)
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(base),
        "GEMINI_RELAY_STATE_DIR": str(base / "state"),
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_MCP_BACKEND": "gemini",
    }
    with serve_http(env, base, base / "server-stderr.log", token=TOKEN) as running:
        yield World(running, job_id, project)


def get(world: World, path: str, headers: dict[str, str] | None = None, cookie: str | None = None) -> httpx2.Response:
    cookies = {page_cookie_name(world.server.port): cookie} if cookie else None
    with httpx2.Client(timeout=30, cookies=cookies) as http:
        if path == "/events":  # a stream: the headers (and the first event) are all a test needs
            with http.stream("GET", world.url(path), headers=headers) as response:
                if response.status_code != 200:
                    response.read()
                return response
        return http.get(world.url(path), headers=headers)


def bearer() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def login(world: World) -> str:
    """The cookie `/?token=` sets."""
    with httpx2.Client(timeout=30) as http:
        response = http.get(world.url(f"/?token={TOKEN}"))
    return response.cookies[page_cookie_name(world.server.port)]


@pytest.mark.parametrize("path", [*PAGE_PATHS, "/files/x/0"])
def test_every_page_path_wants_the_token_and_says_how_to_give_it(world: World, path: str) -> None:
    response = get(world, path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="gemini-relay"'
    assert "/?token=" in response.text


@pytest.mark.parametrize("path", [*PAGE_PATHS, "/files/x/0"])
def test_a_foreign_host_is_421_and_a_foreign_origin_403_on_every_page_path(world: World, path: str) -> None:
    assert get(world, path, {**bearer(), "Host": f"evil.example:{world.server.port}"}).status_code == 421
    assert get(world, path, {**bearer(), "Origin": "http://evil.example"}).status_code == 403
    assert get(world, path, {**bearer(), "Origin": f"http://127.0.0.1:{world.server.port + 1}"}).status_code == 403


def test_the_token_in_the_url_becomes_an_httponly_strict_cookie_and_a_redirect_without_it(world: World) -> None:
    with httpx2.Client(timeout=30) as http:
        response = http.get(world.url(f"/?token={TOKEN}"))
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{page_cookie_name(world.server.port)}=")
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and "Path=/" in cookie
    assert TOKEN not in cookie  # the browser keeps a value derived from the token, not the token
    assert response.headers["referrer-policy"] == "no-referrer"


def test_a_wrong_token_in_the_url_sets_no_cookie(world: World) -> None:
    with httpx2.Client(timeout=30) as http:
        response = http.get(world.url(f"/?token={TOKEN}x"))
    assert response.status_code == 401
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize("path", PAGE_PATHS)
def test_the_cookie_opens_the_page_paths(world: World, path: str) -> None:
    assert get(world, path, cookie=login(world)).status_code == 200


def test_the_cookie_does_not_open_mcp_nor_does_a_forged_one_open_the_page(world: World) -> None:
    cookie = login(world)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client(timeout=30, cookies={page_cookie_name(world.server.port): cookie}) as http:
        assert http.post(world.url("/mcp"), content=json.dumps(init), headers=headers).status_code == 401
    assert get(world, "/", cookie=cookie[:-1] + ("0" if cookie[-1] != "0" else "1")).status_code == 401
    assert get(world, "/", cookie=TOKEN).status_code == 401


def test_the_page_has_a_strict_csp_and_no_inline_script_or_style(world: World) -> None:
    response = get(world, "/", bearer())
    assert response.headers["content-security-policy"].startswith("default-src 'self';")
    assert response.headers["x-content-type-options"] == "nosniff"
    html = response.text
    assert '<script src="/page.js" defer></script>' in html
    assert html.count("<script") == 1 and "<style" not in html and "style=" not in html
    assert "http://" not in html.replace('xmlns="http://', "") and "https://" not in html  # nothing from outside
    assert get(world, "/page.js", bearer()).headers["content-type"].startswith("text/javascript")


def test_the_jobs_api_lists_only_recorded_media_inside_the_roots(world: World) -> None:
    jobs = get(world, "/api/jobs", bearer()).json()["jobs"]
    job = next(j for j in jobs if j["id"] == world.job_id)
    assert job["state"] == "done" and job["preview"] == UNTRUSTED and job["conversation_id"] == "conv-1"
    assert [(f["url"], f["name"], f["kind"], f["type"]) for f in job["files"]] == [
        (f"/files/{world.job_id}/0", "cat.png", "image", "image/png"),
        (f"/files/{world.job_id}/6", "clip.mp4", "video", "video/mp4"),
    ]


def test_the_file_endpoint_serves_recorded_media_with_its_type(world: World) -> None:
    response = get(world, f"/files/{world.job_id}/0", bearer())
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert response.content == PNG
    assert response.headers["content-security-policy"].startswith("default-src 'self';")


def test_the_file_endpoint_answers_a_range_request_with_206(world: World) -> None:
    response = get(world, f"/files/{world.job_id}/6", {**bearer(), "Range": "bytes=100-199"})
    assert response.status_code == 206
    assert response.headers["content-range"] == f"bytes 100-199/{len(VIDEO)}"
    assert response.content == VIDEO[100:200]


@pytest.mark.parametrize(
    "path",
    [
        "/files/{job}/1",  # recorded, but outside the project root
        "/files/{job}/2",  # recorded, inside by name, outside through a symlink
        "/files/{job}/3",  # recorded, inside, not media
        "/files/{job}/4",  # recorded, inside, SVG (could carry script)
        "/files/{job}/5",  # recorded, missing
        "/files/{job}/7",
        "/files/{job}/-1",
        "/files/{job}/x",
        "/files/nojob/0",
        "/files/..%2F..%2Fetc%2Fpasswd/0",
    ],
)
def test_anything_but_a_listed_file_is_404(world: World, path: str) -> None:
    assert get(world, path.format(job=world.job_id), bearer()).status_code == 404


def test_job_text_is_served_as_json_data_never_as_markup(world: World) -> None:
    response = get(world, f"/api/jobs/{world.job_id}", bearer())
    assert response.headers["content-type"] == "application/json"
    assert response.json()["text"] == UNTRUSTED
    assert get(world, "/api/jobs/nojob", bearer()).status_code == 404


def test_the_event_stream_sends_the_job_list_first(world: World) -> None:
    cookie = login(world)
    with (
        httpx2.Client(timeout=30, cookies={page_cookie_name(world.server.port): cookie}) as http,
        http.stream("GET", world.url("/events")) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        buffer = ""
        for chunk in response.iter_text():
            buffer += chunk
            if "event: jobs\n" in buffer and "\n\n" in buffer.split("event: jobs\n", 1)[1]:
                break
    data = buffer.split("event: jobs\ndata: ", 1)[1].split("\n", 1)[0]
    assert [j["id"] for j in json.loads(data)["jobs"]] == [world.job_id]


def test_an_open_event_stream_ends_with_bye_when_the_server_stops(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),
        "GEMINI_RELAY_STATE_DIR": str(tmp_path / "state"),
        "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path),
        "GEMINI_MCP_BACKEND": "gemini",
    }
    with serve_http(env, tmp_path, tmp_path / "server-stderr.log") as server:
        url = f"http://127.0.0.1:{server.port}/events"
        with httpx2.Client(timeout=30) as http, http.stream("GET", url) as response:
            events = response.iter_text()
            assert "event: jobs" in next(e for e in events if "event: jobs" in e)
            server.proc.send_signal(signal.SIGTERM)
            rest = "".join(events)  # ends: the server closes the stream instead of waiting out a timeout
        assert "event: bye" in rest
        assert server.proc.wait(timeout=15) == 0

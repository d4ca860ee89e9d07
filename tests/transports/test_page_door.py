"""The job page keeps /mcp's door: loopback Host (421), same Origin (403), and the bearer header (401) on every path
that carries data; no cookie is ever set (cookies ignore the port: every server on 127.0.0.1 would get it). Its own
HTML, script and style hold no data and open without the token. The file endpoint serves only media a job
recorded, inside the allowed roots.

One token-protected server for the module over a state dir holding a finished job with files of every kind.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from gemini_relay.jobs.store.file_store import FileJobStore
from tests.transports.http_server import HttpServer, bare_env, serve_http
from tests.transports.page_jobs import finished_job

TOKEN = "page-s3cret"
PNG = bytes.fromhex("89504e470d0a1a0a") + b"not really decoded by these tests"
VIDEO = bytes(range(256)) * 64
ASSETS = ["/", "/page.js", "/page.css"]
DATA_PATHS = ["/api/jobs", "/api/jobs/x", "/events", "/files/x/0"]
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


def get(
    world: World, path: str, headers: dict[str, str] | None = None, cookies: dict[str, str] | None = None
) -> httpx2.Response:
    with httpx2.Client(timeout=30, cookies=cookies) as http:
        if path == "/events":  # a stream: the headers (and the first event) are all a test needs
            with http.stream("GET", world.url(path), headers=headers) as response:
                if response.status_code != 200:
                    response.read()
                return response
        return http.get(world.url(path), headers=headers)


def bearer() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize("path", DATA_PATHS)
def test_every_data_path_wants_the_bearer_header_and_says_how_the_page_gives_it(world: World, path: str) -> None:
    response = get(world, path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="gemini-relay"'
    assert "/#token=" in response.text


@pytest.mark.parametrize("path", ASSETS)
def test_the_page_files_hold_no_data_and_open_without_the_token(world: World, path: str) -> None:
    response = get(world, path)
    assert response.status_code == 200
    assert "set-cookie" not in response.headers
    assert world.job_id not in response.text and TOKEN not in response.text


@pytest.mark.parametrize("path", [*ASSETS, *DATA_PATHS])
def test_a_foreign_host_is_421_and_a_foreign_origin_403_on_every_page_path(world: World, path: str) -> None:
    assert get(world, path, {**bearer(), "Host": f"evil.example:{world.server.port}"}).status_code == 421
    assert get(world, path, {**bearer(), "Origin": "http://evil.example"}).status_code == 403
    assert get(world, path, {**bearer(), "Origin": f"http://127.0.0.1:{world.server.port + 1}"}).status_code == 403


@pytest.mark.parametrize("token", [TOKEN, TOKEN + "x"])
def test_the_token_in_a_query_string_is_refused_saying_to_put_it_after_the_hash_and_sets_no_cookie(
    world: World, token: str
) -> None:
    with httpx2.Client(timeout=30) as http:
        response = http.get(world.url(f"/?token={token}"))
    assert response.status_code == 400
    assert "/#token=" in response.text
    assert "set-cookie" not in response.headers
    assert response.headers["referrer-policy"] == "no-referrer"


def test_a_cookie_alone_opens_no_data_path(world: World) -> None:
    """The cookie the page used to set (named by port, derived from the token) reaches every port of 127.0.0.1."""
    derived = hmac.new(TOKEN.encode(), b"gemini-relay page cookie", hashlib.sha256).hexdigest()
    for value in (derived, TOKEN):
        cookies = {f"gemini_relay_page_{world.server.port}": value, "gemini_relay_page": value}
        assert get(world, "/api/jobs", cookies=cookies).status_code == 401
        assert get(world, f"/files/{world.job_id}/0", cookies=cookies).status_code == 401


@pytest.mark.parametrize("path", ["/api/jobs", "/api/jobs/{job}", "/events", "/files/{job}/0"])
def test_the_bearer_header_opens_the_data_paths(world: World, path: str) -> None:
    assert get(world, path.format(job=world.job_id), bearer()).status_code == 200


def test_the_page_has_a_strict_csp_and_no_inline_script_or_style(world: World) -> None:
    response = get(world, "/")
    assert response.headers["content-security-policy"].startswith("default-src 'self';")
    assert "img-src 'self' blob:;" in response.headers["content-security-policy"]  # media the script fetched
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
    with httpx2.Client(timeout=30) as http, http.stream("GET", world.url("/events"), headers=bearer()) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        buffer = ""
        for chunk in response.iter_text():
            buffer += chunk
            if "event: jobs\n" in buffer and "\n\n" in buffer.split("event: jobs\n", 1)[1]:
                break
    data = buffer.split("event: jobs\ndata: ", 1)[1].split("\n", 1)[0]
    assert [j["id"] for j in json.loads(data)["jobs"]] == [world.job_id]


def test_an_open_event_stream_ends_with_bye_when_the_server_stops(tmp_path: Path) -> None:
    with serve_http(bare_env(tmp_path), tmp_path, tmp_path / "server-stderr.log") as server:
        url = f"http://127.0.0.1:{server.port}/events"
        with httpx2.Client(timeout=30) as http, http.stream("GET", url, headers=server.headers()) as response:
            events = response.iter_text()
            assert "event: jobs" in next(e for e in events if "event: jobs" in e)
            server.proc.send_signal(signal.SIGTERM)
            rest = "".join(events)  # ends: the server closes the stream instead of waiting out a timeout
        assert "event: bye" in rest
        assert server.proc.wait(timeout=15) == 0

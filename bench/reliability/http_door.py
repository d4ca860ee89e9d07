"""HTTP: what `gemini-relay --http` lets in. Each request is a valid initialize that only its one flaw should stop.

Then a flood of refused requests whose Host carries terminal escapes, on a server of its own: what it logs must be
escaped and rate-limited (2,000 refusals wrote 2,001 raw lines before; now FLOOD_LIMIT lines and one summary).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx2

from bench.kill9 import World
from bench.reliability.table import Figure, at_least, at_most, zero
from bench.reliability.world import left_running, world
from gemini_relay.log import FLOOD_LIMIT
from tests.transports.http_server import raw_post, serve_http

CATEGORY = "HTTP"
TOKEN = "reliability-token"
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "r", "version": "1"}}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
BINDS = ("0.0.0.0:0", "[::]:0", "192.0.2.1:0", "localhost.evil.example:0")
HOSTILE_HOST = b"evil\x1b[31m.example\x1b]0;owned\x07\x9b2J"
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def attempts(port: int) -> list[tuple[str, dict[str, str], bytes]]:
    good = {"Authorization": f"Bearer {TOKEN}"}
    body = json.dumps(INIT).encode()
    big = json.dumps({**INIT, "pad": "x" * (5 << 20)}).encode()
    return [
        ("no token", {}, body),
        ("wrong token", {"Authorization": f"Bearer {TOKEN}x"}, body),
        ("token as Basic", {"Authorization": f"Basic {TOKEN}"}, body),
        ("bare Bearer", {"Authorization": "Bearer"}, body),
        ("foreign Origin", {**good, "Origin": "http://evil.example"}, body),
        ("other local port as Origin", {**good, "Origin": f"http://localhost:{port + 1}"}, body),
        ("null Origin", {**good, "Origin": "null"}, body),
        ("wrong Host", {**good, "Host": "evil.example"}, body),
        ("wrong Host with port", {**good, "Host": f"evil.example:{port}"}, body),
        ("DNS-rebinding Host", {**good, "Host": f"127.0.0.1.nip.io:{port}"}, body),
        ("oversized body (5 MB)", good, big),
    ]


def refused_bind(env: dict[str, str], bind: str) -> str | None:
    """None when the server refuses to listen on `bind`; else what it did."""
    proc = subprocess.run([sys.executable, "-m", "gemini_relay", "--http", bind], env=env, capture_output=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    err = proc.stderr.decode(errors="replace")
    return None if proc.returncode != 0 and "Serving MCP" not in err else f"exit {proc.returncode}: {err[-120:]!r}"


async def attack(short: bool) -> list[Figure]:
    accepted: list[str] = []
    tried = 0
    with world("http") as w:
        with serve_http(w.relay.env, w.relay.project, w.relay.stderr_path, token=TOKEN) as server, \
                httpx2.Client(timeout=60) as http:  # fmt: skip
            for what, headers, body in attempts(server.port):
                tried += 1
                status = http.post(server.url, content=body, headers={**ACCEPT, **headers}).status_code
                if status < 400:
                    accepted.append(f"{what}: HTTP {status}")
            control = http.post(server.url, content=json.dumps(INIT).encode(),
                                headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"}).status_code  # fmt: skip
        for bind in BINDS[:2] if short else BINDS:
            tried += 1
            if (outcome := refused_bind(w.relay.env, bind)) is not None:
                accepted.append(f"--http {bind}: {outcome}")
        flood = 5 * FLOOD_LIMIT if short else 2000  # short: the limit passed five times over
        lines, raw, unrefused = flood_log(w, flood)
        left = await left_running(w)
    return [
        Figure(CATEGORY, "control: the right token opens a session", f"HTTP {control}", "HTTP 200", control == 200),
        at_least(CATEGORY, "hostile requests and binds", tried, 10),
        zero(CATEGORY, "accepted", accepted + left + unrefused),
        at_most(
            CATEGORY, f"log lines for {flood:,} refused requests (Host with terminal escapes)", lines, FLOOD_LIMIT + 1
        ),  # fmt: skip
        zero(CATEGORY, "raw control characters in the log", raw),
    ]


def flood_log(w: World, count: int) -> tuple[int, list[str], list[str]]:
    """Lines the server logged about `count` refused requests (its summary at exit included), the log lines that
    carry a raw control character, and the requests not refused with 421."""
    log = Path(w.relay.stderr_path).with_name("flood-stderr.log")
    unrefused: list[str] = []
    with serve_http(w.relay.env, w.relay.project, log) as server:
        for _ in range(count):
            status = raw_post(server.port, HOSTILE_HOST)
            if status != 421:
                unrefused.append(f"Host with escapes: HTTP {status}")
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    about = [line for line in text if "Host" in line or "similar lines" in line]  # the SDK's wording was "Invalid Host"
    return len(about), [repr(line[:120]) for line in text if _RAW_CONTROL.search(line)], unrefused

"""files: what the relay writes and the state it reads back, attacked with planted links and hostile records.

Links are planted outside-pointing at every name the relay writes in the project (the image, its old `.part` and
`.tmp` temporary names, its sidecar) and a victim file sits behind each: a write outside the root is a victim changed
or a new file beside it. Destinations the OS cannot take (a 255-byte name before its suffix, a path past PATH_MAX
under the root) must be refused before the API bills. Then hostile state: files where older builds kept their stdio
quick-start recordings (`<state dir>/stdio-front.json`), with descriptions someone else chose (writable by others, in
a state dir others may write, another user's when run as root), corrupt and deeply nested ones, and a job record
others may write: none may reach the client or stop a start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio

from bench.kill9 import World
from bench.reliability.table import Figure, at_least, zero
from bench.reliability.world import Answer, call, left_running, refused_properly, state_dir, world
from tests.harness import install_fake_agy
from tests.transports.test_stdio_front import INITIALIZE, INITIALIZED, LIST

CATEGORY = "files"
PLANTED = b"victim: must stay as it is"
EVIL = "EVIL-planted-description"
START_BOUND = 30.0  # one stdio start answering initialize and tools/list; a hang is a finding, not a wedged suite


def plant_links(w: World, folder: str, name: str) -> list[Path]:
    outside = w.relay.base / "outside"
    outside.mkdir(exist_ok=True)
    (w.relay.project / folder).mkdir(parents=True, exist_ok=True)
    victims = []
    for link in (f"{name}.part", f"{name}.tmp", f"{name}.json", f"{name}.json.part"):
        victim = outside / f"{folder}-{link}"
        victim.write_bytes(PLANTED)
        (w.relay.project / folder / link).symlink_to(victim)
        victims.append(victim)
    return victims


def written_outside(w: World, victims: list[Path], answers: list[tuple[str, Answer]]) -> list[str]:
    outside = w.relay.base / "outside"
    found = [f"{v.name} was overwritten" for v in victims if v.read_bytes() != PLANTED]
    found += [f"{p.name} appeared outside the root" for p in outside.iterdir() if p not in victims]
    found += [f"{label}: the answer names {outside}" for label, a in answers if str(outside) in a.text]
    return found


async def writes(w: World) -> tuple[list[str], list[str], int]:
    """(writes outside the root, billed refusals, attempts)."""
    agy = install_fake_agy(w.relay.base / "bin", w.relay.base / "fake-agy.log")
    victims = plant_links(w, "art", "red.png") + plant_links(w, "agy", "red.png")
    (w.relay.project / "art" / "blue.png").symlink_to(w.relay.base / "outside" / "blue-victim.png")
    answers: list[tuple[str, Answer]] = []
    too_long = ["x" * 255, "é" * 127, "/".join(["d" * 200] * 20 + ["d" * 60]) + "/red.png"]  # 255+4, 254+4; PATH_MAX
    billed: list[str] = []
    async with w.relay.client() as api, w.relay.client(GEMINI_MCP_BACKEND="agy", AGY_CLI_PATH=str(agy)) as on_agy:
        for label, client, prompt, path in [
            ("api art/red.png", api, "a red square", "art/red.png"),
            ("api art/blue.png (a link out)", api, "a blue square", "art/blue.png"),
            ("agy agy/red.png", on_agy, "[[agy:image]] a red square", "agy/red.png"),
            ("agy art/blue.png (a link out)", on_agy, "[[agy:image]] a blue square", "art/blue.png"),
        ]:
            answers.append((label, await call(client, "gemini-image", {"prompt": prompt, "outputPath": path})))
        for name in too_long:
            before = w.relay.api.media.generation_count()
            answer = await call(api, "gemini-image", {"prompt": "x", "outputPath": f"art/{name}"})
            paid = w.relay.api.media.generation_count() != before
            if paid or not refused_properly("gemini-image", answer):
                billed.append(f"outputPath of {len(name.encode())} bytes: billed {paid}, {answer.text[:100]!r}")
    found = written_outside(w, victims, answers)
    if (w.relay.base / "outside" / "blue-victim.png").exists():
        found.append("the link art/blue.png was written through")
    return found, billed, len(answers) + len(too_long)


def recording(w: World) -> Path:
    return state_dir(w) / "stdio-front.json"


def spoil(w: World) -> None:
    """An old recording with descriptions and instructions someone else chose: served, they would reach the model."""
    entry = {"initialize": {"instructions": EVIL}, "tools": {"tools": [{"name": "gemini-ask", "description": EVIL}]}}
    state_dir(w).mkdir(parents=True, exist_ok=True)
    recording(w).write_text(json.dumps({"format": 2, "entries": {"any": entry}}), encoding="utf-8")
    recording(w).chmod(0o600)


HOSTILE = {
    "others": "a recording others may write",
    "open dir": "a recording in a state dir others may write",
    "nested": "a deeply nested recording",
    "torn": "a torn recording",
    "fifo": "a recording that is a FIFO",
    "link": "a recording that is a link",
    "other user": "another user's recording (as root only)",
}


def spoil_as(w: World, how: str) -> None:
    """A recording planted hostile or corrupt in the way `how` names (a HOSTILE key)."""
    path = recording(w)
    spoil(w)
    if how in ("others", "open dir", "other user"):
        if how == "others":
            path.chmod(0o666)
        elif how == "open dir":
            state_dir(w).chmod(0o777)
        else:
            os.chown(path, 65534, 65534)
    elif how in ("nested", "torn"):
        path.write_text("[" * 200_000 if how == "nested" else '{"format": 2, "entries": {"', encoding="utf-8")
    else:
        path.unlink()
        if how == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")


def start(w: World) -> str:
    """One stdio start: initialize, initialized and tools/list sent at once, then stdin closed; its stdout.

    Raises:
        subprocess.TimeoutExpired: the start hung (killed at the bound).
        AssertionError: it exited with another code than 0.
    """
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in (INITIALIZE, INITIALIZED, LIST))
    run = subprocess.run([sys.executable, "-m", "gemini_relay"], input=lines, capture_output=True, env=w.relay.env,
                         cwd=w.relay.project, timeout=START_BOUND, check=False)  # fmt: skip
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr.decode(errors='replace')[-200:]}"
    return run.stdout.decode(errors="replace")


async def hostile_state(w: World) -> tuple[list[str], int]:
    """(hostile state that reached the client or stopped a start, files planted)."""
    found: list[str] = []
    cases = [how for how in HOSTILE if how != "other user" or os.getuid() == 0]
    for how in cases:
        label = HOSTILE[how]
        spoil_as(w, how)
        try:
            answered = await anyio.to_thread.run_sync(start, w)
        except (AssertionError, subprocess.TimeoutExpired) as exc:
            found.append(f"{label}: the start failed ({exc!s:.160})")
        else:
            if EVIL in answered:
                found.append(f"{label}: its planted description reached the client")
        state_dir(w).chmod(0o700)
        recording(w).unlink(missing_ok=True)
    found += await hostile_job(w)
    return found, len(cases) + 1


async def hostile_job(w: World) -> list[str]:
    """A job record others may write: its meta is what a supervisor runs, and what gemini-status reports (the api
    backend: the record is attacked, not a CLI)."""
    async with w.relay.client(GEMINI_MCP_BACKEND="api") as client:
        started = await call(client, "gemini-run", {"prompt": "hello"})
        job_id = str((started.structured or {})["job_id"])
        await call(client, "gemini-wait", {"jobId": job_id})
        meta = w.store.dir(job_id) / "meta.json"
        data = json.loads(meta.read_text(encoding="utf-8"))
        data["tool"] = EVIL
        meta.write_text(json.dumps(data), encoding="utf-8")
        meta.chmod(0o666)
        answer = await call(client, "gemini-status", {"jobId": job_id})
    return [f"a job record others may write was trusted: {answer.text[:100]!r}"] if EVIL in answer.text else []


async def attack(short: bool) -> list[Figure]:
    """Writes through planted links, and destinations the OS cannot take."""
    with world("files", GEMINI_RELAY_TOOLSETS="all") as w:
        outside, billed, attempts = await writes(w)
        left = await left_running(w)
        shutil.rmtree(w.relay.base / "outside", ignore_errors=True)
    return [
        at_least(CATEGORY, "writes attempted through planted links", attempts, 7),
        zero(CATEGORY, "files written outside the root", outside),
        zero(CATEGORY, "destinations the OS cannot take, billed or not refused by field", billed),
        zero(CATEGORY, "processes left (files)", left),
    ]


async def attack_state(short: bool) -> list[Figure]:
    """Hostile and corrupt state files: its own world, so the suite's workers run it beside the writes."""
    with world("files-state", GEMINI_RELAY_TOOLSETS="all") as w:
        hostile, planted = await hostile_state(w)
        left = await left_running(w)
    return [
        at_least(CATEGORY, "hostile or corrupt state files planted", planted, 7),
        zero(CATEGORY, "hostile state files served or stopping a start", hostile + left),
    ]

"""escapes: every path-taking argument and every place an `@` can hide, attacked with the forms that leave the root.

A canary file is planted outside the project root (and as ~/.ssh/id_rsa, reached through symlinks too) and a
secret-looking file inside it. An attempt escapes when a path argument outside the root is accepted, or when a
canary's content reaches any request body the emulator logged or the answer. Every call must also be answered.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Any

from bench.kill9 import World
from bench.reliability.table import Figure, at_least, zero
from bench.reliability.world import Answer, call, left_running, world
from tests.harness import install_fake_agy

CATEGORY = "escapes"


def plant(w: World) -> dict[str, str]:
    """The canaries (name → content) and the links that point out of the root."""
    base, proj = w.relay.base, w.relay.project
    marks = {name: f"CANARY-{name}-{uuid.uuid4().hex}" for name in ("outside", "ssh", "secret", "control")}
    (base / "outside").mkdir()
    (base / "outside" / "canary.txt").write_text(marks["outside"] + "\n", encoding="utf-8")
    (w.relay.home / ".ssh").mkdir(exist_ok=True)
    (w.relay.home / ".ssh" / "id_rsa").write_text(marks["ssh"] + "\n", encoding="utf-8")
    (proj / "secret.key").write_text(marks["secret"] + "\n", encoding="utf-8")
    (proj / "hello.txt").write_text(marks.pop("control") + "\n", encoding="utf-8")
    (proj / "a b").write_text("spaced\n", encoding="utf-8")
    (proj / "link.txt").symlink_to(base / "outside" / "canary.txt")
    (proj / "linkdir").symlink_to(base / "outside")
    (proj / "sshlink").symlink_to(w.relay.home / ".ssh")
    git = ["git", "-C", str(proj), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "hello.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return marks


def forms(w: World) -> list[str]:
    outside = w.relay.base / "outside"
    return [
        "@../outside/canary.txt", f"@{outside}/canary.txt", "@/etc/passwd", "@~/.ssh/id_rsa", "x@secret.key",
        "see@../outside/canary.txt", '@"../outside/canary.txt"', '@"a b"', "@link.txt", "@linkdir/canary.txt",
        "@linkdir", "@sshlink/id_rsa", "@.", "@**/*.key", "@./../outside/canary.txt", "@'../outside/canary.txt'",
    ]  # fmt: skip


def at_places(form: str) -> list[tuple[str, dict[str, Any]]]:
    """Every argument an `@` can hide in, carrying `form`."""
    schema = {"type": "object", "description": f"read {form}",
              "properties": {"a": {"type": "string", "description": f"from {form}"}}}  # fmt: skip
    return [
        ("gemini-ask", {"prompt": f"summarise {form} please"}),
        ("gemini-ask", {"prompt": "answer", "jsonSchema": schema}),
        ("gemini-plan", {"task": f"plan {form}"}),
        ("gemini-plan", {"task": "plan", "context": f"see {form}"}),
        ("gemini-brainstorm", {"prompt": f"ideas {form}", "existingContext": form, "domain": form}),
        ("gemini-search", {"query": f"what is {form}"}),
        ("gemini-structured", {"prompt": f"extract {form}", "schema": schema}),
        ("gemini-review", {"focus": f"look at {form}", "quick": True}),
        ("gemini-assess", {}),  # the form is in the diff under review (notes.md)
    ]


def path_args(w: World) -> list[tuple[str, dict[str, Any]]]:
    outside, proj = w.relay.base / "outside", w.relay.project
    bad = ["../outside/canary.txt", str(outside / "canary.txt"), "link.txt", "linkdir/canary.txt", "/etc/passwd",
           "~/.ssh/id_rsa", "sshlink/id_rsa", "./../outside/canary.txt"]  # fmt: skip
    dirs = [str(outside), "/etc", str(proj / "linkdir"), "../outside", str(proj / "sshlink")]
    return [
        *(("gemini-structured", {"prompt": "x", "schema": {"type": "object"}, "files": [p]}) for p in bad),
        *(("gemini-run", {"prompt": "x", "cwd": d}) for d in dirs),
        *(("gemini-review", {"workingDirectory": d, "quick": True}) for d in dirs),
        *(("gemini-assess", {"workingDirectory": d}) for d in dirs),
        *(("gemini-image", {"prompt": "x", "outputPath": p}) for p in (*bad[:4], "linkdir/new.png", "/tmp/x.png")),
    ]


def leaked(marks: dict[str, str], w: World, answer: Answer, since: int) -> list[str]:
    bodies = [json.dumps(r.body) for r in w.relay.api.requests[since:]]
    found = [name for name, mark in marks.items() if any(mark in b for b in bodies) or mark in answer.text]
    if any("root:x:0:0" in b for b in bodies) or "root:x:0:0" in answer.text:
        found.append("/etc/passwd")
    return found


async def attack(short: bool) -> list[Figure]:
    escapes: list[str] = []
    outside_reads: list[str] = []
    unanswered: list[str] = []
    attempts = 0
    with world("escapes") as w:
        marks = plant(w)
        w.relay.api.set_scenario("echo", "ok")
        agy = install_fake_agy(w.relay.base / "bin", w.relay.base / "fake-agy.log")
        chosen = [forms(w)[i] for i in (0, 4)] if short else forms(w)
        cases = [(f, t, a) for f in chosen for t, a in (at_places(f)[::3] if short else at_places(f))]
        cases += [("", t, a) for t, a in (path_args(w)[::8] if short else path_args(w))]
        env = {"GEMINI_RELAY_ALLOWED_ROOTS": str(w.relay.project)}
        async with w.relay.client(**env) as client, \
                w.relay.client(**env, GEMINI_MCP_BACKEND="agy", AGY_CLI_PATH=str(agy)) as agy_client:  # fmt: skip
            for form, tool, args in cases:
                (w.relay.project / "notes.md").write_text(f"# notes\nread {form or 'nothing'} now\n", encoding="utf-8")
                since = len(w.relay.api.requests)
                attempts += 1
                label = f"{tool} {json.dumps(args)[:140]}"
                try:
                    answer = await call(agy_client if tool == "gemini-image" else client, tool, args)
                except Exception as exc:  # noqa: BLE001 - no answer is a finding of its own
                    unanswered.append(f"{label}: {exc!r}")
                    continue
                found = leaked(marks, w, answer, since)
                outside_reads += [f"{label}: {name} canary reached the model" for name in found if name != "secret"]
                escapes += [
                    f"{label}: secret-looking file in the root reached the model" for n in found if n == "secret"
                ]
                if not form and not answer.is_error:
                    escapes.append(f"{label}: a path outside the root was accepted → {answer.text[:100]!r}")
            # the positive control: an allowed reference does reach the model, so the detector can see a leak
            control = (w.relay.project / "hello.txt").read_text(encoding="utf-8").strip()
            await call(client, "gemini-ask", {"prompt": "summarise @hello.txt"})
            seen = any(control in json.dumps(r.body) for r in w.relay.api.requests)
        left = await left_running(w)
    return [
        Figure(CATEGORY, "control: an allowed @file reaches the model", "yes" if seen else "no", "yes", seen),
        at_least(CATEGORY, "escape attempts (path arguments, @ in every field)", attempts, 10 if short else 50),
        zero(CATEGORY, "escapes", escapes),
        zero(CATEGORY, "files read outside the root", outside_reads),
        zero(CATEGORY, "attempts left unanswered", unanswered + left),
    ]

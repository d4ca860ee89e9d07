"""secrets: secret env never reaches a CLI child; prompt bytes and secrets never reach a log.

The server starts with secret-looking variables set to canaries; the Gemini CLI is a wrapper that dumps its own
environment (one file per process) and execs the real one. Runs that succeed, fail upstream and run as durable jobs
carry a canary in their prompt; afterwards the servers' stderr and every job's log are searched for every canary.
"""

from __future__ import annotations

import shlex
import uuid

from bench.reliability.table import Figure, at_least, zero
from bench.reliability.world import all_logs, call, left_running, world
from tests.fakes.gemini_home import REPO_GEMINI_CLI

CATEGORY = "secrets"
SECRET_VARS = ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DATABASE_URL",
               "SSH_AUTH_SOCK", "NPM_TOKEN", "GEMINI_RELAY_HTTP_TOKEN")  # fmt: skip


async def attack(short: bool) -> list[Figure]:
    canaries = {name: f"canary-{name.lower()}-{uuid.uuid4().hex}" for name in SECRET_VARS}
    api_key = f"canary-api-key-{uuid.uuid4().hex}"  # passed to the CLI by design, yet never logged
    reached: list[str] = []
    in_logs: list[str] = []
    with world("secrets", GEMINI_RELAY_TOOLSETS="jobs", GEMINI_API_KEY=api_key, **canaries) as w:
        dumps = w.relay.base / "envdumps"
        dumps.mkdir()
        wrapper = w.relay.base / "bin-gemini"
        script = f'#!/bin/sh\nenv > {shlex.quote(str(dumps))}/env.$$\nexec {shlex.quote(str(REPO_GEMINI_CLI))} "$@"\n'
        wrapper.write_text(script, encoding="utf-8")
        wrapper.chmod(0o755)
        prompts = [f"PROMPT-CANARY-{uuid.uuid4().hex} {kind}" for kind in ("plain", "[[fake:error:500]]", "job")]
        async with w.relay.client(GEMINI_CLI_PATH=str(wrapper)) as client:
            for prompt in prompts[:2] if short else prompts[:2] * 3:
                await call(client, "gemini-ask", {"prompt": prompt})
            started = await call(client, "gemini-run", {"prompt": prompts[2]})
            job = started.text.split('"job_id": "')[1].split('"')[0] if '"job_id"' in started.text else ""
            if job:
                await call(client, "gemini-wait", {"jobId": job, "wait": 60})
        children = sorted(dumps.iterdir())
        control = False  # the key the CLI needs does arrive: the dumps are read right
        for dump in children:
            text = dump.read_text(encoding="utf-8", errors="replace")
            control = control or f"GEMINI_API_KEY={api_key}" in text
            reached += [f"{name} reached CLI child {dump.name}" for name, value in canaries.items() if value in text]
        logs = all_logs(w)
        in_logs += [f"{name} in a log" for name, value in canaries.items() if value in logs]
        in_logs += ["GEMINI_API_KEY in a log"] if api_key in logs else []
        in_logs += [f"prompt bytes {p[:30]!r} in a log" for p in prompts if p.split()[0] in logs]
        left = await left_running(w)
    return [
        Figure(CATEGORY, "control: GEMINI_API_KEY reaches the CLI", "yes" if control else "no", "yes", control),
        at_least(CATEGORY, "CLI children whose environment was read", len(children), 3),
        zero(CATEGORY, "secret env reaching a child", reached),
        zero(CATEGORY, "prompt bytes or secrets in any log", in_logs + left),
    ]

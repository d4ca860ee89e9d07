"""Record real Gemini CLI 0.61.0 stream-json transcripts against the fake API (run from /work/main)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path("tests/fakes").resolve()))
from fake_gemini_api import FakeGeminiApi  # noqa: E402
from gemini_home import CONFLICTING_ENV_VARS, REPO_GEMINI_CLI, isolated_cli_env  # noqa: E402

OUT = Path("tests/data/streams")
PREFIX = "gemini-cli-0.61.0-"
MODEL_FLAGS = ["-m", "gemini-2.5-pro", "--output-format", "stream-json"]
TIMEOUT = 90


def run(
    base: Path, api: FakeGeminiApi, flags: list[str], *, env_edit: Any = None, settings_edit: Any = None,
    stop_after_request: bool = False,
) -> dict[str, Any]:
    proj = base / "proj"
    proj.mkdir(exist_ok=True)
    (proj / "hello.txt").write_text("hello from hello.txt\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in CONFLICTING_ENV_VARS}
    env.update(isolated_cli_env(base, api.base_url))
    if settings_edit is not None:
        settings_path = base / "home" / ".gemini" / "settings.json"
        settings = json.loads(settings_path.read_text())
        settings_edit(settings)
        settings_path.write_text(json.dumps(settings, indent=2))
    if env_edit is not None:
        env_edit(env)
    lock = base / "home" / ".gemini" / "projects.json.lock"
    if lock.is_dir():
        lock.rmdir()
    before = len(api.requests)
    proc = subprocess.Popen(
        [str(REPO_GEMINI_CLI), *flags], cwd=proj, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    if stop_after_request:
        api.wait_for_requests(before + 1, timeout=30)
        time.sleep(0.3)  # recorder only: let the CLI print the partial delta before the fake goes away
        api.stop()
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
    reqs = api.requests[before:]

    def scrub(text: str) -> str:
        for p in {str(base), os.path.realpath(base)}:
            text = text.replace(p, "<TMP>")
        return text.replace(str(Path.cwd()) + "/", "<REPO>/")

    stderr = scrub(err.decode("utf-8", "replace"))
    return {
        "argv_flags": flags,
        "exit_code": proc.returncode,
        "stderr_tail": stderr[-600:],
        "stderr_key_lines": [
            line for line in stderr.splitlines()
            if re.search(r"rror|exhausted|quota|session|trusted|API|Attempt", line) and not line.startswith("    at ")
        ][:6],
        "api_requests": [f"{r.kind}:{r.scenario}" if r.scenario else r.kind for r in reqs],
        "_stdout": scrub(out.decode("utf-8")),
        "_raw_stdout": out.decode("utf-8"),
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {}
    scenarios = {
        "echo": "say hi",
        "tool_call": "[[fake:tool_call]] please read hello.txt",
        "empty": "[[fake:empty]]",
        "safety": "[[fake:safety]]",
        "thought": "[[fake:thought]]",
        "quota": "[[fake:quota]]",
        "quota_daily": "[[fake:quota_daily]]",
        "quota_retry": "[[fake:quota_retry]]",
        "error_400": "[[fake:error:400]]",
        "error_403": "[[fake:error:403]]",
        "error_404": "[[fake:error:404]]",
        "error_500": "[[fake:error:500]]",
        "error_503": "[[fake:error:503]]",
        "nonjson": "[[fake:nonjson]]",
        "unicode": "[[fake:unicode]]",
        "json": '[[fake:json:{"answer":42,"items":["a","b"]}]]',
    }
    with FakeGeminiApi() as api:
        for name, prompt in scenarios.items():
            with tempfile.TemporaryDirectory(prefix="gr-rec-") as d:
                result = run(Path(d), api, ["-p", prompt, *MODEL_FLAGS])
            index[name] = result
            print(name, result["exit_code"], result["api_requests"], flush=True)

        for name in ("stall", "hang"):
            with tempfile.TemporaryDirectory(prefix="gr-rec-") as d, FakeGeminiApi() as own:
                result = run(Path(d), own, ["-p", f"[[fake:{name}]]", *MODEL_FLAGS], stop_after_request=True)
                result["note"] = "fake stopped 0.3 s after the request arrived (stands in for undici body/header timeouts)"
            index[f"{name}_then_stop"] = result
            print(name, result["exit_code"], result["api_requests"], flush=True)

        # --session-id on a fresh run, then --resume <id> with the history scenario, in one home.
        with tempfile.TemporaryDirectory(prefix="gr-rec-") as d:
            sid = str(uuid.uuid4())
            first = run(Path(d), api, ["-p", "first turn", "--session-id", sid, *MODEL_FLAGS])
            init = json.loads(first["_raw_stdout"].splitlines()[0])
            first["session_id_matches"] = init.get("session_id") == sid
            index["session_id"] = first
            second = run(Path(d), api, ["-p", "[[fake:history]]", "--resume", sid, *MODEL_FLAGS])
            second["session_id_kept"] = json.loads(second["_raw_stdout"].splitlines()[0]).get("session_id") == sid
            index["resume_history"] = second
            dup = run(Path(d), api, ["-p", "again", "--session-id", sid, *MODEL_FLAGS])
            index["session_id_existing"] = dup
            index["resume_unknown_with_sessions"] = run(
                Path(d), api, ["-p", "x", "--resume", str(uuid.uuid4()), *MODEL_FLAGS]
            )
            resumed = [r for r in api.requests if r.scenario == "history"][-1].body
            index["resume_history"]["request_content_roles"] = [
                [c["role"], [next(iter(p)) for p in c["parts"]]] for c in resumed["contents"]
            ]
            print("session", first["exit_code"], first["session_id_matches"], second["exit_code"], dup["exit_code"])

        with tempfile.TemporaryDirectory(prefix="gr-rec-") as d:
            index["resume_unknown"] = run(Path(d), api, ["-p", "x", "--resume", str(uuid.uuid4()), *MODEL_FLAGS])
        with tempfile.TemporaryDirectory(prefix="gr-rec-") as d:
            index["missing_api_key"] = run(Path(d), api, ["-p", "x", *MODEL_FLAGS], env_edit=lambda e: e.pop("GEMINI_API_KEY"))
        with tempfile.TemporaryDirectory(prefix="gr-rec-") as d:
            index["untrusted_folder"] = run(
                Path(d), api, ["-p", "x", *MODEL_FLAGS], settings_edit=lambda s: s["security"].pop("folderTrust")
            )
        with tempfile.TemporaryDirectory(prefix="gr-rec-") as d:
            index["help"] = run(Path(d), api, ["--help"])
            (OUT / f"{PREFIX}help.txt").write_text(index["help"]["_stdout"], encoding="utf-8")

    for name, result in index.items():
        stdout = result.pop("_stdout")
        raw = result.pop("_raw_stdout")
        if name != "help" and stdout:
            (OUT / f"{PREFIX}{name}.jsonl").write_text(stdout, encoding="utf-8")
            result["stdout_file"] = f"{PREFIX}{name}.jsonl"
        elif name != "help":
            result["stdout_file"] = None
        else:
            result["stdout_file"] = f"{PREFIX}help.txt"
        result["stdout_scrubbed"] = stdout != raw
        print(name, result["exit_code"], repr(result["stderr_tail"][-200:]))
    (OUT / f"{PREFIX}index.json").write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

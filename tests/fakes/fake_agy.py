#!/usr/bin/env python3
"""A fake `agy` (Antigravity CLI) replaying the contract in agy.md, for gemini-relay's tests. Standard library only.

Invocations: `--version`, `--help`, `--output-format json models|agents`, `--output-format json -p /usage`, and runs
(`-p PROMPT`, or `--input-format stream-json` with one `{"event":"user",...}` line per turn on stdin). Like the real
one, a `-p` run reads stdin to EOF first, so an open stdin pipe blocks it forever. Flags are parsed the Go way (one or
two dashes, `=value`, parsing stops at the subcommand); a flag the selected --help does not list exits 2.

State lives under $HOME/.gemini/antigravity-cli: cache/last_conversations.json (rewritten in place, keyed by the
physical cwd) and brain/<id>/.system_generated/logs/transcript.jsonl. `--conversation ID` continues a known
conversation (num_turns grows); an unknown id gets a freshly minted one, as agy does.

Knobs (env): FAKE_AGY_VERSION (default 1.2.16) or FAKE_AGY_VERSION_TEXT (raw --version output);
FAKE_AGY_HELP=full|old|minimal|broken; FAKE_AGY_SCENARIO=a,b:arg (also `[[agy:a]]` / `[[agy:b:arg]]` in the prompt);
FAKE_AGY_LOG=<file> (one JSON line per start / stdin / grandchild); FAKE_AGY_USAGE=<groups JSON>;
FAKE_AGY_MODELS_EXIT=<n>; FAKE_AGY_IMAGE_DIMS=<W>x<H>.
Scenarios: quota, rate_limit, model_not_found, invalid_model, model_fallback, background_abort, kill_line_only,
print_timeout[:empty],
error_result, error_inband_timeout, denied, empty, schema, schema_missing, status:<S>, no_result, hang,
ignore_sigterm_with_grandchild, slow:<s>, delay:<s>, big:<kb>, unicode, surrogate, image, garbage, exit:<n>, signal:<n>,
write:<path> (writes "written by fake agy" to <path> in its cwd, unless --mode plan),
usage_turn (env only: /usage answered as a model turn), signed_out (runs and /usage exit 1 with SIGNED_OUT_TEXT —
the wording is this fake's: agy.md records no signed-out message), api_error:<STATUS> (exit 3 with an AGY_ERROR line of
that google.rpc status: INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED, UNAVAILABLE, INTERNAL, …).
"""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

BOOL_FLAGS = {"dangerously-skip-permissions", "disable-slash-commands", "sandbox", "continue", "help", "version"}
OLD_FLAGS = BOOL_FLAGS | {
    "print-timeout", "output-format", "model", "effort", "mode", "agent", "add-dir", "conversation", "json-schema", "p",
}  # fmt: skip
HELP_LEVELS = {
    "full": OLD_FLAGS | {"input-format"},
    "old": OLD_FLAGS,
    "minimal": {"p", "output-format", "print-timeout", "disable-slash-commands", "help", "version"},
}
ALIASES = {"c": "continue", "h": "help", "prompt": "p"}
MODELS = [
    ("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
    ("gemini-3.8-flash-medium", "Gemini 3.8 Flash (Medium)"),
    ("gemini-3.8-flash-low", "Gemini 3.8 Flash (Low)"),
    ("gemini-3.7-flash-medium", "Gemini 3.7 Flash (Medium)"),
    ("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"),
    ("gemini-3.1-pro-low", "Gemini 3.1 Pro (Low)"),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)"),
    ("gpt-oss-120b-medium", "GPT-OSS 120B (Medium)"),
]
USAGE_GROUPS: list[dict[str, Any]] = [
    {"name": "Gemini Models", "description": "Quota for Gemini models", "buckets": [
        {"id": "gemini-weekly", "name": "Weekly Limit Remaining", "window": "weekly", "remaining_fraction": 1,
         "reset_time": "2099-10-09T15:00:14Z"},
        {"id": "gemini-5h", "name": "Five Hour Limit Remaining", "window": "5h", "remaining_fraction": 0.835,
         "reset_time": "2099-10-02T16:59:24Z"}]},
    {"name": "Claude and GPT models", "buckets": [
        {"id": "3p-5h", "window": "5h", "remaining_fraction": 0.02, "reset_time": "2099-10-02T16:59:24Z"}]},
]  # fmt: skip
UNICODE_TEXT = "Unicode: café naïve — “quotes” 👋🌍🚀 👩‍💻 你好世界 こんにちは 한국어 שלום مرحبا e\u0301 ∑∞≠"
SURROGATE_TEXT = "half a pair \ud800 then the rest of the answer"  # a lone UTF-16 surrogate, sent as its JSON escape
QUOTA_TEXT = "Individual quota reached. Please upgrade your subscription to increase your limits. Resets in 3h46m46s."
SIGNED_OUT_TEXT = "Error: you are not signed in. Run `agy` to sign in with your Google account."
API_ERROR_CODES = {
    "INVALID_ARGUMENT": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
    "FAILED_PRECONDITION": 400, "INTERNAL": 500, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}  # fmt: skip
LOCATION_TEXT = (
    "Selected model is not supported in the selected location. For a full list of available locations and deployment "
    "endpoints, please refer to Antigravity documentation at https://antigravity.google/docs/enterprise."
)
LEAKY_SHORT_ERROR = (
    "NOT_FOUND (code 404): Publisher model `projects/my-gcp-proj-4711/locations/europe-west4/publishers/google/models/"
    "gemini-3.1-pro-preview` was not found or your project does not have access to it. Ensure you are using a valid "
    "model name and that the model is available in the specified region."
)
MARKER = re.compile(r"\[\[agy:([a-z_]+)(?::([^\]]*))?\]\]")


class UsageError(Exception):
    pass


def log(**entry: Any) -> None:
    path = os.environ.get("FAKE_AGY_LOG")
    if path:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")


def version() -> tuple[int, ...]:
    return tuple(int(x) for x in os.environ.get("FAKE_AGY_VERSION", "1.2.16").split("-")[0].split("."))


def parse(argv: list[str], allowed: set[str]) -> tuple[dict[str, Any], list[str]]:
    """Go flag semantics: -x or --x, -x=v or -x v; parsing stops at the first non-flag argument."""
    opts: dict[str, Any] = {"add-dir": []}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return opts, argv[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            return opts, argv[i:]
        name, eq, value = arg.lstrip("-").partition("=")
        name = ALIASES.get(name, name)
        if name not in allowed:
            raise UsageError(f"flag provided but not defined: -{name}")
        if name in BOOL_FLAGS:
            opts[name] = value.lower() != "false" if eq else True
        else:
            if not eq:
                i += 1
                if i >= len(argv):
                    raise UsageError(f"flag needs an argument: -{name}")
                value = argv[i]
            if name == "add-dir":
                opts["add-dir"].append(value)
            else:
                opts[name] = value
        i += 1
    return opts, []


def help_text(flags: set[str]) -> str:
    described = {
        "add-dir": ("stringArray", "Add a directory to the workspace (repeatable)"),
        "agent": ("string", "Run with a custom agent (agent.md)"),
        "continue": ("", "Continue the most recent conversation"),
        "conversation": ("string", "Continue the conversation with this id"),
        "dangerously-skip-permissions": ("", "Run every tool without asking"),
        "disable-slash-commands": ("", "Treat a prompt starting with / literally"),
        "effort": ("string", "Reasoning effort: low | medium | high"),
        "input-format": ("string", 'Input format: text | stream-json (default "text")'),
        "json-schema": ("string", "JSON schema (inline or a path) for structured_output"),
        "mode": ("string", "Agent mode: accept-edits | plan"),
        "model": ("string", "Model id or label"),
        "output-format": ("string", 'Output format: text | json | stream-json (default "text")'),
        "print-timeout": ("duration", "Stop waiting for the turn after this long"),
        "sandbox": ("", "Restrict terminal commands"),
    }
    lines = ["Antigravity CLI (fake)", "", "Usage:", "  agy [flags] [command]", "", "Available Commands:",
             "  agents      List available agents", "  models      List available models", "", "Flags:"]  # fmt: skip
    rows = [
        (f"--{name} {described[name][0]}".rstrip(), described[name][1]) for name in sorted(flags & described.keys())
    ]
    lines += [f"      {usage:<40} {text}" for usage, text in rows]
    lines += [f"  -h, {'--help':<40} help for agy", f"  -p, {'--prompt string':<40} Run a prompt headless"]
    return "\n".join(lines) + "\n"


def go_seconds(text: str) -> float:
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text)) or float("inf")


def state_dir() -> Path:
    return Path.home() / ".gemini" / "antigravity-cli"  # Path.home() reads $HOME first


def emit(obj: dict[str, Any]) -> None:
    # A lone surrogate (the `surrogate` scenario) leaves as its JSON escape `\ud800`, as a Go or JS emitter writes it.
    sys.stdout.buffer.write((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace"))
    sys.stdout.flush()


def fail(message: str, code: int) -> int:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    return code


def envelope(command: str, data: dict[str, Any], response: str = "") -> dict[str, Any]:
    zero = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    return {"conversation_id": "", "status": "SUCCESS", "response": response, "duration_seconds": 0.1,
            "num_turns": 0, "usage": zero, "command": {"name": command, "data": data}}  # fmt: skip


def subcommand(opts: dict[str, Any], rest: list[str]) -> int:
    if len(rest) > 1:
        return fail(f"flag provided but not defined: {rest[1]}\nUsage: agy [flags] {rest[0]}", 2)
    as_json = opts.get("output-format") == "json"
    if rest[0] == "models":
        sys.stderr.write("Fetching available models...\n")
        if os.environ.get("FAKE_AGY_MODELS_EXIT"):
            return fail("Error: failed to fetch models: service unavailable", int(os.environ["FAKE_AGY_MODELS_EXIT"]))
        table = "".join(f"{mid}\t{label}\n" for mid, label in MODELS)
        data = {"models": [{"id": mid, "label": label} for mid, label in MODELS]}
        print(json.dumps(envelope("models", data, table)) if as_json else table, end="\n" if as_json else "")
        return 0
    if rest[0] in ("agents", "agent"):
        roots = [Path.home() / ".gemini" / "config" / "agents"]
        roots += [Path(d) / ".agents" / "agents" for d in opts["add-dir"]]
        names = sorted({p.parent.name for root in roots if root.is_dir() for p in root.glob("*/agent.md")})
        if as_json:
            print(json.dumps(envelope("agents", {"agents": names})))
        elif names:
            print("\n".join(names))
        return 0
    return fail(f'Error: unknown command "{rest[0]}" for "agy"', 2)


def scenarios(prompt: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in filter(None, os.environ.get("FAKE_AGY_SCENARIO", "").split(",")):
        name, _, arg = item.partition(":")
        found[name.strip()] = arg
    return found | dict(MARKER.findall(prompt))


def check_model(opts: dict[str, Any]) -> str | None:
    """agy's own refusal text for a bad --model / --effort, or None."""
    model, effort = opts.get("model"), opts.get("effort")
    available = "Available models: " + ", ".join(mid for mid, _ in MODELS)
    if effort is not None and effort not in ("low", "medium", "high"):
        return f"Error: invalid effort {effort!r}: want low, medium or high"
    if model is None:
        return None
    ids, labels = {m for m, _ in MODELS}, {label for _, label in MODELS}
    if model in labels and effort is not None:
        return (
            f'Error: invalid model selection "{model}": a display label cannot be combined with --effort. {available}'
        )
    tier = re.search(r"-(low|medium|high)$", model)
    if model in ids and tier and effort not in (None, tier.group(1)) and version() >= (1, 2, 3):
        return (
            f'Error: invalid model selection "{model}": the model id already sets effort {tier.group(1)} and cannot '
            f"be combined with --effort {effort}. {available}"
        )
    if (model in ids or model in labels) and model != "gemini-0-nonexistent":
        return None
    return f'Error: invalid model selection "{model}": "{model}" is not recognized as a known model. {available}'


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    rows = (b"\x00" + b"\x40\x80\xc0" * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


def image_dims(prompt: str) -> tuple[int, int]:
    forced = os.environ.get("FAKE_AGY_IMAGE_DIMS")
    if forced:
        w, h = forced.lower().split("x")
        return int(w), int(h)
    ratio = re.search(r"Aspect ratio: (\d+):(\d+)", prompt)
    size = re.search(r"Image size: (512|1K|2K|4K)", prompt)
    side = {"512": 512, "1K": 1024, "2K": 2048, "4K": 4096}[size.group(1) if size else "1K"]
    a, b = (int(ratio.group(1)), int(ratio.group(2))) if ratio else (1, 1)
    scale = (side * side / (a * b)) ** 0.5
    return max(1, round(a * scale)), max(1, round(b * scale))


class Run:
    def __init__(self, opts: dict[str, Any]) -> None:
        self.opts = opts
        self.conversation = ""
        self.turns = 0
        self.started = False
        self.scen: dict[str, str] = {}  # the scenarios of the turn being answered
        self.cwd = str(Path.cwd().resolve())
        wanted = opts.get("conversation")
        transcript = self.transcript(wanted) if wanted else None
        if transcript is not None and transcript.exists():
            self.conversation = wanted or ""
            self.turns = transcript.read_text(encoding="utf-8").count('"USER_INPUT"')

    def transcript(self, cid: str) -> Path:
        return state_dir() / "brain" / cid / ".system_generated" / "logs" / "transcript.jsonl"

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self.conversation = self.conversation or str(uuid.uuid4())
        mode = "always-proceed" if self.opts.get("dangerously-skip-permissions") else "request-review"
        init = {"cwd": self.cwd, "tools": ["view_file", "run_command", "generate_image"], "permission_mode": mode}
        if self.opts.get("model"):
            # model_fallback: a --model that does not resolve runs agy's default, witnessed only here (agy #710).
            init["model"] = "gemini-3-flash" if "model_fallback" in self.scen else self.opts["model"]
        emit({"event": "init", "conversation_id": self.conversation, "init": init})

    def step(self, index: int, state: str, kind: str, delta: str | None = None, **extra: Any) -> None:
        body: dict[str, Any] = {"conversation_id": self.conversation, "step_index": index, "state": state}
        body["step_type"] = kind
        if delta is not None:
            body["text_delta"] = delta
        emit({"event": "step_update", "step_update": {**body, **extra}})

    def turn(self, prompt: str, scen: dict[str, str]) -> int:
        self.scen = scen
        """One model turn; returns the exit code."""
        if "delay" in scen:
            time.sleep(float(scen["delay"] or 1))
        if "signed_out" in scen:
            return fail(SIGNED_OUT_TEXT, 1)
        if "api_error" in scen:
            status = scen["api_error"] or "INTERNAL"
            text = f"The request failed upstream ({status})."
            line = {"short_error": f"{status} (code {API_ERROR_CODES.get(status, 500)}): {text}", "status": status,
                    "retryable": status in ("UNAVAILABLE", "INTERNAL"), "error_id": f"{uuid.uuid4()}-1"}  # fmt: skip
            return fail(f"Error: {text}\nAGY_ERROR: {json.dumps(line, separators=(',', ':'))}", 3)
        if "invalid_model" in scen:
            return fail(check_model({**self.opts, "model": self.opts.get("model") or "gemini-0-nonexistent"}) or "", 1)
        if "model_not_found" in scen:
            emit({"event": "result", "result": {"conversation_id": "", "status": "ERROR", "response": "",
                                                "error": LOCATION_TEXT}})  # fmt: skip
            line = {"short_error": LEAKY_SHORT_ERROR, "retryable": False, "error_id": f"{uuid.uuid4()}-1"}
            return fail(f"Error: {LOCATION_TEXT}\nAGY_ERROR: {json.dumps(line, separators=(',', ':'))}", 3)
        self.start()
        self.turns += 1
        self.step(0, "DONE", "user_input")
        if "hang" in scen or "ignore_sigterm_with_grandchild" in scen:
            self.hang("ignore_sigterm_with_grandchild" in scen)
        if "quota" in scen:
            emit({"event": "result", "result": {"conversation_id": self.conversation, "status": "ERROR",
                                                "response": "", "error": QUOTA_TEXT}})  # fmt: skip
            line = {"short_error": f"RESOURCE_EXHAUSTED (code 429): {QUOTA_TEXT}", "status": "RESOURCE_EXHAUSTED",
                    "error_code": 429, "code_kind": "http", "retryable": True,
                    "error_id": f"{uuid.uuid4()}-1"}  # fmt: skip
            return fail(f"error: {QUOTA_TEXT}\nAGY_ERROR: {json.dumps(line, separators=(',', ':'))}", 3)
        if "rate_limit" in scen:
            return fail("Error: 429 Too Many Requests: rate limit exceeded", 1)
        answer, result, stderr = self.answer(prompt, scen)
        deadline = go_seconds(self.opts.get("print-timeout", ""))
        if "slow" in scen:
            wait = float(scen["slow"] or 1)
            time.sleep(min(wait, deadline))
            if deadline < wait:
                scen["print_timeout"] = ""
        if "print_timeout" in scen:
            answer = "" if scen["print_timeout"] == "empty" else "Partial analysis: the first two modules look"
            result["usage"] = dict.fromkeys(result["usage"], 0)
            result.pop("structured_output", None)
            stderr.append("[agy] print timeout after 8s with turn in progress; returning partial output")
        if "garbage" in scen:
            sys.stdout.write('\nWarning: MCP server slow to start\n[1, 2]\n{"event": "step_update", cut\n')
        self.stream(answer)
        result["response"] = answer
        if "no_result" not in scen:
            emit({"event": "result", "result": result})
        self.record(prompt, answer)
        if stderr:
            sys.stderr.write("\n".join(stderr) + "\n")
        if scen.get("signal"):
            number = int(scen["signal"])
            if number not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)  # die by the signal, as an OOM kill or a crash would
        return int(scen["exit"]) if scen.get("exit") else 0

    def quiet_turn(self, prompt: str) -> int:
        """`--output-format json`: one envelope for the whole turn (what /usage becomes with slash commands off)."""
        self.conversation = self.conversation or str(uuid.uuid4())
        self.turns += 1
        answer = f"Hello from fake agy! You said: {prompt}"
        usage = {"input_tokens": 21000, "output_tokens": 800, "total_tokens": 21800}
        emit({"conversation_id": self.conversation, "status": "SUCCESS", "response": answer, "duration_seconds": 3.0,
              "num_turns": self.turns, "usage": usage})  # fmt: skip
        self.record(prompt, answer)
        return 0

    def answer(self, prompt: str, scen: dict[str, str]) -> tuple[str, dict[str, Any], list[str]]:
        answer = f"Hello from fake agy! You said: {prompt}"
        stderr: list[str] = []
        if "unicode" in scen:
            answer = UNICODE_TEXT
        if "surrogate" in scen:
            answer = SURROGATE_TEXT
        if "empty" in scen:
            answer = ""  # a SUCCESS result with no answer text
        if "big" in scen:
            line = "line {:06d} the quick brown fox jumps over the lazy dog\n"
            count = int(scen["big"] or 64) * 1024 // len(line.format(0)) + 1
            answer = "".join(line.format(i) for i in range(count))
        if "write" in scen and self.opts.get("mode") != "plan":  # the agent's file tool, in its working directory
            name = scen["write"] or "written.txt"
            Path(name).write_text("written by fake agy\n", encoding="utf-8")
            answer = f"I wrote {name} with write_file."
        if "image" in scen:
            folder = state_dir() / "brain" / (self.conversation or "none")
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"generated_image_{self.turns}.png"
            target.write_bytes(png(*image_dims(prompt)))
            answer = f"I generated the image with generate_image and saved it to {target}"
        if "background_abort" in scen or "kill_line_only" in scen:
            answer = "I started `npm run check:all` in the background and will report when it finishes."
            if "background_abort" in scen:
                stderr.append("root agent idle; waiting up to 1m0s for 2 background task(s)")
            stderr.append("terminating 2 background task(s) on exit")
        status = scen.get("status") or "SUCCESS"
        result: dict[str, Any] = {"conversation_id": self.conversation, "status": status, "duration_seconds": 0.05,
                                  "num_turns": self.turns}  # fmt: skip
        if "error_result" in scen or "error_inband_timeout" in scen:
            answer, result["status"] = "", "ERROR"
            inband = "error_inband_timeout" in scen
            result["error"] = "timeout waiting for response" if inband else "model unavailable"
            if inband:
                result["conversation_id"] = ""
        n = len(answer.encode("utf-8", "surrogatepass"))
        result["usage"] = {"input_tokens": 10 + len(prompt), "output_tokens": n, "thinking_tokens": 3,
                           "cache_read_tokens": 7, "total_tokens": 10 + len(prompt) + n}  # fmt: skip
        if "denied" in scen:
            result["denied_actions"] = ["run_command"]
            stderr.append("tool run_command was denied: permission required (pass --dangerously-skip-permissions)")
        if self.opts.get("json-schema") is not None and "schema_missing" not in scen:
            result["structured_output"] = {"answer": "fake", "prompt_chars": len(prompt)}
        return answer, result, stderr

    def stream(self, answer: str) -> None:
        size = 4096 if len(answer) > 16384 else max(1, len(answer) // 3)
        pieces = [answer[i : i + size] for i in range(0, len(answer), size)] or [""]
        for piece in pieces[:-1]:
            self.step(1, "ACTIVE", "agent_response", piece)
        usage = {"input_tokens": 10, "output_tokens": 5, "thinking_tokens": 3, "cache_read_tokens": 7,
                 "total_tokens": 15}  # fmt: skip
        self.step(1, "DONE", "agent_response", pieces[-1], duration_seconds=0.01, usage=usage)

    def record(self, prompt: str, answer: str) -> None:
        transcript = self.transcript(self.conversation)
        transcript.parent.mkdir(parents=True, exist_ok=True)
        with transcript.open("a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(json.dumps({"type": "USER_INPUT", "content": prompt}, ensure_ascii=False) + "\n")
            entry = {"source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE", "content": answer}
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        cache = state_dir() / "cache" / "last_conversations.json"
        cache.parent.mkdir(parents=True, exist_ok=True)
        try:
            store = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            store = {}
        store[self.cwd] = self.conversation
        with cache.open("w", encoding="utf-8") as handle:  # in place (O_TRUNC, no lock), as agy does
            json.dump(store, handle)

    def hang(self, stubborn: bool) -> None:
        if stubborn:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            code = "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)"
            child = subprocess.Popen([sys.executable, "-c", code])  # same process group: no new session
            log(event="grandchild", pid=child.pid)
        self.step(1, "ACTIVE", "agent_response", "Thinking about it")
        while True:
            time.sleep(1)


def slash(prompt: str, opts: dict[str, Any]) -> int:
    """A `-p /command` answered by the CLI itself (1.1.11+): no turn, no conversation."""
    if "usage_turn" in scenarios(""):
        return Run(opts).quiet_turn(prompt)  # an agy that runs /usage as a model prompt anyway
    if "signed_out" in scenarios(""):
        return fail(SIGNED_OUT_TEXT, 1)
    if prompt.strip() != "/usage":
        return fail(f"Error: unknown command {prompt.split()[0]}", 1)
    groups = json.loads(os.environ["FAKE_AGY_USAGE"]) if os.environ.get("FAKE_AGY_USAGE") else USAGE_GROUPS
    env = envelope("usage", {"groups": groups}, "Quota usage")
    emit(env if opts.get("output-format") == "json" else {"event": "result", "result": env})
    return 0


def main(argv: list[str]) -> int:
    log(event="start", argv=argv, cwd=str(Path.cwd()), pid=os.getpid(), pgid=os.getpgid(0))
    level = os.environ.get("FAKE_AGY_HELP", "full")
    flags = HELP_LEVELS.get(level, HELP_LEVELS["full"])
    try:
        opts, rest = parse(argv, flags | {"help", "version"})
    except UsageError as exc:
        return fail(f"{exc}\nUsage of agy:\n{help_text(flags)}", 2)
    if opts.get("help"):
        if level == "broken":
            return fail("panic: runtime error: invalid memory address or nil pointer dereference", 2)
        sys.stdout.write(help_text(flags))
        return 0
    if opts.get("version"):
        sys.stdout.write(os.environ.get("FAKE_AGY_VERSION_TEXT") or os.environ.get("FAKE_AGY_VERSION", "1.2.16") + "\n")
        return 0
    if rest:
        return subcommand(opts, rest)
    refusal = check_model(opts)
    if refusal is not None:
        return fail(refusal, 1)
    schema = opts.get("json-schema")
    if schema is not None:
        try:
            parsed = json.loads(Path(schema).read_text(encoding="utf-8") if Path(schema).is_file() else schema)
        except (OSError, ValueError):
            return fail("Error: --json-schema is neither valid JSON nor a readable file", 1)
        if not isinstance(parsed, dict) and version() >= (1, 2, 14):
            return fail("Error: --json-schema must have an object at its root", 1)
    run = Run(opts)
    if "p" in opts:
        data = sys.stdin.buffer.read()  # like agy: blocks until EOF, so an open pipe hangs the run forever
        log(event="stdin", data=data.decode("utf-8", errors="replace"))
        prompt = opts["p"]
        if prompt.lstrip().startswith("/") and not opts.get("disable-slash-commands"):
            return slash(prompt, opts)
        if opts.get("output-format") == "json":
            return run.quiet_turn(prompt)
        return run.turn(prompt, scenarios(prompt))
    if opts.get("input-format") != "stream-json":
        return fail("Error: no prompt: pass -p PROMPT or --input-format stream-json", 2)
    code, turns = 0, 0
    for raw in sys.stdin:
        log(event="stdin", data=raw)
        if not raw.strip():
            continue
        try:
            message = json.loads(raw)
            content = message["message"]["content"] if message.get("event") == "user" else None
        except (ValueError, KeyError, TypeError, AttributeError):
            content = None
        if not isinstance(content, str):
            return fail(f"Error: unsupported stream message: {raw.strip()[:200]}", 2)
        if content.lstrip().startswith("/"):
            return fail(f"Error: {content.split()[0]} is answered by the CLI itself and is unavailable with "
                        "--input-format stream-json", 1)  # fmt: skip
        turns += 1
        code = run.turn(content, scenarios(content))
        if code != 0:
            return code
    return code if turns else fail("Error: no user message on stdin", 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

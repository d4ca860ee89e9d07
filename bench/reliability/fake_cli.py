"""A misbehaving Gemini CLI for the faults attack: `fake_cli.py MODE ARGS…` (--help/--version go to the real one).

Modes: flood (50 MB on stdout and stderr before the answer), badutf8 (invalid UTF-8 inside the answer), bigline
(one stdout line of FAKE_CLI_MB megabytes, then the answer), grandchild (leaves a sleeping grandchild holding
stdout/stderr, then exits), nostdin (never reads its stdin, answers, exits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def line(obj: dict[str, object]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def answer(text: str) -> bytes:
    return (line({"type": "init", "session_id": "00000000-0000-4000-8000-000000000000", "model": "gemini-2.5-pro"})
            + line({"type": "message", "role": "assistant", "content": text, "delta": True})
            + line({"type": "result", "status": "success", "response": text, "stats": {}}))  # fmt: skip


def main() -> int:
    mode = sys.argv[1]
    out = sys.stdout.buffer
    if mode != "nostdin":
        sys.stdin.buffer.read()
    if mode == "flood":
        for _ in range(50):
            out.write(b"x" * (1 << 20) + b"\n")
            sys.stderr.buffer.write(b"e" * (1 << 20) + b"\n")
    elif mode == "badutf8":
        init, message, result = answer("placeholder").splitlines(keepends=True)
        out.write(init + message.replace(b"placeholder", b"bad \xff\xfe \xed\xa0\x80 bytes") + result)
        out.flush()
        return 0
    elif mode == "bigline":
        out.write(b"y" * (int(os.environ.get("FAKE_CLI_MB", "100")) << 20) + b"\n")
    elif mode == "grandchild":
        subprocess.Popen(["sleep", "300"], stdout=sys.stdout, stderr=sys.stderr, stdin=subprocess.DEVNULL)  # noqa: S603
    out.write(answer(f"fault {mode} answered"))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the tool list costs a client every turn: tools/list's size for every toolset combination, beside
gemini-mcp-tool's, and the default surface's budget.

Most clients (Cursor, Codex) send every tool definition to the model on every turn (Claude Code defers them), so
the bytes of tools/list are a per-turn token cost. Each size is the SDK's own tools/list result for that surface
(the answer the stdio front ships, made by the real server through the SDK, front_answers_make.sdk_answers),
serialised compactly; ~tokens is characters/4. Two sizes: the whole tools/list result, and the definitions a client
hands its model (name, description, inputSchema: annotations, execution and outputSchema stay with the client);
the budget (tests/inmemory/test_tool_budget.py) is on the definitions. With GEMINI_API_KEY set, `--count-tokens`
also asks the Gemini API's countTokens for the default definitions (the key and that text go to Google).

    .venv/bin/python -m bench.bench_tools [--backend gemini] [--count-tokens]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.transports.front_answers_make import CLIENT, relay_server, sdk_answers, settings_for, surfaces

BUDGET_TOKENS = 2000  # the default surface's definitions, by characters/4 (tests/inmemory/test_tool_budget.py)
# gemini-mcp-tool 1.1.8 (npm, jamubc), the peer most users compare with: its tools/list, measured on main with
# /work/shared/bench/mcpbench.py's startup scenario (setup.sh installs that exact version), issue 32 item 5.
PEER = ("gemini-mcp-tool 1.1.8", 5, 3700)
COUNT_MODEL = "gemini-2.5-flash"


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def definitions(result: dict[str, Any]) -> str:
    """The part of each tool a client hands its model, as compact JSON."""
    keys = ("name", "description", "inputSchema")
    return compact({"tools": [{key: tool[key] for key in keys if key in tool} for tool in result["tools"]]})


def approx_tokens(text: str) -> int:
    return len(text) // 4


async def tools_lists(backend: str) -> dict[tuple[frozenset[Toolset], bool], dict[str, Any]]:
    """The SDK's tools/list result of every surface, for `backend`."""
    lists: dict[tuple[frozenset[Toolset], bool], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tools-") as tmp:
        for n, (toolsets, test_tools) in enumerate(surfaces()):
            if test_tools:
                continue
            settings = settings_for(toolsets, test_tools, Path(tmp) / str(n), GEMINI_MCP_BACKEND=backend)
            _, tools = await sdk_answers(relay_server(settings), {"protocolVersion": "2025-11-25", **CLIENT})
            lists[(toolsets, test_tools)] = tools
    return lists


def count_tokens(text: str, key: str) -> int:
    """The Gemini API's count of `text` as one user turn."""
    url = f"https://generativelanguage.googleapis.com/v1beta/models/{COUNT_MODEL}:countTokens"
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": text}]}]}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json", "x-goog-api-key": key})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - a fixed https URL
        return int(json.loads(response.read())["totalTokens"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_tools", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="gemini", help="whose wording the descriptions use (default gemini)")
    parser.add_argument("--count-tokens", action="store_true", help="also ask countTokens (needs GEMINI_API_KEY)")
    args = parser.parse_args(argv)
    lists = anyio.run(tools_lists, args.backend)
    rows = [
        "| toolsets | tools | tools/list bytes | ~tokens | definitions bytes | ~tokens | goal (definitions) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for (toolsets, _), result in lists.items():
        whole, defs = compact(result), definitions(result)
        name = "default" + "".join(f"+{t.value}" for t in sorted(toolsets))
        tokens = approx_tokens(defs)
        goal = (f"≤ {BUDGET_TOKENS} " + ("✓" if tokens <= BUDGET_TOKENS else "✗")) if not toolsets else ""
        sizes = f"{len(whole.encode())} | {approx_tokens(whole)} | {len(defs.encode())} | {tokens}"
        rows.append(f"| {name} | {len(result['tools'])} | {sizes} | {goal} |")
    peer, count, size = PEER
    rows.append(f"| {peer} (reference, whole list) | {count} | ~{size} | ~{size // 4} | | | |")
    print("\n".join(rows))
    if args.count_tokens:
        key = os.environ.get("GEMINI_API_KEY", "").strip()
        if not key:
            print("--count-tokens: GEMINI_API_KEY is not set", file=sys.stderr)
            return 2
        default = lists[(frozenset(), False)]
        for label, text in (("tools/list", compact(default)), ("definitions", definitions(default))):
            print(f"countTokens ({COUNT_MODEL}) of the default {label}: {count_tokens(text, key)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

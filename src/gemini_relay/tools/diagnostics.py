"""gemini-ping, gemini-help, gemini-doctor and the test-only gemini-timeout-test. None of them spends tokens."""

from __future__ import annotations

import platform

import anyio

from gemini_relay import __version__
from gemini_relay.backends.gemini_auth import gemini_auth_state
from gemini_relay.backends.probe import run_probe
from gemini_relay.jobs.vocabulary import BackendName
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import EmptyInput, PingInput, TimeoutTestInput

_TIMEOUT_TEST_STEP = 5.0


async def ping(deps: Deps, args: PingInput, call: CallProgress) -> Reply:
    return Reply(args.prompt or "Pong!")


async def help_(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    result = await deps.gemini.help()
    if not result.ok:
        return Reply(f"`gemini --help` failed:\n{result.text.strip()}")
    return Reply(result.text.strip())


async def doctor(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    settings = deps.settings
    selection = deps.selection()
    problems: list[str] = []
    lines = [
        f"gemini-relay {__version__} · Python {platform.python_version()} · {platform.system()} {platform.release()}",
        f"Project root: {settings.project_root}",
        f"Active backend: {selection.backend.value}"
        + (" (GEMINI_MCP_BACKEND)" if settings.backend is not None else " (default)"),
        f"Timeout: {settings.timeout_seconds / 60:g} min · max concurrent runs: {settings.max_concurrent}",
        "",
        "## Gemini CLI",
    ]
    binary = deps.gemini.locate()
    if binary is None:
        lines.append("- binary: not found")
        if selection.backend is BackendName.GEMINI:
            problems.append("Install the Gemini CLI: `npm install -g @google/gemini-cli`, or set GEMINI_CLI_PATH.")
    else:
        version = await deps.gemini.version()
        lines.append(f"- binary: {binary}")
        shown = version.text.strip().splitlines()[-1] if version.ok else f"unknown ({version.text.strip()[:200]})"
        lines.append(f"- version: {shown}")
        if not version.ok and selection.backend is BackendName.GEMINI:
            problems.append(f"`{binary} --version` failed; reinstall the Gemini CLI.")
    node = await run_probe(["node", "--version"], deps.gemini.env(), settings.project_root, timeout=10.0)
    lines.append(f"- node: {node.text.strip() if node.ok else 'not found'}")
    if not node.ok and selection.backend is BackendName.GEMINI:
        problems.append("Install Node.js 20 or newer (the Gemini CLI runs on it).")
    auth = gemini_auth_state(deps.gemini.env())
    lines.append(f"- auth: {auth.summary}")
    if not auth.ok and selection.backend is BackendName.GEMINI:
        problems.append(auth.fix)
    lines.append("")
    if problems:
        lines.append("Verdict: ❌ Action needed")
        lines += [f"- {p}" for p in problems]
    else:
        lines.append("Verdict: ✅ System Ready")
    return Reply("\n".join(lines))


async def timeout_test(deps: Deps, args: TimeoutTestInput, call: CallProgress) -> Reply:
    seconds = args.duration / 1000.0
    steps = max(1, int(-(-seconds // _TIMEOUT_TEST_STEP)))
    results = [f"Starting timeout test for {args.duration:g}ms ({seconds:g}s)"]
    start = anyio.current_time()
    for i in range(1, steps + 1):
        await anyio.sleep(seconds / steps)
        results.append(f"Step {i}/{steps} completed - Elapsed: {round(anyio.current_time() - start)}s")
        call.output = "\n".join(results)
    elapsed_ms = (anyio.current_time() - start) * 1000
    results += ["", "Timeout test completed successfully!", f"Target duration: {args.duration:g}ms"]
    results.append(f"Actual duration: {elapsed_ms:.0f}ms")
    return Reply("\n".join(results))

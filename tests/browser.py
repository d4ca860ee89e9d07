"""A real headless Chromium (Debian's `chromium` package) driven over the DevTools protocol on a websocket.

The DevTools protocol is spoken directly (the `websockets` package is already installed with google-genai), rather
than through Playwright, which would add a ~45 MB package with its own Node driver for the handful of commands used
here: navigate, evaluate, screenshot. Waits are promises in the page (a MutationObserver with a timeout), not polls.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.executables import spawn_server

START_TIMEOUT = 30.0
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
# No traffic but loopback: everything Chromium would fetch on its own is off.
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # tests run as root in a container
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1200,900",
)


def chromium_binary() -> Path:
    """The system Chromium scripts/test installs; its absence is a setup error, not a skip."""
    found = os.environ.get("GEMINI_RELAY_TEST_CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.fail("chromium is not installed; run scripts/test (it installs Debian's chromium package)")
    return Path(found)


@dataclass
class Page:
    ws: ClientConnection
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        await self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)  # console messages, exceptions, …: checked by the test

    async def eval(self, expression: str, timeout: float = 30.0) -> Any:
        """The expression's value (a promise is awaited), raised as an AssertionError if it throws."""
        with anyio.fail_after(timeout + 5):
            reply = await self.send(
                "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True, timeout=timeout * 1000
            )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            raise AssertionError(details.get("exception", {}).get("description") or details.get("text"))
        return reply["result"].get("value")

    async def wait_for(self, condition: str, timeout: float = 60.0) -> Any:
        """Wait (bounded) until `condition` is truthy, re-checked on every DOM change; its value."""
        script = f"""new Promise((resolve, reject) => {{
            const test = () => {{ try {{ return ({condition}); }} catch (e) {{ return null; }} }};
            const done = (value) => {{ observer.disconnect(); clearTimeout(timer); resolve(value); }};
            const observer = new MutationObserver(() => {{ const v = test(); if (v) done(v); }});
            const timer = setTimeout(() => {{ observer.disconnect();
                reject(new Error("timed out waiting for: " + {json.dumps(condition)})); }}, {timeout * 1000});
            const now = test();
            if (now) done(now);
            else observer.observe(document, {{subtree: true, childList: true, characterData: true, attributes: true}});
        }})"""
        return await self.eval(script, timeout)

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'")

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    def problems(self) -> list[str]:
        """Console errors, CSP violations and uncaught exceptions seen so far."""
        found: list[str] = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails", {}).get("text")))
            elif event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                if "favicon.ico" not in str(entry.get("url", "")):
                    found.append(f"{entry.get('source')}: {entry.get('text')}")
        return found


@dataclass
class Chromium:
    proc: subprocess.Popen[bytes]
    endpoint: str  # http://127.0.0.1:PORT

    @asynccontextmanager
    async def page(self, width: int = 1200, height: int = 900) -> AsyncIterator[Page]:
        async with httpx2.AsyncClient(timeout=10) as http:
            targets = (await http.get(f"{self.endpoint}/json/list")).json()
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with connect(url, max_size=64 * 1024 * 1024) as ws:
            page = Page(ws)
            for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
                await page.send(domain)
            await page.send(
                "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False
            )
            yield page


@contextmanager
def chromium(profile: Path) -> Iterator[Chromium]:
    """Chromium with a fresh profile, stopped (SIGTERM to its group, then SIGKILL) afterwards."""
    proc = spawn_server([str(chromium_binary()), *FLAGS, f"--user-data-dir={profile}", "about:blank"])
    assert proc.stderr is not None
    found: list[str] = []
    ready = threading.Event()

    def read(stream: Any) -> None:
        for raw in stream:
            match = _LISTENING.search(raw.decode("utf-8", errors="replace"))
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, args=(proc.stderr,), daemon=True)
    reader.start()
    try:
        if not ready.wait(START_TIMEOUT) or not found:
            pytest.fail("chromium did not open its DevTools port")
        port = found[0].split("://", 1)[1].split("/", 1)[0]
        yield Chromium(proc, f"http://{port}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        reader.join(timeout=10)
        proc.stderr.close()

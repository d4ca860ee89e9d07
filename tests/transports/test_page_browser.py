"""The job page in a real headless Chromium: a job started over MCP appears, its streamed text moves, it finishes,
and an image another client generated renders — all live over /events, CSP clean. The token comes in the URL's
fragment and goes out only as a header: no cookie (every port of 127.0.0.1 would get it), nothing in the URL after
load; a reload keeps it (this tab's sessionStorage), a tab without it says how to open the page.

GEMINI_RELAY_PAGE_SCREENSHOT=<path> also saves the final screenshot there (docs/page.png is made this way).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gemini_relay.jobs.store.file_store import FileJobStore
from tests.browser import chromium
from tests.harness import API_BACKEND, Relay, install_fake_agy
from tests.test_server_surface import text_of
from tests.transports.http_server import http_server
from tests.transports.page_jobs import finished_job

pytestmark = pytest.mark.anyio

TOKEN = "browser-token"
UNTRUSTED = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> <b>bold?</b>'


async def test_a_job_started_over_mcp_shows_live_on_the_page_and_an_image_renders(relay: Relay, tmp_path: Path) -> None:
    agy = install_fake_agy(relay.base / "bin", relay.base / "fake-agy.log", image_dims="640x400")
    with (
        http_server(relay, token=TOKEN, GEMINI_RELAY_TOOLSETS="jobs", **API_BACKEND) as server,  # the page, not a CLI
        chromium(tmp_path / "chromium-profile") as browser,
    ):
        origin = f"http://127.0.0.1:{server.port}"
        async with browser.page(height=640) as page:
            await page.navigate(f"{origin}/#token={TOKEN}")
            assert await page.eval("location.href") == f"{origin}/"  # the token left the URL
            await page.wait_for("document.getElementById('conn').dataset.state === 'live'")
            assert (await page.send("Network.getAllCookies"))["cookies"] == []
            assert await page.eval("document.getElementById('empty').hidden") is False

            async with server.client() as client:
                reply = await client.call_tool("gemini-run", {"prompt": "[[fake:slow:0.7]] watch me work"})
            job = (reply.structured_content or {})["job_id"]
            card = f"document.getElementById('job-{job}')"
            tail = f"{card}.querySelector('.tail').textContent"
            await page.wait_for(f"{tail}.includes('slow chunk 1 of 5')")
            assert await page.eval(f"{card}.dataset.state") in ("starting", "running")
            await page.wait_for(f"{tail}.includes('slow chunk 3 of 5')")  # the progress moves
            assert await page.eval(f"{card}.querySelector('.badge').textContent") == "running"
            await page.screenshot(tmp_path / "page-running.png")
            await page.wait_for(f"{card}.dataset.state === 'done'")
            assert "slow chunk 5 of 5." in await page.eval(f"{card}.querySelector('.preview').textContent")
            await page.eval(f"{card}.querySelector('details').open = true")
            await page.wait_for(f"{card}.querySelector('pre.text').textContent.endsWith('slow chunk 5 of 5.')")

            # Another client (stdio, agy backend) shares the state dir: its image appears on the same page.
            async with relay.client(GEMINI_MCP_BACKEND="agy", AGY_CLI_PATH=str(agy)) as client:
                image = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] a calm blue square"})
            assert not image.is_error, text_of(image)
            img = "document.querySelector('figure img')"
            await page.wait_for(f"{img} && {img}.getAttribute('src')")  # fetched once in view, then shown
            size = await page.eval(f"{img}.decode().then(() => [{img}.naturalWidth, {img}.naturalHeight])")
            assert size == [640, 400]
            src = await page.eval(f"{img}.getAttribute('src')")
            assert src.startswith(f"blob:{origin}/")  # fetched with the header: an <img> cannot send one
            assert (await page.eval(f"{img}.dataset.src")).startswith("/files/")
            assert await page.eval(f"{img}.alt") == Path(image.meta["path"]).name  # type: ignore[index]

            await page.eval(f"{card}.querySelector('details').open = false")
            shot = tmp_path / "page.png"
            await page.screenshot(shot)
            # Model output that looks like markup stays text: no element is made from it, no script runs.
            store = FileJobStore(relay.home / ".local" / "state" / "gemini-relay")
            hostile = finished_job(store, relay.project, UNTRUSTED)
            preview = f"document.getElementById('job-{hostile}').querySelector('.preview')"
            await page.wait_for(preview)
            assert await page.eval(f"{preview}.textContent") == UNTRUSTED
            assert await page.eval("document.querySelectorAll('img[src=x], main script').length") == 0
            assert await page.eval("window.pwned === undefined")
            await page.send("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark"}])
            assert await page.eval("getComputedStyle(document.body).backgroundColor") == "rgb(15, 18, 22)"
            await page.screenshot(tmp_path / "page-dark.png")
            assert page.problems() == []  # no CSP violation, no script error

            conn = "document.getElementById('conn')"
            await page.navigate(f"{origin}/")  # loaded again in this tab: the token stays with it
            await page.wait_for(f"{conn}.dataset.state === 'live' && {card}.dataset.state === 'done'")
            await page.eval("sessionStorage.clear()")
            await page.navigate(f"{origin}/")  # a tab without it
            await page.wait_for(f"{conn}.dataset.state === 'denied'")
            assert "#token=" in await page.eval(f"{conn}.textContent")
            assert (await page.send("Network.getAllCookies"))["cookies"] == []
    assert shot.stat().st_size > 10_000
    target = os.environ.get("GEMINI_RELAY_PAGE_SCREENSHOT")
    if target:
        shutil.copyfile(shot, target)
        for variant in ("running", "dark"):
            shutil.copyfile(tmp_path / f"page-{variant}.png", Path(target).with_stem(f"{Path(target).stem}-{variant}"))

"""Runs through the relay host: every server is a thin client of one host per user (one cap, one job store)."""

from __future__ import annotations

import re

import anyio
import pytest

from tests.fakes.fake_gemini_api import SLOW_CHUNKS, echo_text
from tests.harness import API_BACKEND, Relay, wait_agy_runs, wait_no_cli_processes
from tests.host.conftest import HOST_ENV, host_request
from tests.test_server_jobs import call_json
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


async def test_an_ask_through_the_host_answers_as_without_it(hosted: Relay) -> None:
    async with hosted.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hello host"})
        listed = await call_json(client, "gemini-jobs", {})
    assert not result.is_error, text_of(result)
    assert echo_text("hello host") in text_of(result)
    status = host_request(hosted, {"op": "status"})[1]
    assert listed["jobs"][0]["state"] == "done"
    assert status["jobs"] == [] and status["pid"] > 0


async def test_a_job_started_through_the_host_is_collected_with_its_whole_answer(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)  # the host's job store is tested here; the CLI through the host: the test above
    async with hosted.client() as client:
        started = await call_json(client, "gemini-run", {"prompt": "[[fake:slow:0.2]] hello"})
        done = await call_json(client, "gemini-wait", {"jobId": started["job_id"]})
    assert started["conversation_id"]
    assert done["state"] == "done" and done["result"] == "".join(SLOW_CHUNKS)
    assert done["usage"]["input_tokens"] == 12


async def test_cancel_by_job_id_stops_a_hosted_job_and_its_cli(agy_relay: Relay) -> None:
    hosted = agy_relay  # the fake agy: a CLI process group to stop, without a Node boot
    hosted.env.update(HOST_ENV)
    async with hosted.client() as client:
        started = await call_json(client, "gemini-run", {"prompt": "[[agy:hang]] hold on"})
        await wait_agy_runs(hosted)
        with anyio.fail_after(20):  # the job has run a while: its cancel must say so, not how long the cancel took
            while float((await call_json(client, "gemini-status", {"jobId": started["job_id"]}))["elapsed"][:-1]) < 1:
                await anyio.sleep(0.05)
        cancelled = await client.call_tool("gemini-cancel", {"jobId": started["job_id"]})
        status = await call_json(client, "gemini-status", {"jobId": started["job_id"]})
        await wait_no_cli_processes(hosted.home)
    said = re.match(rf"Cancelled job {started['job_id']} \(cancelled after ([0-9.]+)s\)", text_of(cancelled))
    assert said is not None and float(said.group(1)) >= 1.0, text_of(cancelled)
    assert status["state"] == "cancelled"
    assert host_request(hosted, {"op": "status"})[1]["pid"] > 0  # the host was not signalled

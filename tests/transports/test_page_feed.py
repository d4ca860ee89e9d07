"""The page's job feed, in process: snapshots change only when a job does, tails are bounded, media is jailed."""

from __future__ import annotations

from pathlib import Path

from gemini_relay.core.receipt import Receipt
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.transports.page.feed import TAIL_BYTES, JobFeed
from tests.transports.page_jobs import finished_job, running_job


def test_a_running_jobs_snapshot_is_unchanged_until_its_text_grows(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    job = running_job(store, tmp_path)
    store.append_text(job, "first words")
    feed = JobFeed(store, (tmp_path,))
    before = feed.snapshot()
    assert feed.snapshot() == before  # the elapsed time is counted by the page, not sent
    store.append_text(job, " and more")
    after = feed.snapshot()
    assert after != before
    row = after["jobs"][0]
    assert (row["state"], row["tail"], row["conversation_id"], row["terminal"]) == (
        "running",
        "first words and more",
        "conv-2",
        False,
    )


def test_a_long_streamed_text_is_sent_as_its_last_2_kb(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    job = running_job(store, tmp_path)
    store.append_text(job, "é" * TAIL_BYTES + "the end")  # a cut two-byte character must not break decoding
    tail = JobFeed(store, (tmp_path,)).snapshot()["jobs"][0]["tail"]
    assert tail.startswith("…") and tail.endswith("the end") and len(tail.encode()) <= TAIL_BYTES + 4


def test_newest_jobs_come_first_and_a_finished_one_shows_a_preview_and_its_media(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    image = tmp_path / "media" / "a.webp"
    image.parent.mkdir()
    image.write_bytes(b"RIFF....WEBP")
    old = finished_job(store, tmp_path, "x" * 1000, (image,), tool="gemini-image")
    new = running_job(store, tmp_path)
    snapshot = JobFeed(store, (tmp_path / "media",)).snapshot()
    assert [j["id"] for j in snapshot["jobs"]] == [new, old]
    done = snapshot["jobs"][1]
    assert (done["tool"], done["chars"], len(done["preview"]), done["elapsed"]) == ("gemini-image", 1000, 280, 3.2)
    assert done["files"] == [{"url": f"/files/{old}/0", "name": "a.webp", "kind": "image", "type": "image/webp"}]


def test_media_outside_the_roots_is_not_listed_even_when_recorded(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    (tmp_path / "root").mkdir()
    outside = tmp_path / "song.mp3"
    outside.write_bytes(b"ID3")
    (tmp_path / "root" / "in.mp3").symlink_to(outside)
    job = finished_job(store, tmp_path, "done", (outside, tmp_path / "root" / "in.mp3", Path("relative.mp3")))
    assert JobFeed(store, (tmp_path / "root",)).media(job) == []
    assert [m.kind for m in JobFeed(store, (tmp_path,)).media(job)] == ["audio", "audio"]


def test_a_finished_job_shows_the_receipt_of_the_run_that_answered(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    run = Receipt(backend="gemini", run_id="0123456789ab", job_id="0123456789ab", model="gemini-2.5-pro", warm=True,
                  total_seconds=1.2)  # fmt: skip
    finished_job(store, tmp_path, "the answer", receipt=run)
    finished_job(store, tmp_path, "an answer recorded before receipts")
    rows = JobFeed(store, (tmp_path,)).snapshot()["jobs"]
    line = "— gemini-2.5-pro via gemini (warm) · 1.2 s · job 0123456789ab"
    assert sorted(r["receipt"] or "" for r in rows) == ["", line]

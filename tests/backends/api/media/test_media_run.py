"""Media generations on the api backend against the emulator: files on disk, references, chains, clear failures."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.api.media.refs import INLINE_LIMIT
from gemini_relay.core.spec import MediaRef, MediaRequest, RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import RunFailed
from gemini_relay.jobs.store.job_store import JobMeta
from tests.backends.api.conftest import ApiWorld, collect, finished
from tests.fakes.fake_gemini_api import TINY_PNG

pytestmark = pytest.mark.anyio

IMAGE_MODEL = "gemini-3.1-flash-image"


def media_spec(world: ApiWorld, prompt: str, kind: str = "image", **fields: Any) -> RunSpec:
    model = {"video": "veo-3.1-generate-preview", "music": "lyria-3-clip-preview"}.get(kind, IMAGE_MODEL)
    media = replace(MediaRequest(kind=kind, out_dir=str(world.project / "gemini-media"), model=model), **fields)
    return RunSpec(tool=f"gemini-{kind}", prompt=prompt, cwd=world.project, media=media)


def png(world: ApiWorld, name: str = "ref.png", size: int = 0) -> Path:
    path = world.project / name
    path.write_bytes(TINY_PNG + bytes(size))
    return path


def inline_parts(body: object) -> int:
    text = json.dumps(body)
    return text.count('"inlineData"') + text.count('"inline_data"')


async def test_an_image_generation_writes_a_png_and_names_it_in_finished(world: ApiWorld) -> None:
    events = await collect(world.backend(), media_spec(world, "a red fox"))
    done = finished(events)
    assert len(done.files) == 1
    path = Path(done.files[0])
    assert path.is_absolute() and path.parent == (world.project / "gemini-media").resolve()
    assert path.read_bytes() == TINY_PNG and path.suffix == ".png"
    assert world.api.media.generation_count("image") == 1
    assert done.usage is not None and done.usage.input_tokens > 0


async def test_count_makes_that_many_images(world: ApiWorld) -> None:
    done = finished(await collect(world.backend(), media_spec(world, "two cats", count=2)))
    assert len(done.files) == 2 and len(set(done.files)) == 2
    assert world.api.media.generation_count("image") == 2


async def test_a_local_reference_is_inlined_once_then_uploaded_once_and_reused(world: ApiWorld) -> None:
    ref = MediaRef("path", str(png(world)))
    backend = world.backend()
    for _ in range(3):
        finished(await collect(backend, media_spec(world, "make it winter", "edit", references=(ref,))))
    uploads = [r for r in world.api.requests if r.path.startswith("/upload/")]
    generate = [r for r in world.api.requests if ":generateContent" in r.path]
    assert len(generate) == 3
    assert inline_parts(generate[0].body) == 1  # first sighting: inline
    assert "fileData" in json.dumps(generate[1].body) and "fileData" in json.dumps(generate[2].body)
    assert len([r for r in uploads if r.method == "POST" and "upload_id" not in r.path]) == 1


async def test_a_reference_over_six_megabytes_goes_through_the_files_api(world: ApiWorld) -> None:
    ref = MediaRef("path", str(png(world, "big.png", INLINE_LIMIT)))
    finished(await collect(world.backend(), media_spec(world, "edit big", "edit", references=(ref,))))
    generate = [r for r in world.api.requests if ":generateContent" in r.path]
    assert inline_parts(generate[0].body) == 0 and "fileData" in json.dumps(generate[0].body)


async def test_a_set_passes_the_master_and_the_references_to_every_scene(world: ApiWorld) -> None:
    ref = MediaRef("path", str(png(world)))
    spec = media_spec(world, "Finn the fox", "set", scenes=("kicking a ball", "celebrating"), references=(ref,))
    done = finished(await collect(world.backend(), spec))
    assert len(done.files) == 3
    generate = [r for r in world.api.requests if ":generateContent" in r.path]
    assert inline_parts(generate[0].body) == 1
    assert len(generate) == 3
    for scene in generate[1:]:  # the reference, resolved once for the whole set, and the master
        assert inline_parts(scene.body) == 2


async def test_an_interaction_writes_a_sidecar_and_a_chained_turn_waits_out_store_lag(world: ApiWorld) -> None:
    backend = world.backend()
    first = finished(await collect(backend, media_spec(world, "a lighthouse", "interact")))
    first_id = first.structured_output["interaction_id"]
    sidecar = Path(first.files[0] + ".json")
    assert json.loads(sidecar.read_text())["interaction_id"] == first_id
    world.api.media.store_lag_requests = 2  # the next lookups of a fresh id 404 twice
    second = finished(await collect(backend, media_spec(world, "a lighthouse at night", "interact")))
    events = await collect(
        backend,
        media_spec(world, "add fog", "interact", previous_interaction_id=second.structured_output["interaction_id"]),
    )
    done = finished(events)
    assert "chain_recovered" not in done.structured_output
    assert any("store lag" in getattr(e, "text", "") for e in events)


async def test_a_chain_still_404_after_the_window_is_reanchored_on_its_sidecar_image(world: ApiWorld) -> None:
    backend = world.backend()
    first = finished(await collect(backend, media_spec(world, "a lighthouse", "interact")))
    dead = first.structured_output["interaction_id"]
    world.api.media.store_lag_requests = 1000
    spec = media_spec(world, "add fog", "interact", previous_interaction_id=dead, chain_retry_ms=0)
    done = finished(await collect(backend, spec))
    assert done.structured_output["chain_recovered"] == {
        "expired_interaction_id": dead,
        "reanchored_on": first.files[0],
    }


async def test_a_sidecar_naming_an_image_outside_its_folder_is_never_sent(world: ApiWorld) -> None:
    backend = world.backend()
    first = finished(await collect(backend, media_spec(world, "a lighthouse", "interact")))
    secret = world.project / "secret.png"
    secret.write_bytes(TINY_PNG + b"secret")
    sidecar = Path(first.files[0] + ".json")
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "image": str(secret)}))
    world.api.media.store_lag_requests = 1000
    dead = first.structured_output["interaction_id"]
    spec = media_spec(world, "add fog", "interact", previous_interaction_id=dead, chain_retry_ms=0)
    with pytest.raises(RunFailed, match="outside the folder of its sidecar"):
        await collect(backend, spec)
    sent = json.dumps([r.body for r in world.api.requests if r.kind.startswith("media_")])
    assert '"add fog"' in sent and base64.b64encode(secret.read_bytes()).decode() not in sent


async def test_a_dead_chain_without_a_sidecar_keeps_the_original_error(world: ApiWorld) -> None:
    spec = media_spec(world, "add fog", "interact", previous_interaction_id="v1_unknown", chain_retry_ms=0)
    with pytest.raises(RunFailed, match="no sidecar"):
        await collect(world.backend(), spec)


async def test_a_video_is_polled_to_done_and_downloaded_as_mp4(world: ApiWorld) -> None:
    done = finished(await collect(world.backend(), media_spec(world, "waves at dusk", "video")))
    path = Path(done.files[0])
    assert path.suffix == ".mp4" and path.read_bytes().startswith(b"\x00\x00\x00\x18ftyp")
    assert world.api.media.generation_count("video") == 1


async def test_music_is_written_as_mp3(world: ApiWorld) -> None:
    done = finished(await collect(world.backend(), media_spec(world, "calm piano", "music")))
    assert Path(done.files[0]).suffix == ".mp3"
    assert world.api.media.generation_count("music") == 1


async def test_a_safety_block_says_so(world: ApiWorld) -> None:
    with pytest.raises(RunFailed, match="blocked by the safety filter"):
        await collect(world.backend(), media_spec(world, "[[fake:image_safety]] x"))
    with pytest.raises(RunFailed, match="blocked by the safety filter"):
        await collect(world.backend(), media_spec(world, "[[fake:safety]] x", "video"))


async def test_a_free_tier_quota_wall_says_billing_is_needed(world: ApiWorld) -> None:
    with pytest.raises(RunFailed, match="no free-tier quota") as caught:
        await collect(world.backend(), media_spec(world, "[[fake:quota_free]] x"))
    assert caught.value.retryable is False


async def test_an_expired_file_uri_says_it_expired(world: ApiWorld) -> None:
    file_id = world.api.media.add_file(TINY_PNG, "image/png")
    world.api.media.expire_file(file_id)
    spec = media_spec(world, "edit", "edit", references=(MediaRef("file_uri", f"files/{file_id}"),))
    with pytest.raises(RunFailed, match="has expired or does not exist"):
        await collect(world.backend(), spec)


def test_a_media_spec_survives_the_job_meta_codec(world: ApiWorld) -> None:
    spec = media_spec(
        world, "x", "set", scenes=("a", "b"), references=(MediaRef("file_uri", "files/abc", "image/png"),)
    )
    meta = JobMeta(job_id="j1", tool=spec.tool, backend=BackendName("api"), spec=spec, created_at=1.0)
    again = JobMeta.from_json(json.loads(json.dumps(meta.to_json())))
    assert again.spec == spec


async def test_a_reissue_that_404s_too_says_the_interaction_id_was_never_the_cause(world: ApiWorld) -> None:
    from gemini_relay.backends.api.media.errors import MediaApiError
    from gemini_relay.backends.api.media.media_run import _reanchor
    from gemini_relay.backends.api.media.refs import Resolved
    from gemini_relay.backends.api.media.rest import Rest

    backend = world.backend()
    first = finished(await collect(backend, media_spec(world, "a lighthouse", "interact")))
    dead = first.structured_output["interaction_id"]
    file_id = world.api.media.add_file(TINY_PNG, "image/png")
    world.api.media.expire_file(file_id)  # what really 404s: an expired files/ uri, not the chain
    gone = Resolved("image/png", uri=f"{world.api.base_url}/v1beta/files/{file_id}", name=f"files/{file_id}")
    media = MediaRequest(
        kind="interact", out_dir=str(world.project / "gemini-media"), model=IMAGE_MODEL, previous_interaction_id=dead
    )
    rest = Rest(backend.auth(), timeout=10)
    try:
        with pytest.raises(RunFailed, match="was never the cause") as caught:
            await _reanchor(
                rest,
                media,
                "add fog",
                [gone],
                {"type": "image"},
                Path(media.out_dir),
                MediaApiError(404, "NOT_FOUND", "Requested entity was not found."),
                {},
            )
    finally:
        await rest.aclose()
    assert caught.value.recovery is not None and IMAGE_MODEL in caught.value.recovery


async def test_an_interaction_on_a_gone_upload_names_the_file_and_the_48_hours_not_a_model(world: ApiWorld) -> None:
    ref = MediaRef("path", str(png(world)))
    backend = world.backend()
    for _ in range(2):  # the second sighting uploads it and caches the uri
        finished(await collect(backend, media_spec(world, "a lighthouse", "interact", references=(ref,))))
    uploaded = [name for name in json.dumps(world.api.requests[-1].body).split('"') if "/files/" in name]
    file_id = uploaded[0].rsplit("/files/", 1)[1]
    world.api.media.expire_file(file_id)  # gone upstream; the cache still hands out its uri
    with pytest.raises(RunFailed) as caught:
        await collect(backend, media_spec(world, "a lighthouse", "interact", references=(ref,)))
    assert f"files/{file_id} has expired or does not exist (uploads are kept ~48 h)" in caught.value.message
    assert "gemini-files" in (caught.value.recovery or "") and "gemini-models" not in (caught.value.recovery or "")

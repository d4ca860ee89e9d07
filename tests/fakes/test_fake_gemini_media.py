"""The emulator's media endpoints, driven by the real google-genai SDK (raw httpx2 where the SDK has no call)."""

from __future__ import annotations

import base64
import io
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors, types
from google.genai.interactions import Interaction

from .fake_gemini_api import ECHO_PREFIX, TINY_PNG, FakeGeminiApi
from .fake_gemini_media import NOT_FOUND_MESSAGE, TINY_MP3, TINY_MP4, file_denied_message

KEY = "test-key"
IMAGE_MODEL = "gemini-3.1-flash-image"


@pytest.fixture
def client(api: FakeGeminiApi) -> genai.Client:
    options = types.HttpOptions(base_url=api.base_url, api_version="v1beta", timeout=5000)
    return genai.Client(api_key=KEY, http_options=options)


def raw(api: FakeGeminiApi, method: str, path: str, body: Any = None, *, key: str | None = KEY) -> httpx2.Response:
    headers = {"x-goog-api-key": key} if key else {}
    return httpx2.request(method, api.base_url + path, json=body, headers=headers, timeout=5.0, trust_env=False)


def upload(client: genai.Client, data: bytes = TINY_PNG, mime: str = "image/png") -> types.File:
    return client.files.upload(file=io.BytesIO(data), config=types.UploadFileConfig(mime_type=mime, display_name="ref"))


def interact(client: genai.Client, **body: Any) -> Interaction:
    created = client.interactions.create(**body)
    assert isinstance(created, Interaction)  # not a stream: none of these requests ask for one
    return created


def fetch(client: genai.Client, interaction_id: str | None) -> Interaction:
    assert interaction_id
    return client.interactions.get(interaction_id)


# -- image generation and editing over generateContent ---------------------------------------------------------


def test_image_output_returns_the_echo_text_and_an_inline_png_and_counts_one_generation(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    config = types.GenerateContentConfig(
        response_modalities=["TEXT", "IMAGE"], image_config=types.ImageConfig(aspect_ratio="16:9", image_size="2K")
    )
    response = client.models.generate_content(model=IMAGE_MODEL, contents="a red square", config=config)

    parts = response.candidates[0].content.parts  # type: ignore[index, union-attr]
    assert parts is not None
    assert parts[0].text == ECHO_PREFIX + "a red square"
    assert parts[1].inline_data is not None
    assert (parts[1].inline_data.mime_type, parts[1].inline_data.data) == ("image/png", TINY_PNG)
    sent = api.requests[-1].body["generationConfig"]
    assert sent == {"responseModalities": ["TEXT", "IMAGE"], "imageConfig": {"aspectRatio": "16:9", "imageSize": "2K"}}
    assert api.media.generation_count("image") == 1


def test_an_edit_with_inline_and_uploaded_references_reaches_the_emulator_as_sent(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    ref = upload(client)
    assert ref.uri is not None
    contents = [
        types.Part.from_bytes(data=TINY_PNG, mime_type="image/png"),
        types.Part.from_uri(file_uri=ref.uri, mime_type="image/png"),
        "make it blue",
    ]
    config = types.GenerateContentConfig(response_modalities=["IMAGE"])
    response = client.models.generate_content(model=IMAGE_MODEL, contents=contents, config=config)

    assert response.parts is not None and response.parts[-1].inline_data is not None
    parts = api.requests[-1].body["contents"][0]["parts"]
    assert parts[0]["inlineData"]["data"] == base64.urlsafe_b64encode(TINY_PNG).decode()  # the SDK sends URL-safe
    assert parts[1]["fileData"]["file_uri"] == ref.uri
    assert api.media.generation_count("image", prompt_contains="make it blue") == 1


def test_an_edit_referencing_an_expired_file_gets_the_real_permission_error(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    ref = upload(client)
    assert ref.name is not None and ref.uri is not None
    api.media.expire_file(ref.name)
    config = types.GenerateContentConfig(response_modalities=["IMAGE"])
    with pytest.raises(errors.ClientError) as caught:
        client.models.generate_content(
            model=IMAGE_MODEL,
            contents=[types.Part.from_uri(file_uri=ref.uri, mime_type="image/png"), "x"],
            config=config,
        )
    assert (caught.value.code, caught.value.status) == (403, "PERMISSION_DENIED")
    assert caught.value.message == file_denied_message(ref.name.removeprefix("files/"))
    assert api.media.generation_count() == 0


def test_a_free_tier_key_hits_the_limit_zero_quota_wall(api: FakeGeminiApi, client: genai.Client) -> None:
    config = types.GenerateContentConfig(response_modalities=["IMAGE"])
    with pytest.raises(errors.ClientError) as caught:
        client.models.generate_content(model=IMAGE_MODEL, contents="[[fake:quota_free]] a cat", config=config)
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert f"limit: 0, model: {IMAGE_MODEL}" in (caught.value.message or "")
    details = caught.value.details["error"]["details"]
    violations = next(d for d in details if d["@type"].endswith("QuotaFailure"))["violations"]
    assert {v["quotaId"] for v in violations} >= {"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}
    assert api.media.generation_count() == 0


@pytest.mark.parametrize(
    ("marker", "finish", "block"),
    [("image_safety", "IMAGE_SAFETY", None), ("prompt_blocked", None, "PROHIBITED_CONTENT")],
)
def test_safety_blocks_come_back_as_the_api_shapes_them(
    client: genai.Client, marker: str, finish: str | None, block: str | None
) -> None:
    config = types.GenerateContentConfig(response_modalities=["IMAGE"])
    response = client.models.generate_content(model=IMAGE_MODEL, contents=f"[[fake:{marker}]] x", config=config)
    assert response.parts is None
    if finish:
        assert response.candidates is not None and response.candidates[0].finish_reason == finish
    if block:
        assert response.prompt_feedback is not None and response.prompt_feedback.block_reason == block


# -- Files API -----------------------------------------------------------------------------------------------------


def test_the_resumable_upload_comes_back_to_the_emulator_by_the_request_host(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    uploaded = upload(client, b"PNGDATA")

    assert uploaded.name is not None and uploaded.name.startswith("files/")
    assert (uploaded.mime_type, uploaded.size_bytes, uploaded.state) == ("image/png", 7, types.FileState.ACTIVE)
    assert uploaded.expiration_time is not None and uploaded.create_time is not None
    assert (uploaded.expiration_time - uploaded.create_time).total_seconds() == pytest.approx(48 * 3600, abs=1)
    start, finish = api.requests[-2:]
    assert (start.kind, finish.kind) == ("media_upload_start", "media_upload_finalize")
    assert start.headers["x-goog-upload-header-content-length"] == "7"
    assert finish.path.startswith("/upload/v1beta/files?upload_id=")
    assert "x-goog-api-key" not in finish.headers  # the session URL is the credential


def test_files_get_list_download_and_delete(api: FakeGeminiApi, client: genai.Client) -> None:
    first, second = upload(client, b"one"), upload(client, b"two", "image/jpeg")
    assert first.name is not None and second.name is not None

    assert client.files.get(name=first.name).size_bytes == 3
    listed = list(client.files.list(config=types.ListFilesConfig(page_size=1)))  # follows nextPageToken
    assert [f.name for f in listed] == [first.name, second.name]
    assert client.files.download(file=second.name) == b"two"

    client.files.delete(name=first.name)
    with pytest.raises(errors.ClientError) as caught:
        client.files.get(name=first.name)
    assert (caught.value.code, caught.value.message) == (403, file_denied_message(first.name.removeprefix("files/")))
    assert [f.name for f in client.files.list()] == [second.name]


def test_an_expired_file_is_gone_from_get_list_and_download(api: FakeGeminiApi, client: genai.Client) -> None:
    uploaded = upload(client)
    assert uploaded.name is not None
    api.media.expire_file(uploaded.name)
    with pytest.raises(errors.ClientError, match="may not exist"):
        client.files.get(name=uploaded.name)
    assert list(client.files.list()) == []
    assert raw(api, "GET", f"/v1beta/{uploaded.name}:download?alt=media").status_code == 403


def test_a_file_that_is_processing_turns_active_after_polls(api: FakeGeminiApi, client: genai.Client) -> None:
    api.media.file_processing_polls = 2
    uploaded = upload(client, TINY_MP4, "video/mp4")
    assert uploaded.name is not None and uploaded.state == types.FileState.PROCESSING
    states = [client.files.get(name=uploaded.name).state for _ in range(3)]
    assert states == [types.FileState.PROCESSING, types.FileState.PROCESSING, types.FileState.ACTIVE]


def test_media_routes_need_the_api_key(api: FakeGeminiApi, client: genai.Client) -> None:
    uploaded = upload(client)
    response = raw(api, "GET", f"/v1beta/{uploaded.name}:download?alt=media", key=None)
    assert (response.status_code, response.json()["error"]["status"]) == (403, "PERMISSION_DENIED")
    assert raw(api, "GET", f"/v1beta/{uploaded.name}:download?alt=media").content == TINY_PNG


# -- Veo long-running video ----------------------------------------------------------------------------------------


def test_veo_predict_long_running_is_polled_until_done_then_downloaded(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    api.media.operation_polls = 2
    # The SDK's generate_videos refuses API-key mode in 3.6.1, so the start is raw REST; the polling is the SDK's.
    started = raw(
        api,
        "POST",
        "/v1beta/models/veo-3.1-generate-preview:predictLongRunning",
        {
            "instances": [{"prompt": "a cat surfing"}],
            "parameters": {"aspectRatio": "16:9"},
        },
    )
    assert started.status_code == 200
    operation = types.GenerateVideosOperation.model_validate({"name": started.json()["name"]})
    polls = 0
    while not operation.done:
        assert polls < 5, "operation never finished"
        operation = client.operations.get(operation)
        polls += 1
    assert polls == 3
    assert operation.result is not None and operation.result.generated_videos
    video = operation.result.generated_videos[0].video
    assert video is not None and video.uri is not None
    assert video.uri.startswith(api.base_url + "/v1beta/files/")
    assert httpx2.get(video.uri, headers={"x-goog-api-key": KEY}, trust_env=False).content == TINY_MP4
    assert httpx2.get(video.uri, trust_env=False).status_code == 403
    assert api.media.generation_count("video") == 1


def test_a_held_veo_operation_is_done_at_the_poll_after_it_is_finished(api: FakeGeminiApi) -> None:
    api.media.operation_polls = 1_000_000
    started = raw(api, "POST", "/v1beta/models/veo-3.1-generate-preview:predictLongRunning", {"instances": [{}]})
    name = started.json()["name"]
    assert "done" not in raw(api, "GET", f"/v1beta/{name}").json()
    api.media.finish_operations()
    assert raw(api, "GET", f"/v1beta/{name}").json()["done"] is True


def test_a_veo_safety_block_finishes_with_filtered_media(api: FakeGeminiApi, client: genai.Client) -> None:
    started = raw(
        api,
        "POST",
        "/v1beta/models/veo-3.1-generate-preview:predictLongRunning",
        {
            "instances": [{"prompt": "[[fake:safety]] something"}],
        },
    )
    operation = types.GenerateVideosOperation.model_validate({"name": started.json()["name"]})
    operation = client.operations.get(client.operations.get(operation))
    assert operation.done and operation.result is not None
    assert operation.result.rai_media_filtered_count == 1
    assert not operation.result.generated_videos
    assert api.media.generation_count() == 0


def test_an_unknown_operation_is_not_found(api: FakeGeminiApi) -> None:
    assert raw(api, "GET", "/v1beta/operations/nope").status_code == 404


# -- Interactions ----------------------------------------------------------------------------------------------------


def test_an_image_interaction_chains_by_previous_interaction_id(api: FakeGeminiApi, client: genai.Client) -> None:
    first = interact(
        client, model=IMAGE_MODEL, input="a lighthouse", response_format={"type": "image", "mime_type": "image/jpeg"}
    )
    assert first.status == "completed" and first.id
    assert first.output_image is not None and base64.b64decode(first.output_image.data or "") == TINY_PNG

    second = interact(client, model=IMAGE_MODEL, input="now at night", previous_interaction_id=first.id)
    assert second.status == "completed" and second.previous_interaction_id == first.id
    assert fetch(client, second.id).id == second.id
    assert api.requests[-2].body["previous_interaction_id"] == first.id
    assert api.media.generation_count("image") == 2


def test_a_chained_interaction_404s_while_the_store_lags_then_is_found(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    api.media.store_lag_requests = 2
    first = interact(client, model=IMAGE_MODEL, input="a lighthouse")
    assert first.id
    for _ in range(2):
        lagging = raw(
            api,
            "POST",
            "/v1beta/interactions",
            {"model": IMAGE_MODEL, "input": "again", "previous_interaction_id": first.id},
        )
        assert (lagging.status_code, lagging.json()["error"]["message"]) == (404, NOT_FOUND_MESSAGE)
    found = interact(client, model=IMAGE_MODEL, input="again", previous_interaction_id=first.id)
    assert found.status == "completed"
    assert api.media.generation_count() == 2  # the 404s generated (and billed) nothing


def test_an_unknown_chain_or_file_answers_the_same_generic_404(api: FakeGeminiApi) -> None:
    unknown_chain = raw(
        api, "POST", "/v1beta/interactions", {"model": IMAGE_MODEL, "input": "x", "previous_interaction_id": "v1_nope"}
    )
    unknown_file = raw(
        api,
        "POST",
        "/v1beta/interactions",
        {"model": IMAGE_MODEL, "input": [{"type": "image", "uri": "files/gone123", "mime_type": "image/png"}]},
    )
    for response in (unknown_chain, unknown_file):
        assert response.status_code == 404
        assert response.json() == {"error": {"code": 404, "message": NOT_FOUND_MESSAGE, "status": "NOT_FOUND"}}


def test_an_omni_video_interaction_runs_in_the_background_and_delivers_a_uri(
    api: FakeGeminiApi, client: genai.Client
) -> None:
    api.media.background_polls = 2
    created = interact(
        client,
        model="gemini-omni-flash-preview",
        input="a cat surfing",
        background=True,
        response_format={"type": "video", "delivery": "uri"},
    )
    assert created.status == "in_progress" and created.output_video is None
    assert [fetch(client, created.id).status for _ in range(2)] == ["in_progress", "in_progress"]
    done = fetch(client, created.id)
    assert done.status == "completed" and done.output_video is not None and done.output_video.uri
    assert httpx2.get(done.output_video.uri, headers={"x-goog-api-key": KEY}, trust_env=False).content == TINY_MP4
    assert api.media.generation_count("video") == 1


def test_a_lyria_interaction_returns_mp3_audio(api: FakeGeminiApi, client: genai.Client) -> None:
    music = interact(client, model="lyria-3-clip-preview", input="calm piano")
    assert music.output_audio is not None and music.output_audio.mime_type == "audio/mpeg"
    assert base64.b64decode(music.output_audio.data or "") == TINY_MP3
    assert api.media.generation_count("music") == 1


def test_background_is_refused_by_image_models(api: FakeGeminiApi) -> None:
    response = raw(api, "POST", "/v1beta/interactions", {"model": IMAGE_MODEL, "input": "x", "background": True})
    assert response.status_code == 400


def test_an_interaction_safety_block_fails_without_a_generation(api: FakeGeminiApi, client: genai.Client) -> None:
    blocked = interact(client, model=IMAGE_MODEL, input="[[fake:safety]] x")
    assert blocked.status == "failed" and blocked.errors and blocked.errors[0].code == "IMAGE_SAFETY"
    assert api.media.generation_count() == 0


def test_an_interaction_on_a_free_tier_key_gets_the_limit_zero_429(api: FakeGeminiApi) -> None:
    response = raw(api, "POST", "/v1beta/interactions", {"model": IMAGE_MODEL, "input": "[[fake:quota_free]] x"})
    assert response.status_code == 429
    assert "limit: 0" in response.json()["error"]["message"]


def test_interactions_can_be_deleted_and_cancel_is_forbidden(api: FakeGeminiApi, client: genai.Client) -> None:
    created = interact(client, model=IMAGE_MODEL, input="x")
    assert raw(api, "POST", f"/v1beta/interactions/{created.id}/cancel").status_code == 403
    assert raw(api, "DELETE", f"/v1beta/interactions/{created.id}").status_code == 200
    assert raw(api, "GET", f"/v1beta/interactions/{created.id}").status_code == 404


def test_the_generation_counters_are_readable_over_http(api: FakeGeminiApi, client: genai.Client) -> None:
    interact(client, model="lyria-3-clip-preview", input="calm piano")
    interact(client, model=IMAGE_MODEL, input="a cat")
    counts = httpx2.get(api.base_url + "/_control/generations", trust_env=False).json()
    assert counts == {"total": 2, "by_kind": {"music": 1, "image": 1}}

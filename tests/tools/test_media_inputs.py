"""The media toolset's inputs: folders jailed by realpath, references resolved cheapest-first, heartbeat and chain
settings parsed with a ConfigError naming the variable."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import pytest

from gemini_relay.config import Settings
from gemini_relay.content.fetch_image import FetchedImage, ImageFetchError
from gemini_relay.errors import ConfigError, InputError
from gemini_relay.tools.common import media_refs
from gemini_relay.tools.common.media_config import MediaConfig
from tests.fakes.fake_gemini_api import TINY_PNG

pytestmark = pytest.mark.anyio


def config(tmp_path: Path, **env: str) -> MediaConfig:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return MediaConfig.from_settings(Settings.from_env({"GEMINI_RELAY_PROJECT_ROOT": str(project), **env}))


def test_media_goes_to_gemini_media_in_the_project_by_default(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    assert cfg.output_dir(None) == (tmp_path / "project" / "gemini-media").resolve()
    assert cfg.chain_retry_ms == 120_000


def test_an_output_dir_outside_the_project_is_refused_and_a_chosen_media_dir_is_honoured(tmp_path: Path) -> None:
    cfg = config(tmp_path, GEMINI_RELAY_MEDIA_DIR=str(tmp_path / "elsewhere"))
    assert cfg.output_dir(None) == (tmp_path / "elsewhere").resolve()
    with pytest.raises(InputError, match="resolves outside the project root"):
        cfg.output_dir("../outside")
    (tmp_path / "project" / "link").symlink_to(tmp_path)
    with pytest.raises(InputError, match="resolves outside"):
        cfg.output_dir("link/x")


def test_a_local_reference_is_jailed_and_a_bare_name_is_found_in_the_input_dir(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "cat.png").write_bytes(TINY_PNG)
    (tmp_path / "secret.png").write_bytes(TINY_PNG)
    cfg = config(tmp_path, GEMINI_RELAY_MEDIA_INPUT_DIR=str(inputs))
    ref = media_refs.local_ref("cat.png", cfg, "images")
    assert ref.kind == "path" and ref.value == str((inputs / "cat.png").resolve()) and ref.mime_type == "image/png"
    with pytest.raises(InputError, match="resolves outside"):
        media_refs.local_ref("../secret.png", config(tmp_path), "images")
    with pytest.raises(InputError, match="is not a file"):
        media_refs.local_ref("missing.png", cfg, "images")


def test_base64_is_decoded_checked_and_staged_once(tmp_path: Path) -> None:
    encoded = base64.b64encode(TINY_PNG).decode()
    first = media_refs.base64_ref(encoded, tmp_path, "imagesBase64")
    again = media_refs.base64_ref("data:image/png;base64," + encoded, tmp_path, "imagesBase64")
    assert first == again and Path(first.value).read_bytes() == TINY_PNG and first.mime_type == "image/png"
    with pytest.raises(InputError, match="not valid base64"):
        media_refs.base64_ref("%%%", tmp_path, "imagesBase64")
    with pytest.raises(InputError, match="does not decode to a PNG"):
        media_refs.base64_ref(base64.b64encode(b"hello").decode(), tmp_path, "imagesBase64")


def test_a_staged_image_swapped_for_a_link_is_staged_anew_never_read_through(tmp_path: Path) -> None:
    encoded = base64.b64encode(TINY_PNG).decode()
    staged = Path(media_refs.base64_ref(encoded, tmp_path, "imagesBase64").value)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not for the model")
    staged.unlink()
    staged.symlink_to(secret)  # the next upload would send whatever the link names
    again = Path(media_refs.base64_ref(encoded, tmp_path, "imagesBase64").value)
    assert again == staged and not again.is_symlink() and again.read_bytes() == TINY_PNG
    assert secret.read_bytes() == b"not for the model" and again.stat().st_mode & 0o777 == 0o600


def test_a_file_uri_must_look_like_one(tmp_path: Path) -> None:
    assert media_refs.file_uri_ref("files/abc-123", "imagesFileUris").value == "files/abc-123"
    with pytest.raises(InputError, match="not a Files API uri"):
        media_refs.file_uri_ref("../files/x", "imagesFileUris")


async def test_an_image_url_on_loopback_is_refused_before_anything_is_fetched(tmp_path: Path) -> None:
    with pytest.raises(ImageFetchError, match="Refusing image URL"):
        await media_refs.url_ref("https://127.0.0.1/cat.png", tmp_path)


def test_heartbeat_ms_sets_the_keepalive_and_zero_disables_it(tmp_path: Path) -> None:
    assert Settings.from_env({"GEMINI_HEARTBEAT_MS": "1500"}, cwd=tmp_path).progress_interval == 1.5
    assert Settings.from_env({"GEMINI_HEARTBEAT_MS": "0"}, cwd=tmp_path).progress_interval == 0.0
    with pytest.raises(ConfigError, match="GEMINI_HEARTBEAT_MS"):
        Settings.from_env({"GEMINI_HEARTBEAT_MS": "soon"}, cwd=tmp_path)


def test_a_bad_chain_retry_window_names_the_variable(tmp_path: Path) -> None:
    assert config(tmp_path, GEMINI_CHAIN_RETRY_MS="0").chain_retry_ms == 0
    with pytest.raises(ConfigError, match="GEMINI_CHAIN_RETRY_MS"):
        config(tmp_path, GEMINI_CHAIN_RETRY_MS="-5")


def test_a_staged_image_unused_for_a_week_goes_when_another_is_staged_and_a_reused_one_keeps_its_mtime(
    tmp_path: Path,
) -> None:
    encoded = base64.b64encode(TINY_PNG).decode()
    reused = Path(media_refs.base64_ref(encoded, tmp_path, "imagesBase64").value)
    old = reused.with_name("0" * 32 + ".png")
    old.write_bytes(TINY_PNG)
    week_ago = time.time() - media_refs.STAGED_KEEP - 60
    os.utime(old, (week_ago, week_ago))
    os.utime(reused, (week_ago, week_ago))
    mtime = reused.stat().st_mtime_ns
    again = Path(media_refs.base64_ref(encoded, tmp_path, "imagesBase64").value)
    assert again == reused and reused.exists() and reused.stat().st_mtime_ns == mtime  # the upload cache's key
    assert not old.exists()


def test_a_local_image_is_staged_as_read_typed_by_its_content(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    (cfg.root / "shot.jpg").write_bytes(TINY_PNG)
    (cfg.root / "notes.png").write_text("plain notes", encoding="utf-8")
    ref = media_refs.local_image_ref("shot.jpg", cfg, "images", tmp_path / "state", 1024)
    assert ref.mime_type == "image/png" and Path(ref.value).read_bytes() == TINY_PNG
    assert Path(ref.value).parent == tmp_path / "state" / media_refs.STAGING
    with pytest.raises(InputError, match=r"'notes.png' is not a PNG, JPEG, WebP or GIF image by its content"):
        media_refs.local_image_ref("notes.png", cfg, "images", tmp_path / "state", 1024)
    with pytest.raises(InputError, match="is larger than 16 bytes"):
        media_refs.local_image_ref("shot.jpg", cfg, "images", tmp_path / "state", 16)


def test_a_fetched_image_is_typed_by_its_content_not_the_servers_content_type(tmp_path: Path) -> None:
    lying = FetchedImage(b"<html>not an image</html>", "image/png", "https://images.test/a.png")
    with pytest.raises(InputError, match=r"https://images.test/a.png is not a PNG, JPEG, WebP or GIF image"):
        media_refs.fetched_image_ref(lying, tmp_path, "imagesUrl")
    ref = media_refs.fetched_image_ref(FetchedImage(TINY_PNG, "image/jpeg", "https://images.test/b"), tmp_path, "x")
    assert ref.mime_type == "image/png" and Path(ref.value).read_bytes() == TINY_PNG


def test_a_file_to_upload_is_read_from_the_descriptor_checked_not_reopened_by_name(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    (cfg.root / "ref.png").write_bytes(TINY_PNG)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not for the Files API")
    handle, ref = media_refs.open_local("ref.png", cfg, "path")
    with handle:
        (cfg.root / "ref.png").unlink()
        (cfg.root / "ref.png").symlink_to(secret)  # swapped between the check and the upload
        assert handle.read() == TINY_PNG and ref.mime_type == "image/png"
    with pytest.raises(InputError, match="resolves outside"):
        media_refs.open_local("ref.png", cfg, "path")


def test_the_seeds_output_and_input_dir_names_are_accepted_and_the_relays_own_names_win(tmp_path: Path) -> None:
    inputs, other = tmp_path / "inputs", tmp_path / "other"
    inputs.mkdir()
    other.mkdir()
    seed = config(tmp_path, GEMINI_OUTPUT_DIR=str(tmp_path / "out"), GEMINI_INPUT_DIR=str(inputs))
    assert seed.output_dir(None) == (tmp_path / "out").resolve()
    assert seed.input_roots()[0] == inputs.resolve()
    both = config(
        tmp_path,
        GEMINI_OUTPUT_DIR=str(tmp_path / "out"),
        GEMINI_RELAY_MEDIA_DIR=str(tmp_path / "mine"),
        GEMINI_INPUT_DIR=str(inputs),
        GEMINI_RELAY_MEDIA_INPUT_DIR=str(other),
    )
    assert both.output_dir(None) == (tmp_path / "mine").resolve()
    assert both.input_roots()[0] == other.resolve()

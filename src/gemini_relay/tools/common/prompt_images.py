"""`images` on gemini-ask and gemini-plan: what the model sees with the prompt, resolved before anything runs.

Each entry is a local path (jailed to the project root or GEMINI_RELAY_MEDIA_INPUT_DIR, as the media tools'
references are: read once, jailed on the file as opened, typed by its content and staged, tools/common/media_refs.py), a
Files API uri (`files/<id>`), or an https URL fetched by the server under the SSRF rules of content/fetch_image.py
and staged in the state dir. Its own async step, so the synchronous spec builders
(runner.PromptRequest) only take the result; whether the active backend can see images is the backend's check.
"""

from __future__ import annotations

from gemini_relay.content.fetch_image import MAX_IMAGE_BYTES
from gemini_relay.core.spec import MediaRef
from gemini_relay.errors import InputError
from gemini_relay.tools.common import media_refs as refs
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.common.media_config import MediaConfig

FIELD = "images"
MAX_IMAGES = 16


async def gather_images(deps: Deps, raw: list[str] | None) -> tuple[MediaRef, ...]:
    """The images in the caller's order; InputError naming `images` for one that is refused."""
    if not raw:
        return ()
    if len(raw) > MAX_IMAGES:
        raise InputError(f"at most {MAX_IMAGES} images per call; got {len(raw)}", field=FIELD)
    config = MediaConfig.from_settings(deps.settings)
    found: list[MediaRef] = []
    for entry in raw:
        text = entry.strip()
        if refs.FILE_URI.fullmatch(text):
            found.append(refs.file_uri_ref(text, FIELD))
        elif text.lower().startswith(("https://", "http://")):
            found.append(await refs.url_image_ref(text, deps.settings.state_dir, FIELD))  # http is refused there
        else:
            found.append(refs.local_image_ref(entry, config, FIELD, deps.settings.state_dir, MAX_IMAGE_BYTES))
    return tuple(found)

"""gemini-image on the fake agy: the image agy makes lands in the default folder, which stays out of the diff. The
refusals of a destination outside the project root or one the OS cannot take, before the agent runs, and the job
record: tests/inmemory/test_image_destinations.py."""

from __future__ import annotations

import pytest

from tests.git_repo import GitRepo
from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


async def test_an_image_in_the_default_folder_leaves_git_status_clean(agy_relay: Relay) -> None:
    repo = GitRepo.create(agy_relay.project, {"a.py": "x = 1\n"})
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] a red square"})
    assert not result.is_error and result.meta is not None, text_of(result)
    assert result.meta["path"].startswith(str((agy_relay.project / "gemini-images").resolve()))
    assert repo.git("status", "--porcelain") == ""

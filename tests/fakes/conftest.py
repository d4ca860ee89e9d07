"""The emulator each fakes test drives: one fresh FakeGeminiApi per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_gemini_api import FakeGeminiApi


@pytest.fixture
def api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi() as fake:
        yield fake

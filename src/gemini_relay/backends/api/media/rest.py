"""Raw REST for what google-genai 3.6.1 lacks or refuses in API-key mode (Veo, Interactions, downloads).

Every call carries the key in the `x-goog-api-key` header (never the URL) and is bounded by the client timeout.
Interactions go over REST too because the SDK retries 429s there, and a `limit: 0` wall never clears.
"""

from __future__ import annotations

from typing import Any

import httpx2

from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.common import COMMAND
from gemini_relay.backends.api.media.errors import MediaApiError
from gemini_relay.errors import BackendUnavailable, RunFailed

API_VERSION = "v1beta"
MAX_DOWNLOAD = 512 * 1024 * 1024  # a generated video is a few MB; anything near this is not one


class Rest:
    def __init__(self, auth: ApiAuth, *, timeout: float) -> None:
        if auth.vertex or not auth.api_key or not auth.base_url:
            raise BackendUnavailable(
                "Media generation needs a Gemini API key (GEMINI_API_KEY); Vertex AI is not supported for media yet."
            )
        self._base = auth.base_url.rstrip("/") + "/"
        self._headers = {"x-goog-api-key": auth.api_key}
        self._timeout = timeout
        self._client = httpx2.AsyncClient(timeout=timeout, follow_redirects=False)

    def url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self._base}{API_VERSION}/{path}"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._json(await self._send("POST", path, body))

    async def get(self, path: str) -> dict[str, Any]:
        return self._json(await self._send("GET", path, None))

    async def download(self, url: str) -> bytes:
        response = await self._send("GET", url, None)
        if len(response.content) > MAX_DOWNLOAD:
            raise RunFailed(f"{COMMAND}: the generated file is larger than {MAX_DOWNLOAD} bytes")
        return response.content

    async def _send(self, method: str, path: str, body: dict[str, Any] | None) -> httpx2.Response:
        try:
            response = await self._client.request(method, self.url(path), json=body, headers=self._headers)
        except httpx2.TimeoutException as exc:
            raise RunFailed(
                f"{COMMAND}: no answer from {self._base} within {self._timeout:g} s (timeoutMs, GEMINI_TIMEOUT_MS)"
            ) from exc
        except httpx2.TransportError as exc:
            raise RunFailed(f"{COMMAND} could not reach {self._base}: {exc}", retryable=True) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response

    @staticmethod
    def _json(response: httpx2.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            raise RunFailed(f"{COMMAND}: the API answered with something other than JSON") from exc
        return data if isinstance(data, dict) else {}


def _error(response: httpx2.Response) -> MediaApiError:
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    message = str(error.get("message") or response.text[:300] or response.reason_phrase)
    return MediaApiError(response.status_code, str(error.get("status") or ""), message)

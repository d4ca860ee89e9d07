"""countTokens through google-genai: the API's own count of a prompt, free of charge and of any model turn."""

from __future__ import annotations

import anyio
from google.genai import errors as genai_errors

from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.common import COMMAND
from gemini_relay.backends.api.failures import TRANSPORT_ERRORS, from_api_error, from_transport_error
from gemini_relay.errors import RunFailed

COUNT_TIMEOUT = 30.0  # a count is one small request: past this the estimate serves instead


async def count_tokens(auth: ApiAuth, model: str, text: str) -> int:
    """Raises RunFailed (the API's status and message, a transport failure, or the timeout)."""
    client = auth.client()
    try:
        with anyio.fail_after(COUNT_TIMEOUT):
            response = await client.aio.models.count_tokens(model=model, contents=text)
    except genai_errors.APIError as exc:
        raise from_api_error(exc) from exc
    except TimeoutError:
        raise RunFailed(f"{COMMAND} countTokens did not answer within {COUNT_TIMEOUT:.0f}s") from None
    except TRANSPORT_ERRORS as exc:
        raise from_transport_error(exc, auth.endpoint) from exc
    finally:
        await client.aio.aclose()
    return int(response.total_tokens or 0)

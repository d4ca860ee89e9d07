"""The api backend's read-only calls: its model list and its doctor checks (no tokens spent)."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
from google.genai import errors as genai_errors
from google.genai import version as genai_version

from gemini_relay.backends.api.auth import ApiAuth, resolve_auth
from gemini_relay.backends.api.common import Check, Diagnosis, resolve_model
from gemini_relay.backends.api.failures import TRANSPORT_ERRORS, from_api_error, from_transport_error
from gemini_relay.backends.api.settings import DEFAULT_MODEL_ENV
from gemini_relay.backends.model_names import GEMINI_MODELS, Catalog, ModelInfo
from gemini_relay.errors import BackendUnavailable, InputError, RunFailed

LIST_TIMEOUT = 15.0  # models.list is one small GET; longer means the endpoint is not usable
MAX_MODELS = 200
FALLBACK_MODELS: tuple[ModelInfo, ...] = tuple(ModelInfo(m, m) for m in GEMINI_MODELS)
FALLBACK_NOTICE = "The Gemini API could not list its models ({why}); this is gemini-relay's built-in list."


async def list_models(auth: ApiAuth) -> Catalog:
    """The models the key can call generateContent on, or the built-in list with a notice saying why not."""
    try:
        found = await _fetch_models(auth)
    except RunFailed as exc:
        return fallback_catalog(exc.message)
    if not found:
        return fallback_catalog("the list was empty")
    return Catalog(tuple(found), live=True)


def fallback_catalog(why: str) -> Catalog:
    return Catalog(FALLBACK_MODELS, live=False, notice=FALLBACK_NOTICE.format(why=why))


async def diagnose(env: Mapping[str, str], default_model: str | None) -> Diagnosis:
    """Key present, endpoint reachable, default model known and callable with this key, SDK version: a models
    listing and one countTokens call on the default model (the permission an ask needs, no tokens spent), made
    together and each bounded; never a generate call."""
    checks = [Check("google-genai", True, f"version {genai_version.__version__}")]
    try:
        auth = resolve_auth(env)
    except BackendUnavailable as exc:
        return Diagnosis((*checks, Check("credentials", False, str(exc))))
    checks.append(Check("credentials", True, auth.describe()))
    try:
        model = resolve_model(None, default_model)
    except InputError as exc:
        model, bad_model = None, Check("default model", False, str(exc))
    listed: list[list[ModelInfo] | RunFailed] = []
    counted: list[Check] = []

    async def listing() -> None:
        try:
            listed.append(await _fetch_models(auth))
        except RunFailed as exc:
            listed.append(exc)

    async def call(model: str) -> None:
        counted.append(await _call_check(auth, model))

    async with anyio.create_task_group() as both:
        both.start_soon(listing)
        if model is not None:
            both.start_soon(call, model)
    models = listed[0]
    if isinstance(models, RunFailed):  # the fix with it: a refused key is the one setup problem a listing proves
        checks.append(Check("endpoint", False, " ".join(filter(None, [models.message, models.recovery]))))
        return Diagnosis(tuple(checks))
    checks.append(Check("endpoint", True, f"{auth.endpoint} answered models.list ({len(models)} models)"))
    if model is None:
        return Diagnosis((*checks, bad_model))
    ids = {m.id for m in models}
    if model in ids:
        checks.append(Check("default model", True, f"{model} is listed"))
    else:
        chosen = "" if default_model else " (the built-in default)"
        fix = f"set {DEFAULT_MODEL_ENV} to a model gemini-models lists"
        checks.append(Check("default model", False, f"{model}{chosen} is not in the endpoint's model list: {fix}"))
    return Diagnosis((*checks, *counted))


async def _call_check(auth: ApiAuth, model: str) -> Check:
    """One bounded countTokens call on `model`: the API guards it as it guards generateContent."""
    client = auth.client()
    try:
        with anyio.fail_after(LIST_TIMEOUT):
            await client.aio.models.count_tokens(model=model, contents="ping")
    except TimeoutError:
        failure = RunFailed(f"{auth.endpoint} did not answer countTokens within {LIST_TIMEOUT:.0f}s")
    except genai_errors.APIError as exc:
        failure = from_api_error(exc)
    except TRANSPORT_ERRORS as exc:
        failure = from_transport_error(exc, auth.endpoint)
    else:
        return Check("call", True, f"the key may call {model} (a countTokens call, no tokens)")
    finally:
        with anyio.move_on_after(2.0, shield=True):
            await client.aio.aclose()
        client.close()
    code = failure.http_status
    said = f"the key may not call {model}" if code in (401, 403) else f"a countTokens call on {model} failed"
    return Check("call", False, " ".join(filter(None, [f"{said}: {failure.message}", failure.recovery])))


async def _fetch_models(auth: ApiAuth) -> list[ModelInfo]:
    """One bounded models.list walk; RunFailed (with the API's status) when it fails or takes too long."""
    client = auth.client()
    found: list[ModelInfo] = []
    try:
        with anyio.fail_after(LIST_TIMEOUT):
            pager = await client.aio.models.list()
            async for model in pager:
                actions = model.supported_actions
                if actions is not None and "generateContent" not in actions:
                    continue
                model_id = (model.name or "").removeprefix("models/")
                if model_id:
                    found.append(ModelInfo(model_id, model.display_name or model_id))
                if len(found) >= MAX_MODELS:
                    break
    except TimeoutError:
        raise RunFailed(f"{auth.endpoint} did not answer models.list within {LIST_TIMEOUT:.0f}s") from None
    except genai_errors.APIError as exc:
        raise from_api_error(exc) from exc
    except TRANSPORT_ERRORS as exc:
        raise from_transport_error(exc, auth.endpoint) from exc
    finally:
        with anyio.move_on_after(2.0, shield=True):
            await client.aio.aclose()
        client.close()
    return found

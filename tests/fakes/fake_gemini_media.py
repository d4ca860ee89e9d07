"""Media endpoints of the fake Gemini API (stdlib only); `fake_gemini_api` dispatches to :func:`handle` first.

The Files API and the shared state live here; Veo in `fake_gemini_veo`, Interactions in `fake_gemini_interactions`.

What google-genai 3.6.1 sends in Gemini-API-key mode, and the REST calls the SDK lacks (peers.md §5.3):

- Files API, resumable: ``POST /upload/v1beta/files`` (``X-Goog-Upload-Command: start``) answers an
  ``x-goog-upload-url`` built from the request's ``Host`` header, so the SDK comes back to this server; ``POST`` to
  that URL with ``upload, finalize`` (or ``upload`` chunks, then ``finalize``) at the right ``X-Goog-Upload-Offset``
  answers ``{"file": {...}}``. ``GET /v1beta/files/{id}``, ``GET /v1beta/files`` (``pageSize``/``pageToken``),
  ``DELETE /v1beta/files/{id}``, ``GET /v1beta/files/{id}:download?alt=media``. Files live 48 h; an unknown,
  deleted or expired file answers 403 ``PERMISSION_DENIED`` "You do not have permission to access the File <id> or
  it may not exist." (files.get, download, and as a ``fileData`` part of generateContent).
- Veo: ``POST /v1beta/models/{model}:predictLongRunning`` -> ``{"name": "models/{model}/operations/{id}"}``;
  ``GET /v1beta/models/{model}/operations/{id}`` (or ``/v1beta/operations/{id}``) answers without ``done`` for
  :attr:`MediaState.operation_polls` polls, then ``done: true`` with ``generateVideoResponse.generatedSamples``
  whose video uri is a downloadable file of this server. (The SDK's ``generate_videos`` and ``generate_images``
  refuse Gemini-API-key mode in 3.6.1; ``operations.get`` and ``files.download`` work.)
- Interactions: ``POST /v1beta/interactions`` (text, image, omni video, Lyria music; ``previous_interaction_id``;
  ``background``), ``GET``/``DELETE /v1beta/interactions/{id}``, ``POST …/{id}/cancel`` (403, as observed).
  Output by model: ``lyria*`` -> audio/mpeg, ``*omni*``/``veo*`` or ``response_format.type == "video"`` -> a video
  (``delivery: "uri"`` default, a file of this server; ``"inline"`` -> base64), ``response_format.type ==
  "image"`` or ``*image*`` -> image/png, else text. ``background: true`` is refused (400) by image models; other
  models answer ``in_progress`` for :attr:`MediaState.background_polls` GETs. Store lag: a new id 404s ("Requested
  entity was not found.") on its first :attr:`MediaState.store_lag_requests` lookups and until
  :attr:`MediaState.store_lag_seconds` have passed, both as GET and as ``previous_interaction_id``. A ``files/``
  uri that is unknown or expired answers that same generic 404 (the seed observed it live).
- ``GET /_control/generations``: the generation counters.

Markers in the prompt text, as in the main fake: ``[[fake:quota_free]]`` -> 429 ``RESOURCE_EXHAUSTED`` with the
free-tier ``limit: 0`` message and QuotaFailure/Help/RetryInfo details; ``[[fake:safety]]`` -> a blocked result
(Veo: ``raiMediaFilteredCount``; interactions: status ``failed`` with an ``IMAGE_SAFETY`` error, an assumed shape);
``[[fake:error:<status>]]``; ``[[fake:fail]]`` (interactions in background end ``failed``).

Every media route but the upload session URL needs ``x-goog-api-key`` (or ``?key=``): 403 without, as downloads
are observed to. Every successful generation is counted (:meth:`MediaState.generation_count`), so a test can prove
a retried, idempotent call was billed once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "FILE_TTL",
    "NOT_FOUND_MESSAGE",
    "TINY_MP3",
    "TINY_MP4",
    "Generation",
    "MediaRequest",
    "MediaResponse",
    "MediaState",
    "file_denied_message",
    "free_tier_quota_error",
    "handle",
]

FILE_TTL: Final = 48 * 3600.0
NOT_FOUND_MESSAGE: Final = "Requested entity was not found."
TINY_MP3: Final = b"\xff\xfb\x90\x64" + bytes(413)  # one silent MPEG-1 Layer III frame, 128 kb/s 44.1 kHz
TINY_MP4: Final = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00\x00\x00\x08free"
_MARKER = re.compile(r"\[\[fake:([a-z_]+)(?::([^\]]*))?\]\]")
_V = r"/(?:v1beta|v1|v1alpha)"
_ROUTES: Final = (
    ("upload", re.compile(rf"^/upload{_V}/files$")),
    ("files", re.compile(rf"^{_V}/files$")),
    ("file", re.compile(rf"^{_V}/files/([a-z0-9-]+)$")),
    ("download", re.compile(rf"^{_V}/files/([a-z0-9-]+):download$")),
    ("predict_long", re.compile(rf"^{_V}/models/([^/:]+):predictLongRunning$")),
    ("operation", re.compile(rf"^{_V}/(?:models/[^/:]+/)?operations/([^/:]+)$")),
    ("interactions", re.compile(rf"^{_V}/interactions$")),
    ("interaction", re.compile(rf"^{_V}/interactions/([^/:]+)$")),
    ("cancel", re.compile(rf"^{_V}/interactions/([^/:]+)/cancel$")),
    ("generations", re.compile(r"^/_control/generations$")),
)
_FILE_REF = re.compile(r"(?:^|/)files/([a-z0-9-]+)")


@dataclass(frozen=True)
class MediaRequest:
    method: str
    target: str  # path and query, as received
    headers: dict[str, str]  # lower-cased keys
    raw: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.target).query).items()}

    @property
    def base(self) -> str:
        return f"http://{self.headers.get('host', '127.0.0.1')}"

    def json(self) -> Any:
        try:
            return json.loads(self.raw) if self.raw else None
        except (ValueError, UnicodeDecodeError):
            return None


@dataclass(frozen=True)
class MediaResponse:
    kind: str  # names the route in the request log
    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json; charset=UTF-8"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Generation:
    kind: str  # image, video, music, text
    model: str
    prompt: str
    at: float = field(default_factory=time.monotonic)


@dataclass
class _File:
    id: str
    display_name: str
    mime_type: str
    declared_size: int
    created: float
    expires: float
    data: bytearray = field(default_factory=bytearray)
    finalized: bool = False
    processing_polls: int = 0

    def resource(self, base: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": f"files/{self.id}",
            "mimeType": self.mime_type,
            "sizeBytes": str(len(self.data)),
            "createTime": _stamp(self.created),
            "updateTime": _stamp(self.created),
            "expirationTime": _stamp(self.expires),
            "sha256Hash": base64.b64encode(hashlib.sha256(self.data).hexdigest().encode()).decode(),
            "uri": f"{base}/v1beta/files/{self.id}",
            "downloadUri": f"{base}/v1beta/files/{self.id}:download?alt=media",
            "state": "PROCESSING" if self.processing_polls > 0 else "ACTIVE",
            "source": "UPLOADED",
        }
        if self.display_name:
            out["displayName"] = self.display_name
        return out


@dataclass
class _Interaction:
    body: dict[str, Any]
    created: float
    lookups: int = 0
    polls_left: int = 0


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json(kind: str, obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> MediaResponse:
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    return MediaResponse(kind, status, body, headers=headers or {})


def _error(kind: str, status: int, api_status: str, message: str, details: list[Any] | None = None) -> MediaResponse:
    error: dict[str, Any] = {"code": status, "message": message, "status": api_status}
    if details:
        error["details"] = details
    return _json(kind, {"error": error}, status)


def file_denied_message(file_id: str) -> str:
    return f"You do not have permission to access the File {file_id} or it may not exist."


def free_tier_quota_error(model: str) -> dict[str, Any]:
    """The 429 a free-tier key gets from an image model: every free-tier quota is `limit: 0`."""
    metrics = (
        ("generate_content_free_tier_input_token_count", "GenerateContentInputTokensPerModelPerMinute-FreeTier"),
        ("generate_content_free_tier_requests", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
        ("generate_content_free_tier_requests", "GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
    )
    lines = "".join(
        f"\n* Quota exceeded for metric: generativelanguage.googleapis.com/{metric}, limit: 0, model: {model}"
        for metric, _ in metrics
    )
    violations = [
        {
            "quotaMetric": f"generativelanguage.googleapis.com/{metric}",
            "quotaId": quota_id,
            "quotaDimensions": {"location": "global", "model": model},
        }
        for metric, quota_id in metrics
    ]
    help_link = {
        "description": "Learn more about Gemini API quotas",
        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
    }
    return {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your "
        f"current usage, head to: https://ai.dev/rate-limit. {lines}\nPlease retry in 20.5s.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": violations},
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [help_link]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"},
        ],
    }


def _marker(text: str) -> tuple[str, str | None] | None:
    found = _MARKER.search(text)
    return (found.group(1), found.group(2)) if found else None


def _texts(obj: Any) -> list[str]:
    """Every `text` string anywhere in a request body (prompts of any shape)."""
    if isinstance(obj, dict):
        own = [obj["text"]] if isinstance(obj.get("text"), str) else []
        own += [obj["prompt"]] if isinstance(obj.get("prompt"), str) else []
        return own + [t for k, v in obj.items() if k not in ("text", "prompt") for t in _texts(v)]
    if isinstance(obj, list):
        return [t for item in obj for t in _texts(item)]
    return [obj] if isinstance(obj, str) else []


def _file_refs(obj: Any) -> list[str]:
    """The ids of every `files/<id>` uri a request body references."""
    if isinstance(obj, dict):
        return [
            r for k, v in obj.items() for r in (_file_refs(v) if k not in ("uri", "file_uri", "fileUri") else [])
        ] + [
            m.group(1)
            for k in ("uri", "file_uri", "fileUri")
            if isinstance(obj.get(k), str)
            for m in [_FILE_REF.search(obj[k])]
            if m
        ]
    if isinstance(obj, list):
        return [r for item in obj for r in _file_refs(item)]
    return []


class MediaState:
    """Files, operations, interactions and generation counts; the knobs are plain attributes tests may set."""

    def __init__(self, image_bytes: bytes) -> None:
        self.image_bytes = image_bytes
        self.store_lag_requests = 0
        self.store_lag_seconds = 0.0
        self.operation_polls = 1
        self.background_polls = 1
        self.file_processing_polls = 0
        self._lock = threading.Lock()
        self._files: dict[str, _File] = {}
        self._operations: dict[str, list[Any]] = {}  # id -> [polls left, final JSON builder args]
        self._interactions: dict[str, _Interaction] = {}
        self._generations: list[Generation] = []

    # -- what tests read and change -------------------------------------------------------------------------------

    @property
    def generations(self) -> list[Generation]:
        with self._lock:
            return list(self._generations)

    def finish_operations(self) -> None:
        """Every pending video operation is done at its next poll (a test holds one with a huge operation_polls,
        then lets it finish once it has seen what it waits for)."""
        with self._lock:
            for entry in self._operations.values():
                entry[0] = 0

    def generation_count(self, kind: str | None = None, prompt_contains: str | None = None) -> int:
        return sum(
            1
            for g in self.generations
            if (kind is None or g.kind == kind) and (prompt_contains is None or prompt_contains in g.prompt)
        )

    def record_generation(self, kind: str, model: str, body: Any) -> None:
        with self._lock:
            self._generations.append(Generation(kind, model, "\n".join(_texts(body))))

    def expire_file(self, name: str) -> None:
        """Make `files/<id>` (or `<id>`) expired now, as if 48 h had passed."""
        with self._lock:
            self._files[name.removeprefix("files/")].expires = time.time() - 1

    def add_file(self, data: bytes, mime_type: str, display_name: str = "") -> str:
        """Store a file directly (as a generated video is); returns its id."""
        now = time.time()
        file_id = uuid.uuid4().hex[:12]
        record = _File(file_id, display_name, mime_type, len(data), now, now + FILE_TTL, bytearray(data), True)
        with self._lock:
            self._files[file_id] = record
        return file_id

    def live_file(self, file_id: str) -> _File | None:
        with self._lock:
            record = self._files.get(file_id)
            return record if record and record.finalized and record.expires > time.time() else None

    def missing_file_refs(self, body: Any) -> list[str]:
        return [ref for ref in _file_refs(body) if self.live_file(ref) is None]

    # -- Files API -----------------------------------------------------------------------------------------------

    def _upload(self, req: MediaRequest) -> MediaResponse:
        upload_id = req.query.get("upload_id")
        if upload_id is None:
            return self._upload_start(req)
        with self._lock:
            record = self._files.get(upload_id)
        if record is None or record.finalized:
            return _error("upload", 404, "NOT_FOUND", f"fake_gemini_media: no open upload session {upload_id}")
        command = req.headers.get("x-goog-upload-command", "")
        offset = req.headers.get("x-goog-upload-offset", "")
        if "upload" in command:
            if offset != str(len(record.data)):
                return _error(
                    "upload", 400, "INVALID_ARGUMENT", f"upload offset {offset!r}, expected {len(record.data)}"
                )
            record.data += req.raw
        if "finalize" not in command:
            return MediaResponse("upload_chunk", headers={"x-goog-upload-status": "active"}, body=b"")
        if record.declared_size and len(record.data) != record.declared_size:
            return _error(
                "upload", 400, "INVALID_ARGUMENT", f"got {len(record.data)} bytes, declared {record.declared_size}"
            )
        record.finalized = True
        record.processing_polls = self.file_processing_polls
        return _json("upload_finalize", {"file": record.resource(req.base)}, headers={"x-goog-upload-status": "final"})

    def _upload_start(self, req: MediaRequest) -> MediaResponse:
        if (
            req.headers.get("x-goog-upload-protocol") != "resumable"
            or req.headers.get("x-goog-upload-command") != "start"
        ):
            return _error("upload_start", 400, "INVALID_ARGUMENT", "fake_gemini_media: only resumable uploads")
        body = req.json()
        meta = body.get("file", {}) if isinstance(body, dict) else {}
        now = time.time()
        upload_id = uuid.uuid4().hex[:12]
        record = _File(
            upload_id,
            str(meta.get("display_name") or meta.get("displayName") or ""),
            req.headers.get("x-goog-upload-header-content-type")
            or str(meta.get("mime_type") or "application/octet-stream"),
            int(req.headers.get("x-goog-upload-header-content-length") or 0),
            now,
            now + FILE_TTL,
        )
        with self._lock:
            self._files[upload_id] = record
        url = f"{req.base}/upload/v1beta/files?upload_id={upload_id}&upload_protocol=resumable"
        return MediaResponse(
            "upload_start", body=b"", headers={"x-goog-upload-url": url, "x-goog-upload-status": "active"}
        )

    def _file(self, req: MediaRequest, file_id: str, *, download: bool = False) -> MediaResponse:
        record = self.live_file(file_id)
        kind = "file_download" if download else f"file_{req.method.lower()}"
        if record is None:
            return _error(kind, 403, "PERMISSION_DENIED", file_denied_message(file_id))
        if download:
            return MediaResponse(kind, body=bytes(record.data), content_type=record.mime_type)
        if req.method == "DELETE":
            with self._lock:
                self._files.pop(file_id, None)
            return _json(kind, {})
        answer = record.resource(req.base)
        record.processing_polls = max(record.processing_polls - 1, 0)
        return _json(kind, answer)

    def _list(self, req: MediaRequest) -> MediaResponse:
        with self._lock:
            ids = sorted(self._files, key=lambda i: self._files[i].created)
        live = [r for r in (self.live_file(i) for i in ids) if r is not None]
        size = max(min(int(req.query.get("pageSize") or 10), 100), 1)
        start = int(req.query.get("pageToken") or 0)
        page: dict[str, Any] = {}
        if live[start : start + size]:
            page["files"] = [r.resource(req.base) for r in live[start : start + size]]
        if start + size < len(live):
            page["nextPageToken"] = str(start + size)
        return _json("files_list", page)

    # -- shared ----------------------------------------------------------------------------------------------------

    def _blocked(self, kind: str, model: str, body: Any) -> MediaResponse | None:
        """The marker-driven failures every generating route shares (quota wall, status errors)."""
        marker = _marker("\n".join(_texts(body)))
        if marker is None:
            return None
        name, arg = marker
        if name == "quota_free":
            return _json(kind, {"error": free_tier_quota_error(model)}, 429)
        if name == "error":
            status = int(arg or 500)
            return _error(kind, status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT", f"Fake error {status}.")
        return None

    def dispatch(self, req: MediaRequest) -> MediaResponse | None:
        for name, pattern in _ROUTES:
            match = pattern.match(req.path)
            if match is None:
                continue
            if name == "generations":
                counts: dict[str, int] = {}
                for g in self.generations:
                    counts[g.kind] = counts.get(g.kind, 0) + 1
                return _json("generations", {"total": sum(counts.values()), "by_kind": counts})
            is_session = name == "upload" and "upload_id" in req.query
            if not is_session and not (req.headers.get("x-goog-api-key") or req.query.get("key")):
                return _error(
                    name,
                    403,
                    "PERMISSION_DENIED",
                    "Method doesn't allow unregistered callers (callers "
                    "without established identity). Please use API Key or other form of API consumer identity "
                    "to call this API.",
                )
            return self._route(name, req, match.groups())
        return None

    def _route(self, name: str, req: MediaRequest, groups: tuple[str | Any, ...]) -> MediaResponse:
        from tests.fakes.fake_gemini_interactions import cancel_interaction, create_interaction, get_interaction
        from tests.fakes.fake_gemini_veo import get_operation, predict_long_running

        arg = str(groups[0]) if groups else ""
        routes = {
            ("upload", "POST"): lambda: self._upload(req),
            ("files", "GET"): lambda: self._list(req),
            ("file", "GET"): lambda: self._file(req, arg),
            ("file", "DELETE"): lambda: self._file(req, arg),
            ("download", "GET"): lambda: self._file(req, arg, download=True),
            ("predict_long", "POST"): lambda: predict_long_running(self, req, arg),
            ("operation", "GET"): lambda: get_operation(self, req, arg),
            ("interactions", "POST"): lambda: create_interaction(self, req),
            ("interaction", "GET"): lambda: get_interaction(self, req, arg),
            ("interaction", "DELETE"): lambda: get_interaction(self, req, arg, delete=True),
            ("cancel", "POST"): lambda: cancel_interaction(arg),
        }
        handler = routes.get((name, req.method))
        if handler is None:
            return _error(name, 404, "NOT_FOUND", f"fake_gemini_media: no route for {req.method} {req.path}")
        return handler()


def handle(state: MediaState, req: MediaRequest) -> MediaResponse | None:
    """Answer a media route, or None when the path is not one (the main fake then routes it)."""
    return state.dispatch(req)

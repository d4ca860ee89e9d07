"""RunSpec: everything a backend needs to start one run, validated before a job exists."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class MediaRef:
    """One reference image (or clip) for a generation, already resolved by the tool before the job exists.

    `kind` is "path" (an absolute, jailed local file; fetched URLs and base64 are staged to one) or "file_uri"
    (a Files API `files/<id>` reference).
    """

    kind: str
    value: str
    mime_type: str | None = None


@dataclass(frozen=True)
class MediaRequest:
    """A media generation: what the api backend's media module makes, and where it writes the files.

    JSON-serialisable (to_json/from_json) because a job persists its spec and its supervisor rebuilds it.
    """

    kind: str  # image | edit | set | interact | video | music
    out_dir: str  # absolute, jailed by the tool
    model: str | None = None
    references: tuple[MediaRef, ...] = ()
    aspect_ratio: str | None = None
    image_size: str | None = None
    count: int = 1
    scenes: tuple[str, ...] = ()
    file_stem: str | None = None
    previous_interaction_id: str | None = None
    chain_retry_ms: int = 120_000
    duration_seconds: int | None = None
    negative_prompt: str | None = None
    target_name: str | None = None  # the exact file name of a single output (gemini-image's outputPath)
    timeout_ms: int | None = None  # each upstream request's bound (timeoutMs / GEMINI_TIMEOUT_MS); None: the run's
    thinking_level: str | None = None  # an interaction's generation_config.thinking_level (minimal | high)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["references"] = [asdict(r) for r in self.references]
        data["scenes"] = list(self.scenes)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MediaRequest:
        known = {f.name for f in fields(cls)}
        raw = {k: v for k, v in data.items() if k in known}
        raw["references"] = tuple(MediaRef(**r) for r in raw.get("references") or ())
        raw["scenes"] = tuple(raw.get("scenes") or ())
        return cls(**raw)


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to start one run. `explicit` names the options the caller set on purpose."""

    tool: str
    prompt: str
    cwd: Path
    model: str | None = None
    effort: str | None = None
    mode: str | None = None  # "plan" | "accept-edits"
    json_schema: dict[str, Any] | None = None
    add_dirs: tuple[Path, ...] = ()
    conversation_id: str | None = None
    session_id: str | None = None  # a fresh run's id chosen up front, for backends that accept one (Gemini CLI)
    agent: str | None = None
    allow_slash_commands: bool = False
    skip_permissions: bool = False
    sandbox: bool = False
    # agy: whether the cwd goes as --add-dir (a workspace: its AGENTS.md and hooks apply); None: AGY_PROJECT_RULES
    project_rules: bool | None = None
    timeout_seconds: float = 45 * 60.0
    explicit: frozenset[str] = frozenset()
    media: MediaRequest | None = None  # set: a media generation (api backend), not a text turn
    images: tuple[MediaRef, ...] = ()  # images the model sees with the prompt (resolved and jailed by the tool)

    def to_json(self) -> dict[str, Any]:
        """The one JSON encoding of a spec: the job store's meta.json and the host wire both use it."""
        data = asdict(self)
        data["cwd"] = str(self.cwd)
        data["add_dirs"] = [str(p) for p in self.add_dirs]
        data["explicit"] = sorted(self.explicit)
        data["media"] = self.media.to_json() if self.media else None
        data["images"] = [asdict(r) for r in self.images]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        raw = dict(data)
        raw["cwd"] = Path(raw["cwd"])
        raw["add_dirs"] = tuple(Path(p) for p in raw.get("add_dirs", ()))
        raw["explicit"] = frozenset(raw.get("explicit", ()))
        raw["media"] = MediaRequest.from_json(raw["media"]) if raw.get("media") else None
        raw["images"] = tuple(MediaRef(**r) for r in raw.get("images") or ())
        return cls(**raw)

"""The media toolset's settings, read from `Settings.env`: output and input folders, default models, chain window."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.backends.capabilities import GENERATED_NAME_BYTES
from gemini_relay.config import Settings
from gemini_relay.core.trusted_files import ignored_by_git
from gemini_relay.errors import ConfigError, InputError
from gemini_relay.tools.common.path_args import check_destination

DEFAULT_MEDIA_DIR = "gemini-media"
DEFAULT_IMAGE_MODEL = "gemini-3.1-flash-image"
DEFAULT_VIDEO_MODEL = "veo-3.1-generate-preview"
DEFAULT_MUSIC_MODEL = "lyria-3-clip-preview"
DEFAULT_CHAIN_RETRY_MS = 120_000
# Seed 003's upstream request timeout: an image request is bounded by a minute, two at 4K.
DEFAULT_TIMEOUT_MS = 60_000
DEFAULT_4K_TIMEOUT_MS = 120_000
# The relay's own name first: seed 003's (chrischall/gemini-mcp) names are accepted so a user's config carries over.
OUTPUT_DIR_ENVS = ("GEMINI_RELAY_MEDIA_DIR", "GEMINI_OUTPUT_DIR")
INPUT_DIR_ENVS = ("GEMINI_RELAY_MEDIA_INPUT_DIR", "GEMINI_INPUT_DIR")


def first_env(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    """The first of `names` set to something non-blank (the relay's own name wins over the seed's alias)."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return ""


@dataclass(frozen=True)
class MediaConfig:
    root: Path  # the project root, realpath
    out_dir: Path  # GEMINI_RELAY_MEDIA_DIR (the operator's choice, anywhere) or <project>/gemini-media
    out_dir_chosen: bool
    input_dir: Path | None  # GEMINI_RELAY_MEDIA_INPUT_DIR: a second folder reference images may come from
    image_model: str
    video_model: str
    music_model: str
    chain_retry_ms: int
    timeout_ms: int | None = None  # GEMINI_TIMEOUT_MS: each upstream request's bound, when the operator sets one

    @classmethod
    def from_settings(cls, settings: Settings) -> MediaConfig:
        env = settings.env
        root = Path(os.path.realpath(settings.project_root))
        chosen = first_env(env, OUTPUT_DIR_ENVS)
        out_dir = Path(os.path.realpath(Path(chosen).expanduser() if chosen else root / DEFAULT_MEDIA_DIR))
        raw_input = first_env(env, INPUT_DIR_ENVS)
        raw_chain = env.get("GEMINI_CHAIN_RETRY_MS", "").strip()
        try:
            chain = int(raw_chain) if raw_chain else DEFAULT_CHAIN_RETRY_MS
        except ValueError:
            raise ConfigError(f"GEMINI_CHAIN_RETRY_MS={raw_chain!r} is not a whole number of milliseconds") from None
        if chain < 0:
            raise ConfigError(f"GEMINI_CHAIN_RETRY_MS={raw_chain!r} must be ≥ 0")
        raw_timeout = env.get("GEMINI_TIMEOUT_MS", "").strip()
        try:
            timeout = int(raw_timeout) if raw_timeout else None
        except ValueError:
            raise ConfigError(f"GEMINI_TIMEOUT_MS={raw_timeout!r} is not a whole number of milliseconds") from None
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"GEMINI_TIMEOUT_MS={raw_timeout!r} must be > 0")
        return cls(
            root=root,
            out_dir=out_dir,
            out_dir_chosen=bool(chosen),
            input_dir=Path(os.path.realpath(Path(raw_input).expanduser())) if raw_input else None,
            image_model=env.get("GEMINI_IMAGE_MODEL", "").strip() or DEFAULT_IMAGE_MODEL,
            video_model=env.get("GEMINI_VIDEO_MODEL", "").strip() or DEFAULT_VIDEO_MODEL,
            music_model=env.get("GEMINI_MUSIC_MODEL", "").strip() or DEFAULT_MUSIC_MODEL,
            chain_retry_ms=chain,
            timeout_ms=timeout,
        )

    def model_for(self, kind: str) -> str:
        """The configured model of a generation kind: video and music have their own, every image kind shares one."""
        return {"video": self.video_model, "music": self.music_model}.get(kind, self.image_model)

    def request_timeout_ms(
        self, per_call: int | None, image_size: str | None = None, *, image: bool = True
    ) -> int | None:
        """Each upstream request's bound: the call's timeoutMs, else GEMINI_TIMEOUT_MS, else (images) the seed's
        default, 60 s or 120 s at 4K. Video and music keep the run's own bound unless one is set: one omni or
        Lyria request can outrun a minute."""
        if per_call is not None:
            return per_call
        if self.timeout_ms is not None:
            return self.timeout_ms
        if not image:
            return None
        return DEFAULT_4K_TIMEOUT_MS if image_size == "4K" else DEFAULT_TIMEOUT_MS

    def output_dir(
        self, raw: str | None, field: str = "outputDir", shown: str | None = None, room: int = GENERATED_NAME_BYTES
    ) -> Path:
        """Where this call writes: `outputDir` (inside the project root or the media folder), else the media folder
        (the default one ignored by git, so nothing generated shows in `git status` or a review).
        `room`: the bytes the names written there take (the relay's generated names by default).

        Raises:
            InputError: outputDir, or the default folder when not chosen by GEMINI_RELAY_MEDIA_DIR, escapes the root;
                or a file named there would pass PATH_MAX.
        """
        if raw is None or not raw.strip():
            if self.out_dir_chosen:
                return self.out_dir
            if not _inside(self.out_dir, self.root):
                raise InputError(
                    f"The default media folder {self.out_dir} resolves outside the project root "
                    f"({self.root}); set GEMINI_RELAY_MEDIA_DIR to choose one on purpose."
                )
            return ignored_by_git(self.out_dir)  # generated files stay out of the diff
        target = Path(os.path.realpath(self.root / Path(raw.strip()).expanduser()))
        if not (_inside(target, self.root) or _inside(target, self.out_dir)):
            raise InputError(
                f"{shown or repr(raw)} resolves outside the project root ({self.root}); nothing was generated",
                field=field,
            )
        check_destination(target, None, field, room=room)
        return target

    def input_roots(self) -> tuple[Path, ...]:
        return (self.root,) if self.input_dir is None else (self.input_dir, self.root)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents

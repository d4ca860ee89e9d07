"""The HTTP listener's bearer token: `--token-file`, else GEMINI_RELAY_HTTP_TOKEN, else one the relay makes.

Every local user can reach 127.0.0.1, so HTTP without a token is never the default: the first `--http` start makes
a random token, stored 0600 in the state dir and reused by every later start; `--no-auth` alone serves without one.
The startup lines say how a client and the job page present it; the token itself is shown only on a terminal (a
captured stderr is a log, and logs never carry secrets).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from gemini_relay.errors import ConfigError
from gemini_relay.log import logger

TOKEN_ENV = "GEMINI_RELAY_HTTP_TOKEN"
STORED_NAME = "http-token"
NO_AUTH_MEANS = "anyone who can reach {where} (every local user and program) can run tools and read every job"


@dataclass(frozen=True)
class HttpAuth:
    token: str | None  # None only with --no-auth
    where: str = ""  # how the startup lines name the token without showing it


NO_AUTH = HttpAuth(None)


def http_auth(token_file: Path | None, state_dir: Path, env: Mapping[str, str], *, no_auth: bool) -> HttpAuth:
    """The token and where it came from; `--no-auth` with a token configured is a contradiction, refused."""
    if no_auth:
        if token_file is not None or env.get(TOKEN_ENV, "").strip():
            source = "--token-file" if token_file is not None else TOKEN_ENV
            raise ConfigError(f"--no-auth and {source} contradict each other: drop one")
        return NO_AUTH
    if token_file is not None:
        return HttpAuth(load_token(token_file), f"the first line of {token_file}")
    from_env = env.get(TOKEN_ENV, "").strip()
    if from_env:
        return HttpAuth(from_env, f"${TOKEN_ENV}")
    path = state_dir / STORED_NAME
    return HttpAuth(stored_token(path), f"the first line of {path}")


def load_token(token_file: Path) -> str:
    """The token file's first line (`--token-file`)."""
    try:
        text = token_file.read_text(encoding="utf-8")
        mode = token_file.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the token file {token_file}: {exc}") from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise ConfigError(f"the token file {token_file} is empty")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        logger.warning("The token file %s is readable by other users; chmod 600 it", token_file)
    return token


def stored_token(path: Path) -> str:
    """The token kept at `path`, made there (0600) first if there is none; two servers starting at once agree."""
    try:
        return _read_stored(path)
    except FileNotFoundError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(secrets.token_urlsafe(32) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.link(scratch, path)  # never replaces: a server that made one at the same time wins, both read it
        except FileExistsError:
            pass
        finally:
            scratch.unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot store the HTTP token at {path}: {exc.strerror}; set {TOKEN_ENV}") from None
    logger.info("Made a bearer token for HTTP clients in %s (0600; every later --http start reuses it)", path)
    return _read_stored(path)


def _read_stored(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read the stored HTTP token {path}: {exc.strerror}; remove it") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)  # judged on the descriptor before fdopen, which refuses a directory with its own traceback
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a file of yours"
        raise ConfigError(f"the stored HTTP token {path} is {kind}; remove it and start again (a new one is made)")
    with os.fdopen(fd, "rb") as stored:
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            mode = stat.S_IMODE(info.st_mode)
            raise ConfigError(
                f"the stored HTTP token {path} is readable by other users (mode {mode:o}), so it may have leaked: "
                "remove it and start again (a new one is made)"
            )
        text = stored.read(4096).decode("utf-8", errors="replace").strip()
    token = text.splitlines()[0].strip() if text else ""
    if not token:
        raise ConfigError(f"the stored HTTP token {path} is empty; remove it and start again (a new one is made)")
    return token


def how_to_connect(auth: HttpAuth, base: str, *, shown: bool) -> tuple[str, str]:
    """The header a client sends and the job page's URL, for the startup lines; the token only when `shown`."""
    if auth.token is None:
        return "", f"{base}/"
    if shown:
        return f"Authorization: Bearer {auth.token}", f"{base}/#token={quote(auth.token, safe='')}"
    return f"Authorization: Bearer <{auth.where}>", f"{base}/#token=<the same token>"

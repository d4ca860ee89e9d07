"""The child environment is an allowlist: a CLI gets what it needs to authenticate and nothing else."""

from __future__ import annotations

from collections.abc import Mapping

ALLOWED_PREFIXES = ("GOOGLE_", "GEMINI_", "CLOUDSDK_", "LC_", "XDG_")
ALLOWED_KEYS = frozenset(
    {"HOME", "PATH", "USER", "SHELL", "LANG", "TERM", "TMPDIR"}
    # Behind a corporate proxy or TLS-intercepting gateway the CLI cannot reach the API without these.
    | {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"}
    | {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}
    | {"NODE_COMPILE_CACHE"}  # where Node keeps the CLI's compiled code (settings.cli_env's default otherwise)
)
# Our own settings match GEMINI_ but mean nothing to the CLI.
_OWN_PREFIXES = ("GEMINI_RELAY_", "GEMINI_MCP_")


def child_env(environ: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in environ.items()
        if (key in ALLOWED_KEYS or key.startswith(ALLOWED_PREFIXES)) and not key.startswith(_OWN_PREFIXES)
    }
    env["NO_COLOR"] = "1"
    if extra:
        env.update(extra)
    return env


# What the relay itself reads besides the child allowlist (its settings).
_RELAY_PREFIXES = ("GEMINI_RELAY_", "GEMINI_MCP_")


def relevant_env(
    environ: Mapping[str, str], *, prefixes: tuple[str, ...] = (), keys: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The part of a server's environment that can change what a backend does: the child allowlist, the relay's own
    settings, and what the backends read beyond them (`prefixes`, `keys`: registry.relevant_env passes each entry's).
    Two servers that differ only elsewhere (WINDOWID, OLDPWD, a shell's SHLVL) run the same backends."""
    wanted = (*ALLOWED_PREFIXES, *_RELAY_PREFIXES, *prefixes)
    return {
        key: value for key, value in environ.items() if key in ALLOWED_KEYS or key in keys or key.startswith(wanted)
    }

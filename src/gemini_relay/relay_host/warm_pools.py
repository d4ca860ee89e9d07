"""The host's backends: one BackendRegistry per distinct server environment and project, kept warm while in use.

A registry's warm pools live in one task of the host's pool task group: opened there, prewarmed, and closed there
when the registry is evicted (only once no run of it is in flight) or the host stops. A backend that can share its
pool (the Gemini CLI: an ACP session carries its own cwd, and the CLI loads that folder's settings, trust and
GEMINI.md per session) gets the host's one pool for its options instead, so a user's five projects hold one warm CLI,
not five; that pool lives in its own task and closes when the host stops.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from gemini_relay.backends.backend_registry import BackendRegistry, relevant_env
from gemini_relay.backends.base import Backend
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName

REGISTRIES = 16  # distinct server environments whose backends are kept built


class WarmPools:
    """The host's backend registries, one per server environment and project, with their warm pools."""

    def __init__(self, overrides: Mapping[BackendName, Backend] | None = None) -> None:
        self._overrides = dict(overrides or {})
        self._size = REGISTRIES
        self._registries: OrderedDict[str, BackendRegistry] = OrderedDict()
        self._keys: dict[str, str] = {}  # (env, cwd) digest -> registry key (env, project root)
        self._pools: TaskGroup | None = None
        self._closers: dict[int, anyio.Event] = {}
        self._in_use: dict[int, int] = {}  # registry id -> its runs in flight
        self._evicted: set[int] = set()  # dropped from the cache, pools still serving a run
        # Shared pools by their options: the pool, and an event set once it is open.
        self._shared: dict[str, tuple[AbstractAsyncContextManager[Any], anyio.Event]] = {}
        self._shared_closed = anyio.Event()

    def serve_pools(self, pools: TaskGroup) -> None:
        """Warm pools opened from now on live in `pools` (the host's, entered before its connections)."""
        self._pools = pools

    def close_all(self) -> None:
        """Every warm pool stops once no run needs it (pools close in their owner task)."""
        for closer in self._closers.values():
            closer.set()
        self._shared_closed.set()

    def get(self, env: dict[str, str], cwd: Path) -> BackendRegistry:
        """The backends as the calling server would build them (its env: binary paths, auth, models)."""
        # Only what the relay and its CLIs read tells two servers' backends apart: servers whose environments differ
        # in WINDOWID or OLDPWD share one registry, and so one warm CLI.
        env = relevant_env(env)
        # Settings are parsed once per (environment, cwd), not per call; registries are per project root.
        call_key = hashlib.sha256(json.dumps([sorted(env.items()), str(cwd)]).encode()).hexdigest()
        settings: Settings | None = None
        key = self._keys.get(call_key)
        if key is None:
            settings = Settings.from_env(env, cwd=cwd)
            key = hashlib.sha256(json.dumps([sorted(env.items()), str(settings.project_root)]).encode()).hexdigest()
            if len(self._keys) >= 4 * self._size:
                self._keys.clear()
            self._keys[call_key] = key
        registry = self._registries.get(key)
        if registry is None:
            settings = settings or Settings.from_env(env, cwd=cwd)
            registry = self._registries[key] = BackendRegistry(
                settings, overrides=self._overrides, warm_here=settings.warm
            )
            if registry.warm_here and self._pools is not None:
                closer = self._closers[id(registry)] = anyio.Event()
                self._pools.start_soon(self._own_pools, registry, closer)
            while len(self._registries) > self._size:
                _, evicted = self._registries.popitem(last=False)
                self._evicted.add(id(evicted))
                self._close_if_unused(evicted)
        self._registries.move_to_end(key)
        return registry

    def acquire(self, registry: BackendRegistry) -> None:
        """A run of `registry` starts: its pools stay open until `release`."""
        self._in_use[id(registry)] = self._in_use.get(id(registry), 0) + 1

    def release(self, registry: BackendRegistry) -> None:
        self._in_use[id(registry)] -= 1
        if not self._in_use[id(registry)]:
            del self._in_use[id(registry)]
        self._close_if_unused(registry)

    def _close_if_unused(self, registry: BackendRegistry) -> None:
        """An evicted registry's warm pools close once no run of it is in flight: never under a running prompt."""
        if self._in_use.get(id(registry)) or id(registry) not in self._evicted:
            return
        self._evicted.discard(id(registry))
        closer = self._closers.pop(id(registry), None)
        if closer is not None:
            closer.set()

    async def _own_pools(self, registry: BackendRegistry, closed: anyio.Event) -> None:
        """Opened here, prewarmed, and closed here (SIGTERM to each warm child's group, grace, SIGKILL)."""
        await self._share_pools(registry)
        await registry.open()
        try:
            registry.prewarm()
            await closed.wait()
        finally:
            # Not inside a shield scope of our own: the pools' task groups were entered before it, and a task group
            # cannot close inside a scope opened after it (RuntimeError at every host exit). Each pool stops its
            # children shielded itself.
            await registry.aclose()

    async def _share_pools(self, registry: BackendRegistry) -> None:
        """Give each backend of `registry` that can share a warm pool the host's pool for its options (opened on
        first use, in a task of its own)."""
        for backend in registry.backends.values():
            share: Any = getattr(backend, "share", None)
            options: Any = getattr(backend, "pool_options", None)
            make: Any = getattr(backend, "make_pool", None)
            if share is None or options is None or make is None or self._pools is None:
                continue
            key = json.dumps([type(backend).__name__, options()], sort_keys=True)
            entry = self._shared.get(key)
            if entry is None:
                entry = self._shared[key] = (make(), anyio.Event())
                self._pools.start_soon(self._own_shared, *entry)
            await entry[1].wait()
            share(entry[0])

    async def _own_shared(self, pool: AbstractAsyncContextManager[Any], opened: anyio.Event) -> None:
        async with pool:
            opened.set()
            await self._shared_closed.wait()

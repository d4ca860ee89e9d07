"""What the jobs tools share: the job manager (there is none without a state dir) and the JSON their replies carry."""

from __future__ import annotations

import json
from typing import Any

from gemini_relay.errors import InputError
from gemini_relay.jobs.host.attach import HostedJobManager
from gemini_relay.tools.common.context import Deps


def job_manager(deps: Deps) -> HostedJobManager:
    if deps.jobs is None:
        raise InputError("Jobs are not available: this server runs without a state dir")
    return deps.jobs


def as_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)

"""What the jobs tools share: the job manager (there is none without a state dir)."""

from __future__ import annotations

from gemini_relay.errors import InputError
from gemini_relay.jobs import Jobs
from gemini_relay.tools.common.context import Deps


def job_manager(deps: Deps) -> Jobs:
    if deps.jobs is None:
        raise InputError("Jobs are not available: this server runs without a state dir")
    return deps.jobs

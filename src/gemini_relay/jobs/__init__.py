"""Jobs, the server's side: every upstream call is a job with an id, a record, a backend and a state from a closed
set, created in and run by the relay host (relay_host/) and followed from here. This is the front door the tools
use; they import nothing deeper. Inside: engine/ (the engine and the live record, shared with the host), store/ (the
jobs on disk), protocol.py, host_connection.py (with host_spawn.py) and follower.py (the server's conversation with
the host)."""

from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.follower import Jobs, RunFollower
from gemini_relay.jobs.store.job_manager import request_hash
from gemini_relay.jobs.store.job_store import JobNotFound
from gemini_relay.jobs.store.maintenance import SWEEP_INTERVAL

__all__ = ["SWEEP_INTERVAL", "JobNotFound", "JobOptions", "Jobs", "RunFollower", "RunRecord", "request_hash"]

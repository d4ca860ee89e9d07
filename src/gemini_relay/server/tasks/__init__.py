"""MCP tasks: a tool call answered later, run on the job engine (task_service.py), kept on disk beside the jobs
(store.py), and spoken in both wire generations, the 2026-07-28 Tasks extension and 2025-11-25 core tasks
(task_wire.py)."""

"""What every tool shares: its dependencies and reply (context.py), the input models' base and wire schema
(inputs.py), the output schemas, the prompt-running path (prompt_run.py), per-call progress and path checks."""

"""The `media` toolset: one module per tool (its name without `gemini-`), listed in toolset.py, and the generation
machinery they share (generate.py, durable.py, refs.py, config.py, inputs.py)."""

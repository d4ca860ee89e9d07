"""The `jobs` toolset: one module per tool (its name without `gemini-`), listed in toolset.py."""

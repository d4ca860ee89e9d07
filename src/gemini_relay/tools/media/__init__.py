"""The `media` toolset: one module per tool (its name without `gemini-`), listed in toolset.py. The generation machinery
they share with core's gemini-image is in tools/common (common/media_generate.py, common/media_jobs.py,
common/media_refs.py)."""

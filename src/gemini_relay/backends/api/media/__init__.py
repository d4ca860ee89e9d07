"""Media generation on the api backend: images, edits, sets, interactions, video, music, and the Files API.

`run.run_media(spec)` is what ApiBackend.run dispatches to when the spec carries a MediaRequest. It imports the SDK
and httpx2, so backend.py loads it lazily.
"""

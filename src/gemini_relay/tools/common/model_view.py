"""What the calling model sees of a reply that carries structuredContent — the one rule, applied by the server.

Claude Code (2.1.x), VS Code and Codex hand their model `JSON.stringify(structuredContent)` alone whenever a result
has structuredContent, and drop the text blocks (ecosystem-2026.md). So such a reply's structuredContent starts with
`text`: the reply as its text block reads — the answer, every ⚠️ notice, the 🧵 conversation id, the next step —
and the data follows. A reply whose data holds a long part of the text whole (a finished job's answer is `result`)
may say the rest in `Reply.model_text` instead, so the model does not read that part twice. A tool that declares an
outputSchema (every tool that runs a model does) always answers structuredContent, with the run's receipt; another
tool's reply without data carries none, and reaches the model as its text.
"""

from __future__ import annotations

from typing import Any

TEXT: dict[str, Any] = {
    "type": "string",
    "description": "The reply as text.",
}


def model_view(data: dict[str, Any], text: str) -> dict[str, Any]:
    """`data` as structuredContent: `text` first (a client that prints the JSON shows it first), then the data."""
    return {"text": text, **{key: value for key, value in data.items() if key != "text"}}

"""gemini-files: the Gemini Files API, in-process: upload a reference once and reuse its files/<id>; list; delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from gemini_relay.backends.asking import AskOutcome, Option, Question, current_asker
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.errors import InputError
from gemini_relay.tools.common import media_refs
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import PathText, ToolInput
from gemini_relay.tools.common.media_config import MediaConfig
from gemini_relay.tools.common.media_inputs import Url
from gemini_relay.tools.common.progress import CallProgress


class FilesInput(ToolInput):
    action: Literal["upload", "list", "delete"] = Field(description="upload a file, list uploads, or delete one.")
    path: PathText | None = Field(None, description="upload: a local file inside the project root or input folder.")
    url: Url | None = Field(None, description="upload: a public https image URL the server fetches.")
    data_base64: str | None = Field(None, description="upload: base64 bytes (last resort).")
    name: str | None = Field(None, max_length=128, description="delete: the files/<id> to delete.")
    confirm: bool = Field(
        False,
        description="delete: must be true (deleting cannot be undone); when left out, a client that supports "
        "elicitation is asked to confirm instead.",
    )
    limit: int = Field(50, ge=1, le=500, description="list: at most this many files.")


async def files(deps: Deps, args: FilesInput, call: CallProgress) -> Reply:
    maker = deps.registry.media()
    maker.media_ready()  # no credentials: say how to set them before anything else
    if args.action == "list":
        found = await maker.list_files(args.limit)
        rows = [
            {
                "name": f.name,
                "uri": f.uri,
                "mime_type": f.mime_type,
                "size_bytes": f.size_bytes,
                "expires": f.expires,
                "display_name": f.display_name,
            }
            for f in found
        ]
        listed = {"files": rows, "count": len(rows)}
        return Reply(_file_table(rows), structured=listed)
    if args.action == "delete":
        if not args.name:
            raise InputError("delete needs the files/<id> to delete", field="name")
        name = media_refs.file_uri_ref(args.name, "name").value
        if not args.confirm:
            kept = await _confirm_delete(args.name, "confirm" in args.model_fields_set)
            if kept is not None:
                return Reply(kept, structured={"deleted": False, "name": args.name, "confirmation": "refused"})
        await maker.delete_file(name if name.startswith("files/") else "files/" + name.split("/files/", 1)[1])
        confirmation = "argument" if args.confirm else "asked"
        return Reply(f"Deleted {args.name}.", structured={"deleted": True, "name": args.name,
                                                          "confirmation": confirmation})  # fmt: skip
    sources = [s for s in (args.path, args.url, args.data_base64) if s]
    if len(sources) != 1:
        raise InputError("upload takes exactly one of path, url or dataBase64", field="action")
    config = MediaConfig.from_settings(deps.settings)
    if args.path:
        handle, ref = media_refs.open_local(args.path, config, "path")
        with handle:  # sent from the descriptor checked, whatever the path names by the time the bytes go
            mime = ref.mime_type or "application/octet-stream"
            uploaded = await maker.upload_file(handle, mime, Path(ref.value).name)
    else:
        if args.url:
            ref = await media_refs.url_ref(args.url, deps.settings.state_dir)
        else:
            ref = media_refs.base64_ref(args.data_base64 or "", deps.settings.state_dir, "dataBase64")
        uploaded = await maker.upload_file(Path(ref.value), ref.mime_type or "application/octet-stream")
    data = {
        "file_uri": uploaded.name,
        "uri": uploaded.uri,
        "mime_type": uploaded.mime_type,
        "size_bytes": uploaded.size_bytes,
        "expires": uploaded.expires,
    }
    data["next"] = f'Pass it as imagesFileUris: ["{uploaded.name}"] (kept ~48 h).'
    size = f", {uploaded.size_bytes} bytes" if uploaded.size_bytes is not None else ""
    expires = f", expires {uploaded.expires}" if uploaded.expires else ""
    text = f"Uploaded `{uploaded.name}` ({uploaded.mime_type}{size}{expires}).\n\nNext: {data['next']}"
    return Reply(text, data, structured=data)


async def _confirm_delete(name: str, explicit: bool) -> str | None:
    """None when the user confirmed the delete through the client; the reply when they chose to keep the file.

    Raises:
        InputError: `confirm: false`, or no answer (a client without elicitation, a decline, a timeout).
    """
    refusal = f"deleting {name} cannot be undone: pass confirm: true to delete it"
    if explicit:
        raise InputError(refusal, field="confirm")
    asker = current_asker()
    question = Question(
        title=f"Delete {name}",
        action=f"delete {name} from the Gemini Files API (this cannot be undone)",
        options=(Option("delete", "Delete it", "allow_once"), Option("keep", "Keep it", "reject_once")),
    )
    answer = await asker.ask(question)
    chosen = question.option(answer.option_id) if answer.option_id else None
    if answer.outcome is AskOutcome.ANSWERED and chosen is not None:
        return None if chosen.allows else f"Kept {name}: the user chose not to delete it (asked through the client)."
    raise InputError(f"{refusal} (not deleted: {answer.outcome.describe(asker.timeout)})", field="confirm")


def _file_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No files are uploaded under this API key."
    lines = ["| file | type | bytes | expires | name |", "|---|---|---|---|---|"]
    lines += [
        f"| `{r['name']}` | {r['mime_type']} | {r['size_bytes'] if r['size_bytes'] is not None else '—'} | "
        f"{r['expires'] or '—'} | {r['display_name'] or '—'} |"
        for r in rows
    ]
    return "\n".join([*lines, "", f"{len(rows)} file(s). Pass one as imagesFileUris, or delete it (confirm: true)."])


DOC = Doc(
    "The Gemini Files API: upload a reference once (from path, url or dataBase64) and get a reusable files/<id> "
    "(kept ~48 h); list uploads; delete one (confirm: true required).",
    prompt="Upload, list or delete Gemini Files API uploads.",
)
TOOL = ToolDef("gemini-files", FilesInput, files, Effect.WRITES, DOC, toolset=Toolset.MEDIA)

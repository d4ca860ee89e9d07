"""`outputFile`: the answer written to a file in the project (for answers too long to relay), the reply says where.

Jailed like every path (realpath inside the project root, checked before the run and again, link by link, at write
time), written whole or not at all, and never over an existing file unless the call says `overwrite: true`: without
it the file is created exclusively, so a file that appeared during the run is not clobbered either.
"""

from __future__ import annotations

import os
from pathlib import Path

from gemini_relay.core.trusted_files import LinkInPath, write_file
from gemini_relay.errors import InputError
from gemini_relay.tools.common.path_args import check_destination

PREVIEW_CHARS = 500
_FIELD = "outputFile"


def output_target(root: Path, raw: str, *, overwrite: bool) -> Path:
    """The file's realpath-checked destination, refused before anything runs when it cannot be written.

    Raises:
        InputError: (field outputFile) it leaves the project root, names a folder, or exists without overwrite.
    """
    text = raw.strip()
    if not text or text.endswith(("/", "\\")):
        raise InputError("must name a file (a path relative to the project root)", field=_FIELD)
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.realpath(real_root / Path(text)))
    if Path(text).is_absolute() or text.startswith("~") or real_root not in target.parents:
        raise InputError(f"{text!r} resolves outside the project root ({real_root})", field=_FIELD)
    if target.is_dir():
        raise InputError(f"{text!r} is a folder; name a file", field=_FIELD)
    if target.exists() and not overwrite:
        raise InputError(f"{text!r} exists; pass overwrite: true to replace it", field=_FIELD)
    check_destination(target.parent, target.name, _FIELD)
    return target


def write_output(target: Path, text: str, *, overwrite: bool) -> tuple[str, bool]:
    """Write `text`; the reply's body (where it went, its size and a short preview) and whether it was written.

    A write that fails after the run loses nothing: the body then says why and carries the whole answer instead.
    """
    try:
        write_file(target, text.encode("utf-8"), jailed=True, exclusive=not overwrite)
    except FileExistsError:
        why = "it appeared during the run (pass overwrite: true to replace it)"
    except LinkInPath:
        why = "a folder on the way to it is a link now"
    except OSError as exc:
        why = f"it cannot be written: {exc.strerror or exc}"
    else:
        preview = text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")
        return f"The answer ({len(text):,} characters) was written to {target}.\n\nPreview:\n{preview}", True
    return f"⚠️ outputFile: nothing was written to {target}: {why}. The whole answer follows.\n\n{text}", False

"""Writing the relay's entries into one client's file, and taking them out again.

An entry already there as setup would write it is left as it is ("already present"); one setup wrote with other options
(Codex's approvals) is updated; a different entry under the same name is left alone and reported unless `--force`.
Before the first write to an existing file a backup is made (config_files.py). `--remove` takes out what setup wrote (or
an entry equal to what it would write) and leaves the rest; when nothing else touched the file since setup wrote it, the
file is restored byte for byte instead (or deleted with the folders and side files setup made, when it did not exist
before, and only while each holds exactly what was written). A file setup cannot open as a regular file, cannot read in
its format, or whose owner could not write it, is left alone with a line saying why (and the entry to add by hand); the
other clients go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemini_relay.setup.claude_cli import ClaudeCli, CliFailed, Snapshot
from gemini_relay.setup.clients import Client, Home
from gemini_relay.setup.config_files import (
    PRIVATE,
    FileRecord,
    NotAFile,
    Records,
    digest,
    file_digest,
    file_mode,
    make_backup,
    make_folders,
    new_file_mode,
    read_bytes,
    real,
    replace_file,
    restore,
    writable,
)
from gemini_relay.setup.entries import Entry
from gemini_relay.setup.formats import Format, FormatError


@dataclass
class Run:
    """One `setup` invocation: what it may do, and the report it prints."""

    home: Home
    records: Records
    yes: bool
    force: bool
    lines: list[str] = field(default_factory=list)
    failed: bool = False

    def say(self, text: str) -> None:
        self.lines.append(text)

    def block(self, text: str) -> None:
        self.lines.extend("      " + line if line else "" for line in text.splitlines())

    def fail(self, text: str) -> None:
        self.say(text)
        self.failed = True


@dataclass(frozen=True)
class Target:
    """One client's config file, its format, and the client's own CLI when setup edits the file through it."""

    client: Client
    path: Path
    fmt: Format
    cli: ClaudeCli | None = None
    side_folder: Path | None = None

    def where(self, home: Home) -> str:
        if self.cli is not None:
            return f"user scope of {home.short(self.path)}, through `{self.cli.binary} mcp`"
        return home.short(self.path)


@dataclass(frozen=True)
class _Read:
    raw: bytes | None
    text: str | None
    data: dict[str, Any]


def _read(run: Run, target: Target) -> _Read | None:
    try:
        raw = read_bytes(target.path)
        text = None if raw is None else raw.decode("utf-8")
        return _Read(raw, text, target.fmt.parse(text))
    except UnicodeDecodeError as exc:
        run.fail(f"  cannot read {run.home.short(target.path)}: it is not UTF-8 ({exc.reason}); left alone")
    except (NotAFile, FormatError) as exc:
        run.fail(f"  cannot read {run.home.short(target.path)}: {exc}; left alone")
    return None


def _may_write(run: Run, target: Target) -> bool:
    """Whether the file's owner could write it (setup writes nothing its owner could not); says why not."""
    try:
        writable(target.path)
    except NotAFile as exc:
        run.fail(f"  cannot write {run.home.short(target.path)}: {exc}")
        return False
    return True


def _summary(value: object) -> str:
    """What a differing entry runs, without its env or headers (they may hold secrets)."""
    if isinstance(value, dict):
        for key in ("command", "url", "httpUrl", "serverUrl"):
            if isinstance(value.get(key), str):
                return f"{key} {value[key]}"
    return "another entry"


def write(run: Run, target: Target, entries: Sequence[Entry]) -> None:
    read = _read(run, target)
    if read is None or (run.yes and not _may_write(run, target)):
        for entry in entries:
            run.say(f"  {entry.name}: add it by hand:")
            run.block(target.fmt.show(entry))
        return
    todo: list[Entry] = []
    record = run.records.get(target.path)
    for entry in entries:
        have = target.fmt.get(read.data, entry.name)
        written = record.entries.get(entry.name, {}).get("value") if record is not None else None
        ours = have is not None and (have == written or have in target.fmt.known(entry))
        if entry.token is not None and entry.token.value is None:
            run.say(f"  {entry.name}: would add (the token is made on --yes) in {target.where(run.home)}:")
            run.block(target.fmt.show(entry))
        elif have == target.fmt.want(entry):
            run.say(f"  {entry.name}: already present")
        elif have is not None and not run.force and not ours:
            run.say(f"  {entry.name}: differs ({_summary(have)}); left alone (--force replaces it)")
        else:
            verb = "update" if ours else "replace" if have is not None else "add"
            done = {"add": "added", "replace": "replaced", "update": "updated"}[verb]
            run.say(f"  {entry.name}: {done if run.yes else 'would ' + verb} in {target.where(run.home)}:")
            run.block(target.fmt.show(entry))
            todo.append(entry)
    if todo and run.yes:
        try:
            _write(run, target, read, todo)
        except (OSError, CliFailed, FormatError) as exc:
            run.fail(f"  not written: {exc}")


def _write(run: Run, target: Target, read: _Read, todo: Sequence[Entry]) -> None:
    record = run.records.get(target.path)
    fresh = record is None
    if record is None:
        record = FileRecord(existed=read.raw is not None)
        if read.raw is not None:
            record.backup = str(make_backup(target.path))
    elif record.written != digest(read.raw):
        record.restorable = False  # changed by someone else since setup's last write: edit, never restore
    if read.raw is None:
        record.created_folders += make_folders(real(target.path).parent)  # a link's target may be what is missing
    done: list[Entry] = []
    added: dict[str, str] = {}
    try:
        if target.cli is not None:
            _write_through_cli(target, target.cli, read, todo, record, done)
        else:
            like = writable(target.path)
            mode = file_mode(target.path) or new_file_mode()
            if any(entry.http for entry in todo) and mode & 0o077:
                run.say(f"  {run.home.short(target.path)} now holds the HTTP token: made it private to you (0600)")
                mode = PRIVATE
            text, added = target.fmt.add(read.text, read.data, todo)
            replace_file(target.path, text.encode("utf-8"), mode, like)
            done = list(todo)
    finally:
        if done:
            record.written = digest(read_bytes(target.path))
            for entry in done:
                record.entries[entry.name] = {"value": target.fmt.want(entry), "text": added.get(entry.name, "")}
            run.records.put(target.path, record)
            if fresh and record.backup:
                run.say(f"  backup of the file as it was: {run.home.short(record.backup)}")
        elif fresh:
            restore(target.path, record, keep_file=True)  # nothing written: no backup or folder left behind


def _write_through_cli(
    target: Target, cli: ClaudeCli, read: _Read, todo: Sequence[Entry], record: FileRecord, done: list[Entry]
) -> None:
    snapshot = Snapshot.take(target.side_folder) if target.side_folder is not None else None
    try:
        for entry in todo:
            if target.fmt.get(read.data, entry.name) is not None:
                cli.remove(entry.name)  # --force: the CLI refuses to add over an existing name
            value = target.fmt.want(entry)
            assert isinstance(value, dict)
            cli.add(entry.name, value)
            done.append(entry)
    finally:
        if snapshot is not None:
            files, folders = snapshot.created()
            for made in files:  # the CLI's own files: each goes on --remove only while it holds these bytes
                record.side_digests.setdefault(made, file_digest(Path(made)))
            record.side_files += [f for f in files if f not in record.side_files]
            record.created_folders += [f for f in folders if f not in record.created_folders]


def remove(run: Run, target: Target, names: Sequence[str], expected: Mapping[str, Entry]) -> None:
    read = _read(run, target)
    if read is None:
        return
    if run.yes and read.raw is not None and not _may_write(run, target):
        return
    record = run.records.get(target.path)
    todo: list[str] = []
    for name in names:
        have = target.fmt.get(read.data, name)
        written = record.entries.get(name, {}).get("value") if record is not None else None
        known = target.fmt.known(expected[name]) if name in expected else []
        ours = have is not None and (have == written or have in known)
        if have is None:
            continue
        if ours or run.force:
            run.say(f"  {name}: {'removed' if run.yes else 'would remove'} from {target.where(run.home)}")
            todo.append(name)
        else:
            run.say(f"  {name}: differs from what setup wrote ({_summary(have)}); left alone (--force removes it)")
    if not any(target.fmt.get(read.data, name) is not None for name in names):
        run.say(f"  no {' or '.join(names)} entry in {target.where(run.home)}")
    if todo and run.yes:
        try:
            _remove(run, target, read, record, todo)
        except (OSError, CliFailed, FormatError) as exc:
            run.fail(f"  not removed: {exc}")


def _remove(run: Run, target: Target, read: _Read, record: FileRecord | None, todo: Sequence[str]) -> None:
    short = run.home.short(target.path)
    untouched = record is not None and record.written == digest(read.raw)
    if record is not None and record.restorable and untouched and set(record.entries) <= set(todo):
        restore(target.path, record)
        run.records.drop(target.path)
        if record.existed:
            run.say(f"  {short}: restored byte for byte from its backup (nothing else had changed it)")
        elif target.path.is_symlink():
            made = run.home.short(real(target.path))
            run.say(f"  {short}: {made} deleted (setup had made it; nothing else had changed it); the link stays")
        else:
            run.say(f"  {short}: deleted (setup had made it; nothing else had changed it)")
        return
    if target.cli is not None:
        for name in todo:
            target.cli.remove(name)
    else:
        added = {n: str(e.get("text", "")) for n, e in record.entries.items()} if record is not None else {}
        assert read.text is not None
        text = target.fmt.remove(read.text, read.data, todo, added)
        like = writable(target.path)
        replace_file(target.path, text.encode("utf-8"), file_mode(target.path) or new_file_mode(), like)
    if record is None:
        return
    for name in todo:
        record.entries.pop(name, None)
    if record.entries:
        record.restorable = record.restorable and untouched
        record.written = digest(read_bytes(target.path))
        run.records.put(target.path, record)
        return
    run.records.drop(target.path)
    if record.backup:
        backup = run.home.short(record.backup)
        run.say(f"  {short} had changed since setup, so only the entries went; the file before setup: {backup}")

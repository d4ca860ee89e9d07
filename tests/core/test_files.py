"""Writing without following links, and reading back only state this user alone could have written."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from gemini_relay.core.trusted_files import (
    OTHERS_WRITE,
    LinkInPath,
    load_trusted_json,
    read_trusted,
    write_file,
)


def test_a_link_at_the_final_name_is_replaced_and_its_target_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.png").symlink_to(victim)
    write_file(tmp_path / "out" / "a.png", b"new", jailed=True)
    assert victim.read_bytes() == b"keep"
    assert not (tmp_path / "out" / "a.png").is_symlink() and (tmp_path / "out" / "a.png").read_bytes() == b"new"


def test_a_jailed_folder_swapped_for_a_link_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "art").symlink_to(outside)  # checked as a folder earlier; a link by the time the file is written
    with pytest.raises(LinkInPath, match="is no longer the folder checked before the run"):
        write_file(project / "art" / "a.png", b"x", jailed=True)
    assert list(outside.iterdir()) == []


def test_a_jailed_write_makes_the_missing_folders(tmp_path: Path) -> None:
    path = write_file(tmp_path / "a" / "b" / "c.bin", b"x", jailed=True)
    assert path.read_bytes() == b"x"


def test_a_name_of_255_bytes_is_written_the_temporary_name_is_short(tmp_path: Path) -> None:
    name = "é" * 127 + "x"
    assert len(name.encode()) == 255
    assert write_file(tmp_path / name, b"x").read_bytes() == b"x"
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_private_file_is_0600_in_a_0700_folder(tmp_path: Path) -> None:
    path = write_file(tmp_path / "state" / "f.json", b"{}", private=True, durable=True)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError):
        write_file(tmp_path / "taken", b"x")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def private(path: Path, data: bytes) -> Path:
    return write_file(path, data, private=True)


def test_a_private_record_reads_back(tmp_path: Path) -> None:
    path = private(tmp_path / "s" / "r.json", b'{"a": 1}')
    assert load_trusted_json(path, what="the record") == {"a": 1}
    assert read_trusted(tmp_path / "s" / "missing.json", what="the record") is None


def spoil(path: Path, how: str) -> None:
    if how == "group-writable":
        path.chmod(0o622)
    elif how == "open folder":
        path.parent.chmod(0o777)
    else:
        path.unlink()
        if how == "link":
            path.symlink_to(path.with_name("elsewhere"))
        else:
            os.mkfifo(path)


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("group-writable", "is writable by the group or others (mode 622)"),
        ("open folder", "its folder"),
        ("link", "it is a symlink"),
        ("fifo", "it is not a regular file"),
    ],
)
def test_a_record_others_could_have_written_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str, reason: str
) -> None:
    path = private(tmp_path / "s" / "r.json", b'{"a": 1}')
    private(tmp_path / "s" / "elsewhere", b'{"a": 2}')
    spoil(path, how)
    with caplog.at_level(logging.WARNING, logger="gemini_relay"):
        assert load_trusted_json(path, what="the test record") is None  # a FIFO does not block the read
    assert f"Ignoring the test record {path}: " in caplog.text and reason in caplog.text


def test_a_record_of_another_user_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = private(tmp_path / "s" / "r.json", b'{"a": 1}')
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # the file is now someone else's
    assert load_trusted_json(path, what="the record") is None


def test_group_write_is_tolerated_where_the_umask_decides(tmp_path: Path) -> None:
    path = private(tmp_path / "s" / "r.json", b'{"a": 1}')
    path.chmod(0o664)
    assert load_trusted_json(path, what="the record", mask=OTHERS_WRITE) == {"a": 1}
    path.chmod(0o666)
    assert load_trusted_json(path, what="the record", mask=OTHERS_WRITE) is None


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b"{not json", b"\xff\xfe", b"[1, 2]"])
def test_a_corrupt_or_hostile_record_reads_as_absent(tmp_path: Path, body: bytes) -> None:
    path = private(tmp_path / "s" / "r.json", body)
    assert load_trusted_json(path, what="the record") is None


def test_a_record_over_its_limit_is_not_read(tmp_path: Path) -> None:
    path = private(tmp_path / "s" / "r.json", json.dumps({"a": "x" * 100}).encode())
    assert load_trusted_json(path, what="the record", limit=50) is None
    assert load_trusted_json(path, what="the record", limit=500) is not None

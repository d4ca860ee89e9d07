"""The tolerant `agy --version` parser and the 1.1.15 floor (agy.md §1.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.backends.agy.version import FLOOR, AgyVersion, parse_version, require_floor
from gemini_relay.errors import BackendUnavailable

BINARY = Path("/opt/agy/bin/agy")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("1.1.8\n", AgyVersion(1, 1, 8)),
        ("agy 1.2.0", AgyVersion(1, 2, 0)),
        ("agy version 1.2.0\n", AgyVersion(1, 2, 0)),
        ("v1.2.0", AgyVersion(1, 2, 0)),
        ("1.2.0-preview.3", AgyVersion(1, 2, 0, "preview.3")),
    ],
)
def test_the_version_forms_agy_and_its_wrappers_print_are_accepted(output: str, expected: AgyVersion) -> None:
    assert parse_version(output) == expected


def test_a_prerelease_is_shown_but_compares_by_its_triple() -> None:
    version = parse_version("1.2.0-preview.3")
    assert str(version) == "1.2.0-preview.3"
    assert version == AgyVersion(1, 2, 0)


def test_a_flush_left_line_holding_only_the_version_outranks_an_earlier_triple() -> None:
    assert parse_version("agy 9.9.9 (built with go 1.22.5)\n1.2.16\n") == AgyVersion(1, 2, 16)


def test_the_first_triple_wins_within_a_tier() -> None:
    assert parse_version("agy 1.2.16 built with go 1.22.5") == AgyVersion(1, 2, 16)


@pytest.mark.parametrize(
    "output",
    [
        "installed at /usr/lib/agy/1.2.3/bin",
        "agy 1.2.3.4",
        "agy 2026.10.02",
        "  A new version 9.9.9 is available: run agy update",
    ],
)
def test_paths_longer_chains_dates_and_indented_upgrade_notices_are_not_versions(output: str) -> None:
    assert parse_version(output) is None


def test_an_indented_upgrade_notice_does_not_hide_the_real_version() -> None:
    assert parse_version("  Update available: 9.9.9\n1.1.15\n") == AgyVersion(1, 1, 15)


def test_the_floor_is_1_1_15() -> None:
    assert AgyVersion(1, 1, 15) == FLOOR
    assert require_floor("1.1.15\n", BINARY) == AgyVersion(1, 1, 15)
    assert require_floor("agy 1.3.1", BINARY) == AgyVersion(1, 3, 1)


def test_an_older_agy_is_refused_naming_the_found_version_and_path() -> None:
    with pytest.raises(BackendUnavailable) as caught:
        require_floor("1.1.14\n", BINARY)
    message = str(caught.value)
    assert "agy 1.1.15 or newer is required" in message
    assert "found 1.1.14 at /opt/agy/bin/agy" in message


def test_unreadable_version_output_is_refused_with_what_agy_printed() -> None:
    with pytest.raises(BackendUnavailable) as caught:
        require_floor("segmentation fault", BINARY)
    assert "segmentation fault" in str(caught.value) and str(BINARY) in str(caught.value)

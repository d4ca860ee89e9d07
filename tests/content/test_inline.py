"""`@` reference inlining: the root jail, expansion rules, budgets and the exact prompt layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemini_relay.content._errors import PathEscapeError
from gemini_relay.content.inline import MAX_FILE_BYTES, MAX_PROMPT_BYTES, InlineResult, inline_references

RUNNING_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def write(root: Path, rel: str, content: str | bytes = "x\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret_dir = tmp_path / "outside"
    write(secret_dir, "secret.txt", "TOP-SECRET-CONTENT\n")
    return secret_dir


def refuse(prompt: str, root: Path) -> PathEscapeError:
    with pytest.raises(PathEscapeError) as caught:
        inline_references(prompt, root)
    assert "TOP-SECRET-CONTENT" not in str(caught.value)
    return caught.value


# --- the jail -------------------------------------------------------------------------------------------------


def test_a_parent_relative_token_refuses_the_whole_prompt_even_when_the_target_exists(
    project: Path, outside: Path
) -> None:
    write(project, "ok.py")
    error = refuse("read @ok.py and @../outside/secret.txt", project)
    assert str(error) == "Refusing @../outside/secret.txt: the path leaves the project root"
    assert error.token == "../outside/secret.txt"
    assert error.reason == "the path leaves the project root"


def test_a_parent_relative_token_is_refused_even_when_nothing_exists_there(project: Path) -> None:
    assert refuse("@../x", project).reason == "the path leaves the project root"


def test_an_absolute_token_is_refused(project: Path) -> None:
    assert refuse("cat @/etc/passwd", project).reason == "absolute paths are not allowed"


def test_a_home_directory_token_is_refused(project: Path) -> None:
    assert refuse("@~/.ssh/id_rsa", project).reason == "home-directory paths are not allowed"


def test_another_users_home_directory_token_is_refused(project: Path) -> None:
    assert refuse("@~root/x", project).reason == "home-directory paths are not allowed"


def test_a_token_that_climbs_out_through_a_subdirectory_is_refused(project: Path) -> None:
    write(project, "src/a.py")
    assert refuse("@src/../../x", project).reason == "the path leaves the project root"


def test_a_dot_slash_token_that_climbs_out_is_refused(project: Path) -> None:
    write(project, "a/b.py")
    assert refuse("@./a/../../b", project).reason == "the path leaves the project root"


def test_a_bare_double_dot_is_refused(project: Path) -> None:
    assert refuse("look at @..", project).reason == "the path leaves the project root"


def test_a_glob_above_the_root_is_refused(project: Path, outside: Path) -> None:
    assert refuse("@../*", project).reason == "the path leaves the project root"


def test_a_symlink_that_points_outside_the_root_refuses_the_whole_prompt(project: Path, outside: Path) -> None:
    (project / "notes.txt").symlink_to(outside / "secret.txt")
    error = refuse("summarize @notes.txt", project)
    assert error.reason == "the path resolves outside the project root"


def test_a_symlinked_directory_that_points_outside_is_refused_by_name_and_through_a_child(
    project: Path, outside: Path
) -> None:
    (project / "ext").symlink_to(outside, target_is_directory=True)
    assert refuse("@ext", project).reason == "the path resolves outside the project root"
    assert refuse("@ext/secret.txt", project).reason == "the path resolves outside the project root"
    assert refuse("@ext/*.txt", project).reason == "the path resolves outside the project root"


def test_a_dangling_symlink_to_outside_is_refused_although_its_target_does_not_exist(
    project: Path, tmp_path: Path
) -> None:
    (project / "later.txt").symlink_to(tmp_path / "not-yet-created.txt")
    assert refuse("@later.txt", project).reason == "the path resolves outside the project root"


def test_backslash_and_drive_letter_forms_are_refused(project: Path) -> None:
    assert refuse("@..\\x", project).reason == "the path leaves the project root"
    assert refuse("@\\\\server\\share\\x", project).reason == "absolute paths are not allowed"
    assert refuse("@C:\\Windows\\win.ini", project).reason == "drive-letter paths are not allowed"
    assert refuse("@c:/x", project).reason == "drive-letter paths are not allowed"


def test_a_nul_byte_in_a_token_is_refused_and_not_echoed_raw(project: Path) -> None:
    error = refuse("@a\x00b", project)
    assert error.reason == "the path contains a NUL byte"
    assert "\x00" not in str(error)
    assert str(error) == "Refusing @a\\x00b: the path contains a NUL byte"


def test_an_escape_hidden_behind_trailing_punctuation_is_still_refused(project: Path, outside: Path) -> None:
    (project / "link").symlink_to(outside / "secret.txt")
    assert refuse("see @link.", project).reason == "the path resolves outside the project root"


def test_a_symlinked_root_is_resolved_so_its_own_files_are_not_mistaken_for_escapes(
    project: Path, tmp_path: Path
) -> None:
    write(project, "a.py", "A\n")
    alias = tmp_path / "alias"
    alias.symlink_to(project, target_is_directory=True)
    result = inline_references("@a.py", alias)
    assert result.files == ("a.py",)


def test_an_in_root_symlink_to_an_in_root_file_is_inlined(project: Path) -> None:
    write(project, "real.py", "R\n")
    (project / "alias.py").symlink_to(project / "real.py")
    assert inline_references("@alias.py", project).files == ("alias.py",)


# --- expansion ------------------------------------------------------------------------------------------------


def test_directory_expansion_skips_and_lists_a_symlink_that_escapes_without_following_it(
    project: Path, outside: Path
) -> None:
    write(project, "src/a.py", "A\n")
    (project / "src" / "evil").symlink_to(outside, target_is_directory=True)
    (project / "src" / "evil.txt").symlink_to(outside / "secret.txt")
    result = inline_references("@src", project)
    assert result.files == ("src/a.py",)
    assert result.skipped == ("src/evil", "src/evil.txt")
    assert "TOP-SECRET-CONTENT" not in result.text


def test_glob_expansion_skips_a_symlink_that_escapes(project: Path, outside: Path) -> None:
    write(project, "a.txt", "A\n")
    (project / "b.txt").symlink_to(outside / "secret.txt")
    result = inline_references("@*.txt", project)
    assert result.files == ("a.txt",)
    assert result.skipped == ("b.txt",)
    assert "TOP-SECRET-CONTENT" not in result.text


def test_symlink_loops_do_not_hang_the_walk(project: Path) -> None:
    write(project, "a/file.py", "F\n")
    (project / "a" / "up").symlink_to(project, target_is_directory=True)
    (project / "a" / "self").symlink_to(project / "a" / "self")
    (project / "ping").symlink_to(project / "pong")
    (project / "pong").symlink_to(project / "ping")
    result = inline_references("@. and @**/*.py", project)
    assert result.files == ("a/file.py",)
    assert set(result.skipped) == {"a/self", "ping", "pong"}


def test_the_dot_token_inlines_the_whole_root_in_sorted_order(project: Path) -> None:
    for rel in ("b.py", "a/z.py", "a.py", "a/b/c.py"):
        write(project, rel, rel + "\n")
    result = inline_references("Review @.", project)
    assert result.files == ("a/b/c.py", "a/z.py", "a.py", "b.py")
    assert result.text.startswith("Review .\n\n----- BEGIN FILE: a/b/c.py -----\n")


def test_expansion_skips_dependency_vcs_and_build_directories(project: Path) -> None:
    write(project, "src/a.js")
    write(project, "node_modules/lib/index.js")
    write(project, ".git/config")
    write(project, "dist/bundle.js")
    write(project, "src/node_modules/x.js")
    assert inline_references("@.", project).files == ("src/a.js",)


def test_expansion_skips_and_lists_secret_looking_files(project: Path) -> None:
    secrets = [".env", ".env.local", ".npmrc", ".netrc", ".git-credentials", "id_rsa", "id_rsa.pub", "id_ed25519"]
    secrets += ["certs/server.pem", "tls.KEY", "store.pfx", "store.p12"]
    for rel in secrets:
        write(project, rel, "TOP-SECRET-CONTENT\n")
    write(project, "app.py", "print()\n")
    result = inline_references("@.", project)
    assert result.files == ("app.py",)
    assert set(result.skipped) == set(secrets)
    assert "TOP-SECRET-CONTENT" not in result.text


def test_a_benign_named_symlink_to_a_secret_is_skipped_during_expansion(project: Path) -> None:
    write(project, ".env", "TOP-SECRET-CONTENT\n")
    (project / "config.txt").symlink_to(project / ".env")
    result = inline_references("@*.txt", project)
    assert result.files == ()
    assert result.skipped == ("config.txt",)


def test_a_secret_file_named_directly_is_inlined(project: Path) -> None:
    write(project, ".env", "API_KEY=abc\n")
    result = inline_references("why does @.env fail?", project)
    assert result.files == (".env",)
    assert "API_KEY=abc" in result.text


def test_globs_support_star_double_star_question_mark_and_brackets(project: Path) -> None:
    for rel in ("a.py", "b.py", "c.md", "src/d.py", "src/deep/e.py", "src/x1.txt", "src/x2.txt", "src/x3.txt"):
        write(project, rel)
    assert inline_references("@*.py", project).files == ("a.py", "b.py")
    assert inline_references("@**/*.py", project).files == ("a.py", "b.py", "src/d.py", "src/deep/e.py")
    assert inline_references("@src/**/*.py", project).files == ("src/d.py", "src/deep/e.py")
    assert inline_references("@src/x?.txt", project).files == ("src/x1.txt", "src/x2.txt", "src/x3.txt")
    assert inline_references("@src/x[13].txt", project).files == ("src/x1.txt", "src/x3.txt")


def test_a_file_whose_name_looks_like_a_glob_is_taken_literally(project: Path) -> None:
    write(project, "a[1].txt", "literal\n")
    write(project, "a1.txt", "globbed\n")
    assert inline_references("@a[1].txt", project).files == ("a[1].txt",)


def test_a_glob_that_matches_nothing_stays_verbatim(project: Path) -> None:
    write(project, "a.py")
    result = inline_references("try @*.rs later", project)
    assert result == InlineResult("try @*.rs later", (), (), (), (), ())


# --- tokens and prose -----------------------------------------------------------------------------------------


def test_tokens_that_name_nothing_stay_verbatim_as_prose(project: Path) -> None:
    write(project, "types/other.ts")
    prompt = "Document @param and @returns, install @types/node, mail a@b.com or user@host, use @Injectable()."
    result = inline_references(prompt, project)
    assert result.text == prompt
    assert result.files == ()


def test_a_prompt_without_tokens_is_returned_unchanged(project: Path) -> None:
    write(project, "a.py")
    assert inline_references("plain question?\n", project).text == "plain question?\n"


def test_an_inlined_file_replaces_its_token_with_the_path_and_is_appended_as_a_block(project: Path) -> None:
    write(project, "src/a.py", "print(1)\n")
    result = inline_references("Explain @src/a.py please", project)
    assert result.text == (
        "Explain src/a.py please\n\n----- BEGIN FILE: src/a.py -----\nprint(1)\n\n----- END FILE: src/a.py -----"
    )


def test_trailing_sentence_punctuation_is_left_in_the_prose(project: Path) -> None:
    write(project, "a.py", "A\n")
    write(project, "b.py", "B\n")
    write(project, "c.py", "C\n")
    result = inline_references('See @a.py. Then (@b.py), "@c.py"!', project)
    assert result.text.startswith('See a.py. Then (b.py), "c.py"!\n\n')
    assert result.files == ("a.py", "b.py", "c.py")


def test_the_raw_token_wins_when_it_exists_with_its_punctuation(project: Path) -> None:
    write(project, "v1.", "with dot\n")
    write(project, "v1", "without dot\n")
    assert inline_references("@v1.", project).files == ("v1.",)


def test_tokens_after_opening_brackets_and_quotes_are_recognised(project: Path) -> None:
    write(project, "a.py")
    for prompt in ("[@a.py]", "'@a.py'", "`@a.py`", "x\t@a.py"):
        assert inline_references(prompt, project).files == ("a.py",), prompt


def test_each_file_is_inlined_once_in_order_of_first_reference(project: Path) -> None:
    write(project, "a.py", "A\n")
    write(project, "b.py", "B\n")
    result = inline_references("@b.py then @a.py then @b.py then @.", project)
    assert result.files == ("b.py", "a.py")
    assert result.text.count("----- BEGIN FILE: b.py -----") == 1
    assert result.text.startswith("b.py then a.py then b.py then .\n\n----- BEGIN FILE: b.py -----")


# --- budgets, binaries, unreadable ----------------------------------------------------------------------------


def test_the_limits_are_256_kb_per_file_and_2_mb_per_prompt() -> None:
    assert MAX_FILE_BYTES == 256 * 1024
    assert MAX_PROMPT_BYTES == 2 * 1024 * 1024


def test_a_file_over_256_kb_is_truncated_on_a_utf8_boundary_with_a_marker(project: Path) -> None:
    # "x" then two-byte characters: byte 262143 starts a character that straddles the limit.
    write(project, "big.txt", "x" + "é" * (MAX_FILE_BYTES // 2 + 10))
    result = inline_references("@big.txt", project)
    assert result.truncated == ("big.txt",)
    assert result.files == ("big.txt",)
    block = result.text.split("----- BEGIN FILE: big.txt -----\n", 1)[1]
    content, marker = block.split("\n[TRUNCATED: ", 1)
    assert len(content.encode("utf-8")) == MAX_FILE_BYTES - 1
    assert content == "x" + "é" * (MAX_FILE_BYTES // 2 - 1)
    assert marker == "big.txt exceeds 256 KB; showing the first 256 KB]\n----- END FILE: big.txt -----"


def test_a_file_of_exactly_256_kb_is_not_truncated(project: Path) -> None:
    write(project, "exact.txt", "a" * MAX_FILE_BYTES)
    result = inline_references("@exact.txt", project)
    assert result.truncated == ()
    assert "[TRUNCATED" not in result.text


def test_files_beyond_the_2_mb_prompt_budget_are_omitted_and_named_in_a_footer(project: Path) -> None:
    for i in range(10):
        write(project, f"f{i}.txt", "a" * MAX_FILE_BYTES)
    write(project, "z_empty.txt", "")
    result = inline_references("@.", project)
    assert result.files == tuple(f"f{i}.txt" for i in range(8)) + ("z_empty.txt",)
    assert result.omitted == ("f8.txt", "f9.txt")
    assert result.text.endswith("\n\n[OMITTED: 2 file(s) over the 2 MB prompt budget: f8.txt, f9.txt]")
    assert sum(len(block) for block in result.text.split("----- BEGIN FILE")) < MAX_PROMPT_BYTES + 10_000


def test_a_smaller_file_still_fits_after_a_larger_one_was_omitted(project: Path) -> None:
    for i in range(7):
        write(project, f"a{i}.txt", "a" * MAX_FILE_BYTES)
    write(project, "b_big.txt", "b" * (MAX_FILE_BYTES - 100))
    write(project, "b_big2.txt", "c" * MAX_FILE_BYTES * 2)
    write(project, "c_small.txt", "small\n")
    result = inline_references("@.", project)
    assert result.files[-2:] == ("b_big.txt", "c_small.txt")
    assert result.omitted == ("b_big2.txt",)


def test_binary_files_are_skipped_and_listed(project: Path) -> None:
    write(project, "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write(project, "latin1.txt", "caf\xe9".encode("latin-1"))
    write(project, "ok.txt", "fine\n")
    result = inline_references("@.", project)
    assert result.files == ("ok.txt",)
    assert result.skipped == ("latin1.txt", "logo.png")


def test_a_binary_file_named_directly_is_skipped_but_its_token_still_reads_as_a_path(project: Path) -> None:
    write(project, "logo.png", b"\x00\x01")
    result = inline_references("What is @logo.png?", project)
    assert result.text == "What is logo.png?"
    assert result.skipped == ("logo.png",)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_special_files_are_skipped_without_being_opened(project: Path) -> None:
    os.mkfifo(project / "pipe")
    write(project, "a.txt")
    result = inline_references("@. and @pipe", project)
    assert result.files == ("a.txt",)
    assert result.skipped == ("pipe",)


@pytest.mark.skipif(RUNNING_AS_ROOT, reason="root can read a mode-000 file")
def test_an_unreadable_file_is_reported_in_a_footer_with_its_reason(project: Path) -> None:
    locked = write(project, "locked.txt", "no\n")
    locked.chmod(0)
    try:
        result = inline_references("@locked.txt", project)
    finally:
        locked.chmod(0o644)
    assert result.unreadable == ("locked.txt",)
    assert result.text == "locked.txt\n\n[UNREADABLE: locked.txt (Permission denied)]"

r"""Prompt text a Gemini agent CLI must take literally: no `@` file expansion, no leading slash command.

The Gemini CLI (0.61.0, atCommandProcessor.ts) reads every `@` not preceded by a backslash as a path to read
into the prompt, and globs the workspace for it when nothing matches — so an `@` the relay did not inline
(in a search query, a diff, an e-mail address, a file it did inline) would pull files past the relay's own
jail and secret filter. Its own escape is a backslash: `(?<!\\)@` never matches `\@`, and a prompt without
`@` references reaches the model verbatim. A prompt starting with `/` (not `//` or `/*`) runs a project
command template (`.gemini/commands/*.toml`); any other first character keeps it a plain prompt.
"""

from __future__ import annotations

import re

__all__ = ["neutralise_at_references", "neutralise_prompt", "neutralise_slash_command"]

# Exactly where the CLI's AT_COMMAND_PATH_REGEX can start a match: an unescaped `@` followed by a path
# character (anything but ASCII space/tab/CR/LF and `,;!?()[]{}.`) or by a `.` that does not end the text or
# precede whitespace. JavaScript's `$` without /m is \Z here. `@` followed by nothing of that kind stays as is.
_EXPANDABLE_AT = re.compile(r"(?<!\\)@(?=[^ \t\n\r,;!?()\[\]{}.]|\.(?![ \t\n\r]|\Z))")


def neutralise_at_references(text: str) -> str:
    """Escape every `@` the CLI would expand (`@x` becomes backslash-`@x`); the model still reads the `@`."""
    return _EXPANDABLE_AT.sub(r"\\@", text)


def neutralise_slash_command(text: str) -> str:
    """A prompt the CLI would dispatch as `/command` gets a leading space, which its check does not trim."""
    if text.startswith("/") and not text.startswith(("//", "/*")):
        return " " + text
    return text


def neutralise_prompt(text: str, *, allow_slash_commands: bool) -> str:
    """The stdin prompt for a Gemini CLI run: `@` never expands; `/name` runs a command only when allowed."""
    text = neutralise_at_references(text)
    return text if allow_slash_commands else neutralise_slash_command(text)

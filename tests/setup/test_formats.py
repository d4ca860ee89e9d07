"""The file formats as text: a TOML table comes out with its sub-tables whatever its key's quoting, and nothing else
does; JSON is written back with the file's own indentation."""

from __future__ import annotations

import json
import tomllib

from gemini_relay.setup.codex_format import CodexFormat, drop_table, header_keys
from gemini_relay.setup.entries import plain_shape, stdio_entry
from gemini_relay.setup.formats import JsonFormat

OTHERS = '[mcp_servers.gemini-relay-http]\nurl = "u"\n\n[mcp_servers.other]\ncommand = "x"\n'


def test_drop_table_takes_out_the_table_and_its_subtables_and_nothing_else() -> None:
    text = (
        'model = "m"\n\n'
        '[mcp_servers."gemini-relay"]\ncommand = "old"\n'
        "[ mcp_servers . 'gemini-relay' . tools . gemini-plan ]\napproval_mode = \"prompt\"\n\n" + OTHERS
    )
    left = drop_table(text, "gemini-relay")
    assert left == 'model = "m"\n' + OTHERS
    assert set(tomllib.loads(left)["mcp_servers"]) == {"gemini-relay-http", "other"}


def test_header_keys_reads_quoted_and_dotted_keys_and_ignores_other_lines() -> None:
    assert header_keys('[mcp_servers."a.b".tools]  # note') == ["mcp_servers", "a.b", "tools"]
    assert header_keys("[[profiles]]") == ["profiles"]
    assert header_keys('key = "[not a header]"') is None


def test_the_codex_table_appended_to_a_file_without_a_final_newline_comes_out_exactly() -> None:
    fmt = CodexFormat(["gemini-plan"])
    entry = stdio_entry("/bin/relay", [])
    text, added = fmt.add("a = 1", {"a": 1}, [entry])
    assert fmt.get(fmt.parse(text), "gemini-relay") == fmt.want(entry)
    assert fmt.remove(text, fmt.parse(text), ["gemini-relay"], added) == "a = 1"


def test_json_keeps_the_files_tabs_and_its_missing_final_newline() -> None:
    fmt = JsonFormat("mcpServers", plain_shape)
    original = json.dumps({"mcpServers": {}}, indent="\t")
    text, _ = fmt.add(original, fmt.parse(original), [stdio_entry("/bin/relay", [])])
    assert text.splitlines()[1].startswith('\t"mcpServers"') and not text.endswith("\n")

"""`gemini-relay setup`: find the MCP clients in this home, show the relay's entry for each, write it on `--yes` (backup
first), and take it out again on `--remove`, leaving the files as they were.

entries.py says what an entry holds and its shape in each client; formats.py reads and edits JSON files without changing
a number or a string, codex_format.py Codex's TOML as text, keeping the user's comments; config_files.py does the disk
work (reads that refuse what is not a regular file, atomic writes through links that keep mode and owner, backups, the
record of what setup wrote); lock.py lets one writing run at a time; claude_cli.py drives the real `claude mcp`
commands; clients.py is the table of clients; entry_writer.py is the write and undo procedure; command.py is the
subcommand itself, setup_options.py its arguments.
"""

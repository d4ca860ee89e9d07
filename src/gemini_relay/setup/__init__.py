"""`gemini-relay setup`: find the MCP clients in this home, show the relay's entry for each, write it on `--yes`
(backup first), and take it out again on `--remove`, leaving the files as they were.

entries.py says what an entry holds and its shape in each client; formats.py reads and edits each file format as
text; files.py does the disk work (atomic writes through links, backups, the record of what setup wrote);
claude_cli.py drives the real `claude mcp` commands; clients.py is the table of clients; apply.py is the write and
undo procedure; command.py is the subcommand itself, options.py its arguments.
"""

"""The MCP server: the relay's protocol surface over the tool registry (relay.py), and MCP tasks (tasks/)."""

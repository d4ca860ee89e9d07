"""The MCP conformance runner's fixtures (GEMINI_MCP_TEST_TOOLS=conformance only): the tools, prompts and
resources its scenarios call by name, served by the relay's own server so the runner measures the relay's protocol
stack (server/channel.py, server/catalog.py, server/tasks/), not a second one."""

"""Pure prompt and response content: `@` inlining, changeMode, chunking and prompt builders (no MCP, no I/O beyond
reading referenced files)."""

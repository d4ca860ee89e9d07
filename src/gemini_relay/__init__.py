"""gemini-relay: an MCP server that hands work from any MCP client to Google's Gemini agents."""

# The one place the version lives; pyproject.toml reads it (importlib.metadata would cost ~50 ms per start).
__version__ = "0.1.0"
# The wire behaviour of the default tools: gemini-relay 1.2.0's (tests/data/surface.json), but for the deliberate
# differences docs/seeds.md lists (each held by a test).
TOOL_SURFACE = "1.2.0"

__all__ = ["TOOL_SURFACE", "__version__"]

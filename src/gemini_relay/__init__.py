"""gemini-relay: an MCP server that hands work from any MCP client to Google's Gemini agents."""

# The one place the version lives; pyproject.toml reads it (importlib.metadata would cost ~50 ms per start).
__version__ = "0.1.0"

__all__ = ["__version__"]

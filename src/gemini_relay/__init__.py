"""gemini-relay: an MCP server that hands work from any MCP client to Google's Gemini agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gemini-relay")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]

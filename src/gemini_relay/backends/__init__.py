"""Upstreams: each backend turns a RunSpec into decoded events and a verdict. No MCP here."""

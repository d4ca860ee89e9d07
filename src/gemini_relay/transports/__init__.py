"""The ways the server is reached: stdio (one client, the default) or Streamable HTTP on loopback (many clients).

Kept empty: stdio_front must be importable before the MCP SDK is (serve.run_server imports it).
"""

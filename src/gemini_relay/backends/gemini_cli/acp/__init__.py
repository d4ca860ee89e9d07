"""Warm Gemini CLI sessions over ACP (`gemini --acp`): one process serves many conversations.

AcpConnection speaks the protocol to one child, WarmPool owns the children, AcpBackend turns a RunSpec into events.
"""

from gemini_relay.backends.gemini_cli.acp.backend import AcpBackend
from gemini_relay.backends.gemini_cli.acp.connection import AcpConnection, AcpHandshakeError, open_connection
from gemini_relay.backends.gemini_cli.acp.pool import WarmPool
from gemini_relay.backends.gemini_cli.acp.sessions import Launch

__all__ = ["AcpBackend", "AcpConnection", "AcpHandshakeError", "Launch", "WarmPool", "open_connection"]

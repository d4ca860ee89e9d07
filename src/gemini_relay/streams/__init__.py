"""Pure stream decoders: bytes -> lines (framing) -> dicts -> neutral AgentEvents. No I/O here."""

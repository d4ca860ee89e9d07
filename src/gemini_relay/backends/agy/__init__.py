"""The agy (Antigravity CLI) backend."""

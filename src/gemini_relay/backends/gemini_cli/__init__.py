"""The Gemini CLI backend."""

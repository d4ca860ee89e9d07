"""The job page served beside /mcp in HTTP mode: every job in the state dir, live, with its media."""

from gemini_relay.transports.page.feed import JobFeed
from gemini_relay.transports.page.routes import Page, is_page_asset, is_page_path

__all__ = ["JobFeed", "Page", "is_page_asset", "is_page_path"]

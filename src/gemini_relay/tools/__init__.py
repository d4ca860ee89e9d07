"""The tools: one folder per toolset (core/ holds the default tools; jobs/, review/, media/ the opt-in toolsets),
one module per tool exporting its one definition, each folder's list in toolset.py, the registry (registry.py) over
them, and the machinery every tool shares (common/)."""

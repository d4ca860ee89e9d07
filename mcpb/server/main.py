"""The bundle's entry point: the gemini-relay server, from the wheel this bundle ships (uv installs it with its
dependencies from pyproject.toml into the bundle's own environment)."""

import sys

from gemini_relay.cli import main

sys.exit(main())

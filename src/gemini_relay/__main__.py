import sys

from gemini_relay.cli import main

sys.exit(main())

"""`python -m bench.reliability [--short]`: attack the real server and print one table of what it survives.

Each figure comes from a real attack on the real server (stdio and HTTP, the pinned Gemini CLI against the API
emulator, fake CLIs for misbehaviour), with its goal beside it; a figure off its goal makes the run exit 1.
"""

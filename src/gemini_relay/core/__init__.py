"""The bottom layer: closed vocabularies, the run request, events and the result value. Imports nothing above."""

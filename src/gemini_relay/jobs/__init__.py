"""The run engine: every upstream call is a run with an id, a record, a backend and a state from a closed set."""

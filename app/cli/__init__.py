"""The command line: the click commands, plain and rich progress, the NDJSON event stream, compare."""

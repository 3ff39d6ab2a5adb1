"""The client core (``core/``) runs under each client version's interpreter, never in the project's own run."""

collect_ignore = ["core"]

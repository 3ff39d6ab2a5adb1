"""Stream indexer: keeps RANK and FTS items in step with their source items."""

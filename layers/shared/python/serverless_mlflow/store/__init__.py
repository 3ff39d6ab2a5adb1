"""Entity data access shared by several features (experiments are read by runs, artifacts, ...)."""

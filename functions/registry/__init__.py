"""Model registry feature: registered models, versions, aliases, tags, stages, search."""

"""The web UI: index.html and the static build of the mlflow wheel."""

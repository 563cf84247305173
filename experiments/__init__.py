"""The scripts that made the committed results: ``experiments/README.md`` says which made which."""

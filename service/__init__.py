"""`bias-audit serve`: the HTTP API over the same consumers the stream worker runs."""

"""Append-only record storage (JSONL) and its tolerant reader."""

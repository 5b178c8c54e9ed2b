"""The worker's state, on Redis for the worker and in process for `bias-audit audit` and tests:
rolling windows, alert state, judges' games, task suggestions."""

"""Rolling-window stores: Redis for the worker, in-process for `bias-audit audit`."""

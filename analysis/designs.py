"""Work shared by the sessions of a batch that have the same design.

The two-way fit's normal matrix, its pseudo-inverse and the links between reviewers depend only
on which cells of a session were scored, not on the scores; a council sends the same design
session after session, so a batch of thousands holds one or a few. Each is computed once per
distinct design and handed to the design's sessions: the same routine on the same input gives
the same floats, so the result is bit-identical to computing it for every session.
"""

from __future__ import annotations

import numpy as np


def design_index(used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, ...) bools -> (the first session of each distinct design, each session's design)."""
    sessions = used.shape[0]
    if sessions < 2:
        return np.arange(sessions), np.arange(sessions)
    packed = np.packbits(used.reshape(sessions, -1), axis=1)
    keys: np.ndarray
    if packed.shape[1] <= 8:  # up to 64 cells: one integer key a session sorts fastest
        padded = np.zeros((sessions, 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        keys = padded.view(np.uint64)[:, 0]
    else:
        keys = packed.view(np.dtype((np.void, packed.shape[1])))[:, 0]
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    return first, which.reshape(sessions)

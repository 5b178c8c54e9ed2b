"""Eigendecompositions shared by the sessions of a batch that have the same design.

The two-way fit's normal matrix depends only on which cells of a session were scored, not on
the scores; a council sends the same design session after session, so a batch of 100 holds one
or a few. One LAPACK call per distinct design instead of one per session.
"""

from __future__ import annotations

import numpy as np


def eigh_per_design(matrices: np.ndarray, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.linalg.eigh(matrices), where matrices[b] is a function of used[b] alone (B, R, M bools):
    decomposed once per distinct used[b]. The same LAPACK routine on the same matrix gives the
    same floats, so the result is bit-identical to decomposing every matrix."""
    sessions = used.shape[0]
    if sessions < 2:
        return np.linalg.eigh(matrices)
    packed = np.packbits(used.reshape(sessions, -1), axis=1)
    keys = packed.view(np.dtype((np.void, packed.shape[1])))[:, 0]  # one bytes-like key per session
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) == sessions:  # every design distinct: nothing to share
        return np.linalg.eigh(matrices)
    values, vectors = np.linalg.eigh(matrices[first])
    return values[which], vectors[which]

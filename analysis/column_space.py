"""Where a window's long columns live: in memory, or in files the OS pages in and out (the report
reader's spill). The analysis asks for room and says when the pages it read may go; it never
learns which."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class ColumnSpace(Protocol):
    def zeros(self, size: int, kind: Any) -> np.ndarray:
        """A writable array of `size` zeros."""
        ...

    def hand_back(self) -> None:
        """The pages read or written so far are not needed now (the data stays)."""
        ...


class InMemory:
    """Columns as ordinary arrays: nothing to hand back."""

    def zeros(self, size: int, kind: Any) -> np.ndarray:
        return np.zeros(size, kind)

    def hand_back(self) -> None:
        return None


IN_MEMORY = InMemory()

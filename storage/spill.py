"""Arrays held in temporary files rather than in the process's memory: a year of sessions' columns
spilled to disk and read back through the OS's page cache.

Each array is a shared mapping of its own unlinked temporary file, so it reads and writes as any
numpy array and its file goes when the array does (a `ColumnSpace`, as the analysis sees it). `hand_back` tells the OS that the pages read or
written so far are not needed now: they leave the process's resident memory (written ones are kept
in the file) and are read again from the page cache, or from disk once the OS needed the memory,
when next touched. A caller that walks the columns a block at a time and hands back after each
block keeps about a block of them resident, whatever their length.
"""

from __future__ import annotations

import mmap
import tempfile
import weakref
from typing import Any

import numpy as np


class Spill:
    """Makes file-backed arrays in `directory` (the system's temporary directory by default) and
    hands their pages back to the OS on request."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        self._maps: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()

    def zeros(self, size: int, kind: Any) -> np.ndarray:
        """A writable array of `size` zeros in a file of its own; pages take memory or disk only
        once written."""
        dtype = np.dtype(kind)
        nbytes = size * dtype.itemsize
        if nbytes == 0:
            return np.zeros(size, dtype)
        with tempfile.TemporaryFile(dir=self.directory) as file:  # the mapping outlives the handle
            file.truncate(nbytes)
            mapped = mmap.mmap(file.fileno(), nbytes)
        self._maps.add(mapped)
        return np.frombuffer(mapped, dtype=dtype, count=size)

    def hand_back(self) -> None:
        """Every spilled page out of the process's resident memory; the data stays in the files."""
        for mapped in list(self._maps):
            mapped.madvise(mmap.MADV_DONTNEED)

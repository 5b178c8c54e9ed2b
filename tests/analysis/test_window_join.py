"""joined(): a window digested in two parts is the window digested whole."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bias_audit.analysis.digest import SessionDigest
from bias_audit.analysis.window_cells import joined, window_cells

COLUMNS = ("session", "reviewer", "model", "position", "score", "own", "length", "similarity", "fingerprint", "correct")


def digest(n: int, reviewers: list[str], models: list[str], *, fingerprints=(), correct=(), similarity=()) -> SessionDigest:
    cells = [(r, m, m, (r + 2 * m + n) % 7 / 7, reviewers[r] == models[m])
             for r in range(len(reviewers)) for m in range(len(models))]
    return SessionDigest.from_cells(
        cells, session_id=f"s{n}", tenant_id="acme", ts_ms=1_000 * n, trace_id=None, config_version="1",
        reviewers=tuple(reviewers), models=tuple(models), lengths=tuple(100.0 + 10 * n + i for i in range(len(models))),
        length_unit="words", fingerprints=tuple(fingerprints), correct=tuple(correct),
        cell_similarity=tuple(similarity) if similarity else (),
    )


WINDOW = [
    digest(0, ["a", "b"], ["a", "b"], fingerprints=["f1", None], correct=[True, None]),
    digest(1, ["b", "c"], ["b", "c", "d"]),  # no fingerprints, correctness or similarities recorded
    digest(2, ["c", "d"], ["d", "e"], fingerprints=["f2", "f1"], correct=[False, True],
           similarity=[0.5, None, 0.25, 1.0]),
    digest(3, ["e", "a"], ["a", "f"], fingerprints=[None, "f3"], similarity=[None, None, 0.75, 0.0]),
    digest(4, ["a"], ["f", "g"], fingerprints=["f3", "f4"], correct=[None, False]),
]


@pytest.mark.parametrize("cut", range(len(WINDOW) + 1))  # either part may be empty
def test_two_parts_joined_are_the_window_digested_whole(cut):
    whole = window_cells(WINDOW)
    parts = joined(window_cells(WINDOW[:cut]), window_cells(WINDOW[cut:]))
    assert parts.reviewers == whole.reviewers == ["a", "b", "c", "d", "e"]
    assert parts.models == whole.models == ["a", "b", "c", "d", "e", "f", "g"]
    assert parts.fingerprints == whole.fingerprints == ["f1", "f2", "f3", "f4"]
    assert list(parts.digests) == list(whole.digests)
    for name in COLUMNS:
        mine, expected = getattr(parts, name), getattr(whole, name)
        assert mine.dtype == expected.dtype, name
        assert np.array_equal(mine, expected, equal_nan=mine.dtype.kind == "f"), name


def test_the_joined_columns_by_hand():
    """Independent of window_cells's own numbering: the second part's names renumbered after the first's."""
    parts = joined(window_cells(WINDOW[3:4]), window_cells(WINDOW[2:3]))  # e,a x a,f then c,d x d,e
    assert parts.reviewers == ["e", "a", "c", "d"] and parts.models == ["a", "f", "d", "e"]
    assert parts.session.tolist() == [0] * 4 + [1] * 4
    assert parts.reviewer.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert parts.model.tolist() == [0, 1, 0, 1, 2, 3, 2, 3]
    assert parts.fingerprints == ["f3", "f2", "f1"]
    assert parts.fingerprint.tolist() == [-1, 0, -1, 0, 1, 2, 1, 2]
    assert parts.correct.tolist() == [-1, -1, -1, -1, 0, 1, 0, 1]
    nan = np.nan
    assert np.array_equal(parts.similarity, [nan, nan, 0.75, 0.0, 0.5, nan, 0.25, 1.0], equal_nan=True)
    assert parts.length.tolist() == [130.0, 131.0, 130.0, 131.0, 120.0, 121.0, 120.0, 121.0]


def test_a_digest_pickles_as_its_fields():
    """The report's second process sends digests back pickled: every field survives."""
    for d in WINDOW:
        back = pickle.loads(pickle.dumps(d, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == d and back is not d
    assert SessionDigest.__reduce__(WINDOW[2])[1][:3] == ("s2", "acme", 2_000)

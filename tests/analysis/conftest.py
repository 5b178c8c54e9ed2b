"""The two implementations of the per-session audit: analysis/_audit.c (used whenever setup.py
built it) and the numpy path an install without a C compiler runs. Tests that take the
`audit_engine` fixture run once on each."""

import pytest

from bias_audit.analysis import session_audit


@pytest.fixture(params=["compiled", "numpy"])
def audit_engine(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(session_audit, "COMPILED", None)
    else:
        assert session_audit.COMPILED is not None, "setup.py did not build analysis/_audit.c"
    return request.param

"""`bias-audit report` on 10,000 and 30,000 simulated sessions, equal to golden files: every
number to the JSON's 4 decimals, bootstrap intervals aside (a rewrite may resample differently).

The golden files are the report's own output, kept before its reader and fits are rewritten to
run in flat memory: a guard that the rewrite changes no figure, not an oracle (the statistics'
oracles are the tables in tests/analysis). Write them again only when a figure is meant to change:
`BIAS_AUDIT_WRITE_GOLDEN=1 pytest tests/reports/test_report_golden.py`, and say why in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.services import run_cli
from tests.simulate import Corpus, biased_council, digest_records

pytestmark = pytest.mark.slow
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"


def write_records(sessions: int, folder: Path) -> None:
    """Two tenants, their records interleaved by session as a worker writes them: acme with a
    harsh reviewer, a first-position effect, a length slope and self-preference; beta unbiased
    and a tenth as large."""
    acme = biased_council(sessions).digests()
    beta = iter(Corpus(sessions=sessions // 10, models=4, seed=48, tenant="beta").digests())
    folder.mkdir()
    with open(folder / "records.jsonl", "wb") as out:
        for index, digest in enumerate(acme):
            batch = digest_records(digest)
            if index % 10 == 0 and (other := next(beta, None)) is not None:
                batch += digest_records(other)
            out.write(b"".join(orjson.dumps(record) + b"\n" for record in batch))


def comparable(value: Any) -> Any:
    """The report without what differs between runs (its time, the input's temporary path) and
    without the bootstrap intervals; numbers to 4 decimals."""
    if isinstance(value, dict):
        return {
            key: comparable(item)
            for key, item in value.items()
            if key not in ("generated_at", "sources") and not key.startswith("bootstrap_")
        }
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, float):
        return round(value, 4)
    return value


def differences(got: Any, want: Any, path: str = "") -> list[str]:
    if isinstance(got, dict) and isinstance(want, dict):
        return [
            line
            for key in sorted(set(got) | set(want), key=str)
            for line in differences(got.get(key, "<missing>"), want.get(key, "<missing>"), f"{path}.{key}")
        ]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [line for i, (g, w) in enumerate(zip(got, want)) for line in differences(g, w, f"{path}[{i}]")]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]


@pytest.mark.parametrize("sessions", [10_000, 30_000])
def test_the_report_on_many_sessions_equals_its_golden_file(sessions, tmp_path):
    write_records(sessions, tmp_path / "records")
    done = run_cli("report", "--input", str(tmp_path / "records"), "--sessions", "0", "--days", "0", "--format", "json")
    assert done.returncode == 0, done.stderr
    got = comparable(json.loads(done.stdout))
    golden = GOLDEN / f"report-{sessions // 1000}k.json"
    if os.environ.get("BIAS_AUDIT_WRITE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(golden.read_text())
    assert [tenant["sessions"] for tenant in got["tenants"]] == [sessions, sessions // 10]
    assert not (wrong := differences(got, want)), "\n".join(wrong[:20])


def test_the_comparison_sees_a_figure_move_in_the_fourth_decimal():
    want = comparable({"a": [{"point_estimate": 0.2523, "bootstrap_ci_lower": 0.1}], "generated_at": "x"})
    assert differences(comparable({"a": [{"point_estimate": 0.2523, "bootstrap_ci_lower": 0.3}]}), want) == []
    assert differences(comparable({"a": [{"point_estimate": 0.2524}]}), want) == [
        ".a[0].point_estimate: 0.2524 != 0.2523"
    ]

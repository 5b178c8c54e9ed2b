"""Parquet export: typed columns, one folder per UTC day, read back by pyarrow and by DuckDB as a
warehouse would; and `bias-audit export --format parquet` over a real PostgreSQL store, row for
row what the JSONL export says."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bias_audit.storage.parquet_export import TABLES, schema_of, write_parquet
from bias_audit.worker.judge_samples import generate_verdicts
from bias_audit.worker.response_samples import generate_responses
from bias_audit.worker.samples import generate_sessions
from tests.services import run_cli


def record(session: str, timestamp: str, **changes) -> dict:
    return {
        "schema_version": "1.2.0",
        "session_id": session,
        "timestamp": timestamp,
        "tenant_id": "acme",
        "trace_id": "t-1",
        "consent_level": 2,
        "reviewer_id": "a",
        "model_id": "b",
        "position": 1,
        "response_length_chars": 120,
        "response_length_words": 20,
        "score_value": 7.5,
        "score_scale": "1-10",
        "is_self_review": False,
        "council_config_version": None,
        "query_hash": None,
        "query_metadata": {"domain": "law"},
        "style_similarity": None,
        "response_fingerprint": None,
        "response_correct": None,
        **changes,
    }


def read_back(folder: Path) -> list[dict]:
    return pq.read_table(sorted(folder.glob("day=*/*.parquet"))).to_pylist()


def test_rows_land_in_their_utc_day_with_typed_columns(tmp_path):
    rows = [
        record("s1", "2026-11-25T23:30:00Z"),
        record("s2", "2026-11-26T00:30:00+02:00"),  # 2026-11-25 22:30 UTC: the 25th
        record("s3", "2026-11-26T00:00:00.000001Z", position=None, query_metadata=None, is_self_review=True),
    ]
    written = write_parquet(rows, "records", tmp_path, batch_rows=2)
    assert written.rows == 3
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written.files) == [
        "day=2026-11-25/part-00000.parquet",
        "day=2026-11-26/part-00000.parquet",
    ]
    table = pq.read_table(tmp_path / "day=2026-11-25" / "part-00000.parquet")
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("consent_level").type == pa.int8() and table.schema.field("position").type == pa.int32()
    assert table.column("session_id").to_pylist() == ["s1", "s2"]
    assert table.column("timestamp").to_pylist() == [
        datetime(2026, 11, 25, 23, 30, tzinfo=timezone.utc),
        datetime(2026, 11, 25, 22, 30, tzinfo=timezone.utc),
    ]
    assert table.column("query_metadata").to_pylist() == ['{"domain":"law"}'] * 2  # JSON text
    [late] = pq.read_table(tmp_path / "day=2026-11-26" / "part-00000.parquet").to_pylist()
    assert (late["position"], late["query_metadata"], late["is_self_review"]) == (None, None, True)
    assert late["timestamp"] == datetime(2026, 11, 26, 0, 0, 0, 1, tzinfo=timezone.utc)


def test_a_day_met_again_after_its_file_closed_gets_its_next_part(tmp_path):
    days = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-01"]
    rows = [record(f"s{i}", f"{day}T12:00:00Z") for i, day in enumerate(days)]
    written = write_parquet(rows, "records", tmp_path, batch_rows=1, open_files=2)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written.files) == [
        "day=2026-11-01/part-00000.parquet",
        "day=2026-11-01/part-00001.parquet",
        "day=2026-11-02/part-00000.parquet",
        "day=2026-11-03/part-00000.parquet",
    ]
    assert sorted(r["session_id"] for r in read_back(tmp_path)) == ["s0", "s1", "s2", "s3"]


def test_every_column_is_documented_and_the_schema_says_which_table():
    for kind, columns in TABLES.items():
        schema = schema_of(kind)
        assert schema.metadata[b"bias_audit.table"] == kind.encode()
        assert all(schema.field(c.name).metadata[b"description"] for c in columns)
        assert len({c.name for c in columns}) == len(columns)
    documented = (Path(__file__).parents[2] / "docs" / "parquet.md").read_text()
    assert all(f"`{c.name}`" in documented for columns in TABLES.values() for c in columns)


def test_duckdb_reads_the_folder_as_a_warehouse_would(tmp_path):
    import duckdb

    rows = [record(f"s{i}", f"2026-11-{1 + i % 3:02d}T0{i % 10}:00:00Z", score_value=float(i)) for i in range(30)]
    write_parquet(rows, "records", tmp_path, batch_rows=7)
    found = duckdb.sql(
        f"SELECT day, count(*), sum(score_value), min(timestamp) FROM read_parquet("
        f"'{tmp_path}/*/*.parquet', hive_partitioning = true) GROUP BY day ORDER BY day"
    ).fetchall()
    assert [(str(day), n, total) for day, n, total, _ in found] == [
        ("2026-11-01", 10, float(sum(range(0, 30, 3)))),
        ("2026-11-02", 10, float(sum(range(1, 30, 3)))),
        ("2026-11-03", 10, float(sum(range(2, 30, 3)))),
    ]
    assert found[0][3] == datetime(2026, 11, 1, 0, 0, tzinfo=timezone.utc)


# the verdict columns that flatten the event, read out of the JSONL export's nesting
FLATTENED = {
    "judge_model": ("judge", "model"),
    "judge_prompt": ("judge", "prompt"),
    "judge_version": ("judge", "version"),
    "verdict_kind": ("verdict", "kind"),
    "preference": ("verdict", "preference"),
    "p_first": ("verdict", "p_first"),
    "scores": ("verdict", "scores"),
    "failed_reason": ("verdict", "reason"),
    "first_model": ("candidates", 0, "model"),
    "second_model": ("candidates", 1, "model"),
    "first_length_words": ("candidates", 0, "length_words"),
    "second_length_words": ("candidates", 1, "length_words"),
}


def expected_value(original: dict, name: str):
    value = original
    for step in FLATTENED.get(name, (name,)):
        if isinstance(value, dict):
            value = value.get(step)
        elif isinstance(value, list) and isinstance(step, int):
            value = value[step] if len(value) > step else None
        else:
            return None
    return value


@pytest.mark.postgres
def test_the_parquet_export_holds_what_the_jsonl_export_holds(postgres_url, tmp_path):
    sessions, responses = tmp_path / "sessions.jsonl", tmp_path / "responses.jsonl"
    sessions.write_text("".join(json.dumps(s) + "\n" for s in generate_sessions(6, seed=95)))
    responses.write_text("".join(json.dumps(r) + "\n" for r in generate_responses(8, seed=96)))
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps(v) + "\n" for v in generate_verdicts(5, seed=97)))
    assert run_cli("setup", "--store", postgres_url).returncode == 0
    for events in (sessions, responses):
        done = run_cli("audit", str(events), "--store", postgres_url)
        assert done.returncode == 0, done.stderr
    done = run_cli("import", str(verdicts), "--store", postgres_url, "--source", "events")
    assert done.returncode == 0, done.stderr
    for kind, key, expected in (
        ("records", "session_id", 6 * 25),
        ("interactions", "audit_id", 8),
        ("verdicts", "verdict_id", len(verdicts.read_text().splitlines())),
    ):
        folder, jsonl = tmp_path / kind, tmp_path / f"{kind}.jsonl"
        parquet = run_cli("export", "--store", postgres_url, "--kind", kind, "--format", "parquet", "-o", str(folder))
        assert parquet.returncode == 0, parquet.stderr
        assert parquet.stderr.startswith(f"exported {expected} {kind} to ") and parquet.stderr.count("\n") == 1
        files = len(list(folder.glob("day=*/*.parquet")))  # "1 Parquet file (3.1 KB)", never "1 Parquet files (0.0 MB)"
        assert (
            f" to {files} Parquet file{'' if files == 1 else 's'} (" in parquet.stderr
            and " 0.0 MB" not in parquet.stderr
        )
        assert run_cli("export", "--store", postgres_url, "--kind", kind, "-o", str(jsonl)).returncode == 0
        from_parquet = read_back(folder)
        from_jsonl = [json.loads(line) for line in jsonl.read_text().splitlines()]
        assert len(from_parquet) == len(from_jsonl) == expected
        columns = {c.name: c for c in TABLES[kind]}
        by_key = {}
        for row in from_jsonl:
            by_key.setdefault(row[key], []).append(row)
        for row in from_parquet:
            original = (
                by_key[row[key]].pop(0)
                if kind != "records"
                else next(
                    r
                    for r in by_key[row[key]]
                    if (r["reviewer_id"], r["model_id"]) == (row["reviewer_id"], row["model_id"])
                )
            )
            for name in columns:
                want, got = expected_value(original, name), row[name]
                if name == "timestamp":
                    assert got == datetime.fromisoformat(want.replace("Z", "+00:00")), (kind, name)
                elif columns[name].doc.endswith("(JSON text)"):
                    assert (None if got is None else json.loads(got)) == want, (kind, name)
                else:
                    assert got == want or (isinstance(want, float) and got == pytest.approx(want)), (
                        kind,
                        name,
                        got,
                        want,
                    )
        for path in folder.glob("day=*/*.parquet"):  # each row in its UTC day's folder
            moments = pq.read_table(path).column("timestamp").to_pylist()
            assert {m.astimezone(timezone.utc).date() for m in moments} == {date.fromisoformat(path.parent.name[4:])}
    refused = run_cli("export", "--store", postgres_url, "--format", "parquet", "-o", str(tmp_path / "records"))
    assert refused.returncode == 2 and "must be a new or empty folder" in refused.stderr
    no_folder = run_cli("export", "--store", postgres_url, "--format", "parquet")
    assert no_folder.returncode == 2 and "--output DIR" in no_folder.stderr


@pytest.mark.postgres
def test_a_row_that_cannot_be_exported_is_named_and_leaves_no_folder(postgres_url, tmp_path):
    """A verdict stored before intake bounded its numbers (1e19 comes back from jsonb as an
    integer no int64 holds) stops the export with its name; nothing half written stays."""
    import psycopg

    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps(v) + "\n" for v in generate_verdicts(3, seed=98)))
    assert run_cli("setup", "--store", postgres_url).returncode == 0
    assert run_cli("import", str(verdicts), "--store", postgres_url, "--source", "events").returncode == 0
    with psycopg.connect(postgres_url) as connection:
        tenant, verdict_id = connection.execute(
            'UPDATE judge_verdicts SET event = jsonb_set(event, \'{verdict}\', \'{"kind": "scores", "scores": '
            "[1e19, 0]}') WHERE verdict_id = (SELECT max(verdict_id) FROM judge_verdicts) "
            "RETURNING tenant_id, verdict_id"
        ).fetchone()
    folder = tmp_path / "out" / "verdicts"
    stopped = run_cli("export", "--store", postgres_url, "--kind", "verdicts", "--format", "parquet", "-o", str(folder))
    assert stopped.returncode == 1 and "Traceback" not in stopped.stderr
    [line] = stopped.stderr.splitlines()
    assert f"verdicts row (tenant_id {tenant!r}, verdict_id {verdict_id!r}) cannot be exported: its scores" in line
    assert "10000000000000000000" in line
    assert not folder.exists() and list((tmp_path / "out").iterdir()) == []  # no folder, no partial one beside it
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        run_cli(
            "export", "--store", postgres_url, "--kind", "verdicts", "--format", "parquet", "-o", str(empty)
        ).returncode
        == 1
    )
    assert empty.is_dir() and list(empty.iterdir()) == []
    with psycopg.connect(postgres_url) as connection:  # past 64 bits: no JSON writer of ours takes it either
        connection.execute(
            "UPDATE judge_verdicts SET event = jsonb_set(event, '{verdict,scores,0}', '1e20') WHERE verdict_id = %s",
            (verdict_id,),
        )
    jsonl = run_cli("export", "--store", postgres_url, "--kind", "verdicts", "-o", str(tmp_path / "v.jsonl"))
    assert jsonl.returncode == 1 and f"verdict_id {verdict_id!r}) cannot be exported" in jsonl.stderr
    assert len(jsonl.stderr.splitlines()) == 1
    with psycopg.connect(postgres_url) as connection:
        connection.execute("DELETE FROM judge_verdicts WHERE verdict_id = %s", (verdict_id,))
    done = run_cli("export", "--store", postgres_url, "--kind", "verdicts", "--format", "parquet", "-o", str(folder))
    assert done.returncode == 0, done.stderr
    assert len(read_back(folder)) == len(verdicts.read_text().splitlines()) - 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["verdicts"]

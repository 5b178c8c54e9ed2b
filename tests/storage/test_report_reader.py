"""The streaming window reader: which sessions it keeps, repeats, torn lines, the reference's files."""

from __future__ import annotations

import orjson
import pytest
from llm_council.bias_persistence import BiasMetricRecord, append_bias_records

from bias_audit.analysis.window import DAY_MS, window_bounds
from bias_audit.storage.report_reader import InputError, WindowReader, expand_inputs
from tests.simulate import Corpus, digest_records


def write(path, digests, *, torn: bool = False) -> None:
    with open(path, "ab") as handle:
        for digest in digests:
            handle.write(b"".join(orjson.dumps(r) + b"\n" for r in digest_records(digest)))
        if torn:
            handle.write(b'{"schema_version": "1.2.0", "session_id": "torn')


def ids(digests) -> list[str]:
    return [d.session_id for d in digests]


def _columns(cells) -> dict:
    """Everything a window holds, as plain values (NaN as None, so equal windows compare equal)."""
    out = {}
    for name, value in vars(cells).items():
        if hasattr(value, "tolist"):
            value = [None if v != v else v for v in value.tolist()]
        out[name] = list(value) if isinstance(value, (list, tuple)) else value
    return out


def test_keeps_the_newest_sessions_across_worker_files_and_the_window_before(tmp_path):
    digests = Corpus(sessions=50, seed=1).digests()
    # two workers' files, each in its own processing order
    write(tmp_path / "records-w1.jsonl", digests[0::2])
    write(tmp_path / "records-w2.jsonl", digests[1::2])
    reader = WindowReader(sessions=10, days=None)
    reader.read(expand_inputs([str(tmp_path)]))
    [window] = reader.windows()
    assert window.current_ids == ids(digests[40:])
    assert list(window.cells.session_ids[: window.previous_sessions]) == ids(digests[30:40])
    assert reader.stats.sessions == 50 and reader.stats.lines == 50 * 25
    assert reader.stats.records == 20 * 25  # only the kept sessions are parsed in full


def test_days_cut_the_window_at_the_newest_session(tmp_path):
    digests = Corpus(sessions=30, seed=2).digests()  # ten minutes apart
    write(tmp_path / "r.jsonl", digests)
    reader = WindowReader(sessions=100, days=(95 * 60) / 86_400)  # 95 minutes: the newest 10
    reader.read([tmp_path / "r.jsonl"])
    [window] = reader.windows()
    assert window.current_ids == ids(digests[20:])


def test_a_repeated_batch_counts_once_and_a_torn_line_is_skipped(tmp_path):
    digests = Corpus(sessions=12, seed=3).digests()
    write(tmp_path / "a.jsonl", digests)
    write(tmp_path / "b.jsonl", digests[5:8], torn=True)  # a redelivered batch, then a crash
    reader = WindowReader(sessions=100, days=None)
    reader.read(expand_inputs([str(tmp_path)]))
    [window] = reader.windows()
    assert window.current_ids == ids(digests)
    assert reader.stats.duplicate_sessions == 3
    assert reader.stats.skipped_lines == 1 and "b.jsonl:" in reader.stats.skipped_examples[0]


def test_tenants_are_windowed_apart_and_one_can_be_chosen(tmp_path):
    write(tmp_path / "r.jsonl", Corpus(sessions=15, seed=4, tenant="acme").digests())
    write(tmp_path / "r.jsonl", Corpus(sessions=12, seed=5, tenant="globex").digests())
    reader = WindowReader(sessions=100, days=None)
    reader.read([tmp_path / "r.jsonl"])
    assert [(w.tenant_id, len(w.current_ids)) for w in reader.windows()] == [("acme", 15), ("globex", 12)]
    only = WindowReader(sessions=100, days=None, tenant="globex")
    only.read([tmp_path / "r.jsonl"])
    assert [w.tenant_id for w in only.windows()] == ["globex"]


def test_reads_llm_council_core_records(tmp_path):
    store = tmp_path / "bias_metrics.jsonl"
    records = []
    for session in range(3):
        for reviewer in ("m1", "m2", "m3"):
            for position, model in enumerate(("m1", "m2", "m3")):
                records.append(
                    BiasMetricRecord(
                        session_id=f"s{session}",
                        timestamp=f"2026-11-0{session + 1}T10:00:00",  # naive, as it writes
                        reviewer_id=reviewer,
                        model_id=model,
                        position=position,
                        response_length_chars=100 * (position + 1),
                        score_value=5.0 + position,
                        score_scale="1-10",
                    )
                )
    append_bias_records(records, store_path=store)
    reader = WindowReader(sessions=100, days=30)
    reader.read([store])
    [window] = reader.windows()
    assert window.tenant_id == "default" and len(window.current_ids) == 3
    assert window.cells.length_units == {"chars"}
    cells = window.cells
    first = cells.session == 0
    assert sorted(set(cells.length[first].tolist())) == [100.0, 200.0, 300.0]
    # reviewer == model is a self-review though the reference does not store the flag
    assert int(cells.own[first].sum()) == 3
    assert (cells.position[first] >= 0).all()  # schema 1.2.0: display positions


def test_missing_inputs_are_named(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([str(tmp_path / "nope.jsonl")])
    with pytest.raises(InputError, match="no file matches"):
        expand_inputs([str(tmp_path / "*.jsonl")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .jsonl files"):
        expand_inputs([str(tmp_path / "empty")])


@pytest.mark.parametrize(
    ("sessions", "days", "expected"),
    [
        (None, None, (0, 0)),  # everything, nothing before
        (3, None, (0, 3)),  # the newest 3 (days 3-5), the 3 before them
        (2, None, (2, 4)),  # the newest 2, the 2 before them
        (None, 2.5, (0, 3)),  # days 3..5 of 0..5 (within 2.5 days of day 5), all older ones before
        (10, 2.5, (0, 3)),
        (1, 2.5, (4, 5)),
    ],
)
def test_window_bounds(sessions, days, expected):
    times = [day * DAY_MS for day in range(6)]  # one session a day, days 0..5
    assert window_bounds(times, times[-1], sessions, days) == expected


def test_a_record_that_does_not_fit_is_skipped_with_its_reason_and_its_session_kept(tmp_path):
    digests = Corpus(sessions=3, seed=9).digests()
    lines = [orjson.dumps(r) for d in digests for r in digest_records(d)]
    bad = orjson.loads(lines[30])  # the second session's sixth record
    bad["score_value"] = "high"
    lines[30] = orjson.dumps(bad)
    (tmp_path / "r.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    reader = WindowReader(sessions=100, days=None)
    reader.read([tmp_path / "r.jsonl"])
    [window] = reader.windows()
    assert window.current_ids == ids(digests)
    assert reader.stats.records == 3 * 25 - 1 and reader.stats.skipped_lines == 1
    assert (
        "score_value" in reader.stats.skipped_examples[0] and digests[1].session_id in reader.stats.skipped_examples[0]
    )
    assert int((window.cells.session == 1).sum()) == len(digests[1].cells) - 1


def test_progress_adds_up_to_every_byte_of_every_file(tmp_path):
    digests = Corpus(sessions=3000, seed=4).digests()  # 75,000 lines: progress is reported along the way too
    write(tmp_path / "a.jsonl", digests[:2900])
    write(tmp_path / "b.jsonl", digests[2900:])
    steps: list[int] = []
    WindowReader(sessions=10, days=None).read(expand_inputs([str(tmp_path)]), steps.append)
    assert len(steps) > 2 and all(step > 0 for step in steps)
    assert sum(steps) == (tmp_path / "a.jsonl").stat().st_size + (tmp_path / "b.jsonl").stat().st_size


@pytest.mark.parametrize("block", [97, 700, 4096])  # shorter than a line, about a line, several lines
def test_small_blocks_and_dropped_pages_read_the_same_windows(tmp_path, monkeypatch, block):
    """Sessions, lines and a torn last line cut anywhere by the block boundaries: the same
    windows, counts and skipped line (with its line number) as one large block."""
    import bias_audit.storage.report_reader as reader_module

    digests = Corpus(sessions=40, seed=12).digests()
    write(tmp_path / "a.jsonl", digests[:30])
    with open(tmp_path / "a.jsonl", "ab") as handle:
        handle.write(b"\n  \n")  # blank lines between sessions
    write(tmp_path / "a.jsonl", digests[30:], torn=True)  # ends without a newline

    def read() -> tuple[list, list, WindowReader]:
        reader = WindowReader(sessions=15, days=None)
        reader.read([tmp_path / "a.jsonl"])
        return [_columns(w.cells) for w in reader.windows()], reader.stats.skipped_examples, reader

    expected_windows, expected_skips, expected = read()
    monkeypatch.setattr(reader_module, "READ_BLOCK", block)
    monkeypatch.setattr(reader_module, "DROP_CACHE_ABOVE", 0)  # and the pages dropped as read
    windows, skips, small = read()
    assert windows == expected_windows and len(windows[0]["session_ids"]) == 30
    assert small.stats.lines == expected.stats.lines == 40 * 25 + 3
    assert skips == expected_skips and len(skips) == 1
    assert skips[0].startswith(f"{tmp_path / 'a.jsonl'}:{40 * 25 + 3}: ")  # the torn line: 30 + 10 sessions, 2 blank

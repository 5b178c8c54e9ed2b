"""The streaming window reader: which sessions it keeps, repeats, torn lines, the reference's files."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson
import pytest
from llm_council.bias_persistence import BiasMetricRecord, append_bias_records

from bias_audit.analysis.window import DAY_MS, window_bounds
from bias_audit.storage.report_reader import InputError, WindowReader, _gather, expand_inputs
from bias_audit.storage.spill import Spill
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
    """Everything a window holds, as plain values (NaN as None, so equal windows compare equal),
    wherever its columns live."""
    out = {}
    for name, value in vars(cells).items():
        if name == "space":
            continue
        if hasattr(value, "tolist"):
            value = [None if v != v else v for v in value.tolist()]
        out[name] = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else value
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
    assert sorted(set(cells.length_of(first).tolist())) == [100.0, 200.0, 300.0]
    assert cells.session.dtype == np.int32  # a window's cells long: 32 bits while the sessions fit
    assert {cells.reviewer.dtype, cells.model.dtype, cells.position.dtype} == {np.dtype(np.int8)}  # a byte
    # reviewer == model is a self-review though the reference does not store the flag
    assert int(cells.own[first].sum()) == 3
    assert (cells.position[first] >= 0).all()  # schema 1.2.0: display positions
    # it stores no similarity, fingerprint or correctness: each column is one value, in no memory
    for column, unknown in ((cells.similarity, None), (cells.fingerprint, -1), (cells.correct, -1)):
        assert column.strides == (0,) and len(column) == 27
        assert [None if v != v else v for v in column.tolist()] == [unknown] * 27


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


@pytest.mark.parametrize("batch_rows", [1, 24, 25, 26, 4096])  # a record, about a session, many sessions
def test_batches_of_any_size_read_the_same_windows(tmp_path, batch_rows):
    """Sessions cut anywhere by the engine's batches, blank lines and a torn last line: the same
    windows, counts and skipped line (with its line number) as one large batch."""
    digests = Corpus(sessions=40, seed=12).digests()
    write(tmp_path / "a.jsonl", digests[:30])
    with open(tmp_path / "a.jsonl", "ab") as handle:
        handle.write(b"\n  \n")  # blank lines between sessions
    write(tmp_path / "a.jsonl", digests[30:], torn=True)  # ends without a newline

    def read(rows: int) -> tuple[list, list, WindowReader]:
        reader = WindowReader(sessions=15, days=None, batch_rows=rows)
        reader.read([tmp_path / "a.jsonl"])
        return [_columns(w.cells) for w in reader.windows()], reader.stats.skipped_examples, reader

    expected_windows, expected_skips, expected = read(1 << 16)
    windows, skips, small = read(batch_rows)
    assert windows == expected_windows and len(windows[0]["session_ids"]) == 30
    assert small.stats.lines == expected.stats.lines == 40 * 25 + 1  # the blank lines are not counted
    assert skips == expected_skips and len(skips) == 1
    assert skips[0].startswith(f"{tmp_path / 'a.jsonl'}:{40 * 25 + 3}: ")  # the torn line: 30 + 10 sessions, 2 blank


def test_evicted_sessions_are_dropped_and_the_windows_stay_the_same(tmp_path):
    """A small window over many sessions: dropping the evicted sessions' cells as the read goes
    keeps what the reader holds near the window, and changes no window."""
    acme = Corpus(sessions=200, seed=31, tenant="acme").digests()
    beta = Corpus(sessions=60, seed=32, tenant="beta").digests()
    write(tmp_path / "r.jsonl", [*acme[:100], *beta, *acme[100:]])
    write(tmp_path / "r.jsonl", acme[150:160] + acme[190:195])  # redelivered: evicted ones, then held ones

    def read(compact_after: int) -> tuple[list, WindowReader]:
        reader = WindowReader(sessions=8, days=None, batch_rows=50, compact_after=compact_after)
        reader.read([tmp_path / "r.jsonl"])
        return [_columns(w.cells) for w in reader.windows()], reader

    kept, never = read(1 << 20)
    dropped, often = read(4)
    assert dropped == kept and [w["session_ids"] for w in kept] == [ids(acme[184:]), ids(beta[44:])]
    assert often.stats == never.stats and never.stats.duplicate_sessions == 5
    assert never._runs.size > 200 and often._runs.size <= 2 * 32 + 2  # twice the held runs, and a batch's


@pytest.mark.parametrize("batch_rows", [25, 1 << 16])  # a session a batch, or the file in one
@pytest.mark.parametrize("compact_after", [1, 1 << 20])  # compacted between a session and its copy, or never
def test_a_redelivered_session_counts_once_if_held_and_is_dropped_if_evicted(tmp_path, batch_rows, compact_after):
    """The held sessions are found again by key whether their first copy is in the same batch or
    an earlier one, before or after a compaction renumbered it; an evicted session's copy is
    older than the window, not a duplicate."""
    digests = Corpus(sessions=20, seed=33).digests()
    write(tmp_path / "once.jsonl", digests)
    write(tmp_path / "twice.jsonl", digests)
    write(tmp_path / "twice.jsonl", digests[:4] + digests[16:])  # evicted ones, then held ones

    def read(name: str) -> tuple[list, WindowReader]:
        reader = WindowReader(sessions=2, days=None, batch_rows=batch_rows, compact_after=compact_after)
        reader.read([tmp_path / name])
        return [_columns(w.cells) for w in reader.windows()], reader

    (once, _), (twice, reader) = read("once.jsonl"), read("twice.jsonl")
    assert twice == once and once[0]["session_ids"] == ids(digests[16:])
    assert reader.stats.duplicate_sessions == 4


def test_a_bad_line_past_the_engines_first_buffers_is_skipped_and_the_rest_read(tmp_path):
    """A file larger than the engine's first read: it has handed over batches when it meets the
    bad lines, and the reader goes on from there line by line. The windows equal those of the
    same file without the bad lines; each skip names its line."""
    digests = Corpus(sessions=40, seed=14).digests()
    block = b"".join(orjson.dumps(r) + b"\n" for d in digests for r in digest_records(d))
    copies = 120  # ~44 MB: past the engine's 32 MiB buffers
    lines = [
        line
        for copy in range(copies)
        for line in block.replace(b'"session_id":"', b'"session_id":"c%d-' % copy).splitlines(keepends=True)
    ]
    bad_at = len(lines) - 500  # 20 sessions before the end
    bad = orjson.loads(lines[bad_at])
    bad["score_value"] = "high"
    clean = b"".join(lines)
    (tmp_path / "clean.jsonl").write_bytes(b"".join(lines[:bad_at] + lines[bad_at + 1 :]))
    lines[bad_at] = orjson.dumps(bad) + b"\n"
    (tmp_path / "bad.jsonl").write_bytes(b"".join(lines) + b'{"session_id": "torn')
    assert len(clean) > 40 << 20

    def read(name: str) -> tuple[list, WindowReader]:
        reader = WindowReader(sessions=None, days=None)
        reader.read([tmp_path / name])
        return [_columns(w.cells) for w in reader.windows()], reader

    expected, clean_reader = read("clean.jsonl")
    got, reader = read("bad.jsonl")
    assert got == expected and len(got[0]["session_ids"]) == 40 * copies
    assert reader.stats.skipped_lines == 2 and reader.stats.records == clean_reader.stats.records
    first, last = reader.stats.skipped_examples
    assert first.startswith(f"{tmp_path / 'bad.jsonl'}:{bad_at + 1}: session ") and "score_value" in first
    assert last.startswith(f"{tmp_path / 'bad.jsonl'}:{len(lines) + 1}: ")


def _stored(digest, rng) -> list[dict]:
    """The digest's records with what the council biases read (a fingerprint, correctness and a
    similarity for some answers), some sessions with characters only, some records repeated."""
    records = digest_records(digest)
    fingerprints = {m: (None if rng.random() < 0.3 else f"fp{rng.randrange(40)}") for m in digest.models}
    correct = {m: rng.choice([None, True, False]) for m in digest.models}
    chars_only = rng.random() < 0.3
    for record in records:
        record["response_fingerprint"] = fingerprints[record["model_id"]]
        record["response_correct"] = correct[record["model_id"]]
        record["style_similarity"] = None if rng.random() < 0.5 else round(rng.random(), 3)
        if chars_only:
            record["response_length_words"] = None
    if rng.random() < 0.2:  # a (reviewer, model) scored twice: the first counts
        records.append({**records[0], "score_value": 2.5})
    return records


@pytest.mark.parametrize("batch_rows", [7, 1 << 16])
def test_the_window_equals_the_one_built_from_each_sessions_digest(tmp_path, batch_rows):
    """The oracle: each session's records decoded one by one (msgspec) and digested alone, the
    digests assembled by WindowCellsBuilder, against the engine's batches reduced column-wise."""
    import random

    import msgspec

    from bias_audit.analysis.digest import StoredCell, digest_from_records
    from bias_audit.analysis.window_cells import window_cells

    rng = random.Random(3)
    acme = Corpus(sessions=120, models=4, seed=21, tenant="acme").digests()
    beta = Corpus(sessions=30, models=3, seed=22, tenant="beta").digests()
    stored = {d.session_id: _stored(d, rng) for d in [*acme, *beta]}
    for number, digest in enumerate(acme):  # the council's config changes twice
        for record in stored[digest.session_id]:
            record["council_config_version"] = "v1" if number < 50 else "v2" if number < 90 else "v1"
    with open(tmp_path / "r.jsonl", "wb") as out:
        for digest in [*acme[:60], *beta, *acme[60:]]:
            out.write(b"".join(orjson.dumps(r) + b"\n" for r in stored[digest.session_id]))
    reader = WindowReader(sessions=None, days=None, batch_rows=batch_rows)
    reader.read([tmp_path / "r.jsonl"])
    got = {w.tenant_id: _columns(w.cells) for w in reader.windows()}
    decode = msgspec.json.Decoder(StoredCell)
    for tenant, digests in (("acme", acme), ("beta", beta)):
        oracle = window_cells(
            [digest_from_records([decode.decode(orjson.dumps(r)) for r in stored[d.session_id]]) for d in digests]
        )
        assert got[tenant] == _columns(oracle)
    assert reader.stats.records == sum(len(records) for records in stored.values())
    assert (
        got["acme"]["change_traces"]
        and got["acme"]["fingerprints"]
        and set(got["acme"]["units"])
        == {
            "words",
            "chars",
        }
    )


def test_names_positions_and_biases_that_come_late_widen_the_columns_and_keep_every_value(tmp_path):
    """The reader's cell columns start a byte wide and hold no similarity, fingerprint or
    correctness until a record carries one: names past 127 and positions past 127 (from the 31st
    session) and those three fields (from the 41st) arrive after the first batches, and the
    window still equals the one built from each session's digest."""
    import dataclasses
    import random

    import msgspec

    from bias_audit.analysis.digest import StoredCell, digest_from_records
    from bias_audit.analysis.window_cells import window_cells

    rng = random.Random(5)
    digests = []
    for number, digest in enumerate(Corpus(sessions=60, models=4, seed=23).digests()):
        renamed = tuple(f"s{number}-{name}" for name in digest.models)  # 240 names in all
        shifted = tuple(p + 200 if p >= 0 and number >= 30 else p for p in digest.cell_position)
        digests.append(dataclasses.replace(digest, models=renamed, reviewers=renamed, cell_position=shifted))
    stored = {d.session_id: _stored(d, rng) for d in digests}
    for digest in digests[:40]:
        for record in stored[digest.session_id]:
            record.update(response_fingerprint=None, response_correct=None, style_similarity=None)
    with open(tmp_path / "r.jsonl", "wb") as out:
        for digest in digests:
            out.write(b"".join(orjson.dumps(r) + b"\n" for r in stored[digest.session_id]))
    reader = WindowReader(sessions=None, days=None, batch_rows=7)
    reader.read([tmp_path / "r.jsonl"])
    [window] = reader.windows()
    decode = msgspec.json.Decoder(StoredCell)
    oracle = window_cells(
        [digest_from_records([decode.decode(orjson.dumps(r)) for r in stored[d.session_id]]) for d in digests]
    )
    assert _columns(window.cells) == _columns(oracle)
    cells = window.cells
    assert len(cells.models) == 240 and int(cells.position.max()) > 200
    assert cells.reviewer.dtype == np.int16 and cells.position.dtype == np.int16
    assert np.isnan(cells.similarity[cells.session < 40]).all() and not np.isnan(cells.similarity).all()
    assert (cells.fingerprint[cells.session < 40] == -1).all() and (cells.fingerprint >= 0).any()


@pytest.mark.parametrize("at_once", [1, 3, 1 << 16])
def test_ranges_out_of_order_are_gathered_one_after_another_a_few_at_a_time(tmp_path, at_once):
    column = np.arange(100, dtype=np.int8) * 2
    starts = np.array([40, 0, 90, 7, 7, 60])
    stops = np.array([45, 3, 100, 12, 7, 61])  # one range empty
    expected = np.concatenate([column[a:b] for a, b in zip(starts.tolist(), stops.tolist())])
    found = _gather(column, starts, stops, Spill(str(tmp_path)), at_once)
    assert found.dtype == column.dtype and found.tolist() == expected.tolist()


@pytest.mark.parametrize("batch_rows", [997, 1 << 16])  # past MOST_SCORES mid-read, or in the first batch
def test_a_window_of_more_scores_than_can_be_numbered_keeps_each_cells_score(tmp_path, batch_rows):
    """Past MOST_SCORES distinct scores a window holds each cell's float: the scores the reader
    numbered before it read too many are turned back into the same floats the digests' window holds."""
    import msgspec

    from bias_audit.analysis.digest import StoredCell, digest_from_records
    from bias_audit.analysis.window_cells import MOST_SCORES, window_cells

    digests = Corpus(sessions=MOST_SCORES // 20 + 50, models=5, seed=31).digests()
    stored = {d.session_id: digest_records(d) for d in digests}
    scored = 0
    for records in stored.values():
        for record in records:
            # each record's own score, in no order (7919 is prime to 2 * MOST_SCORES)
            record["score_value"] = 1 + 9 * (scored * 7919 % (2 * MOST_SCORES)) / (2 * MOST_SCORES)
            scored += 1
    with open(tmp_path / "r.jsonl", "wb") as out:
        for digest in digests:
            out.write(b"".join(orjson.dumps(r) + b"\n" for r in stored[digest.session_id]))
    reader = WindowReader(sessions=None, days=None, batch_rows=batch_rows)
    reader.read([tmp_path / "r.jsonl"])
    [window] = reader.windows()
    decode = msgspec.json.Decoder(StoredCell)
    oracle = window_cells(
        [digest_from_records([decode.decode(orjson.dumps(r)) for r in stored[d.session_id]]) for d in digests]
    )
    assert window.cells.score_code is None and oracle.score_code is None
    assert _columns(window.cells) == _columns(oracle)

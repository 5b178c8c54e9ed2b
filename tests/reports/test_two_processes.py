"""TwoProcesses: the report's halves at once in a forked child, and nothing lost when it fails."""

from __future__ import annotations

import os
import time

import orjson
import pytest

from bias_audit.analysis.split import in_turn
from bias_audit.reports.build import build_report
from bias_audit.storage.report_reader import WindowReader
from bias_audit.two_processes import TwoProcesses
from tests.simulate import Corpus, digest_records

pytestmark = pytest.mark.skipif(not TwoProcesses().enabled, reason="needs fork and two usable CPUs")


def forking() -> TwoProcesses:
    return TwoProcesses(min_size=0)


def test_there_runs_in_a_child_and_its_result_comes_back():
    parent = os.getpid()
    here, there = forking()(lambda: ("here", os.getpid()), lambda: ("there", os.getpid(), list(range(100_000))), 1)
    assert here == ("here", parent)
    assert there[0] == "there" and there[1] != parent and there[2] == list(range(100_000))  # ~0.5 MB through the pipe


def test_small_work_stays_in_this_process():
    parent = os.getpid()
    split = TwoProcesses(min_size=10)
    assert split(os.getpid, os.getpid, 9) == (parent, parent)
    assert (split.divides(9), split.divides(10)) == (False, True)  # what the reader asks before halving
    assert in_turn.divides(10**9) is False and in_turn(os.getpid, lambda: 2) == (parent, 2)


def test_a_child_that_dies_leaves_its_half_to_this_process():
    parent = os.getpid()

    def there():
        if os.getpid() != parent:
            os._exit(3)  # killed before sending anything
        return "computed here"

    assert forking()(lambda: 1, there, 1) == (1, "computed here")


def test_a_result_that_does_not_pickle_is_computed_here():
    parent = os.getpid()
    result = forking()(lambda: 1, lambda: (lambda: os.getpid()), 1)[1]  # a lambda does not pickle
    assert result() == parent


def test_a_failing_child_leaves_the_error_to_this_process():
    def there():
        raise ValueError("bad window")

    with pytest.raises(ValueError, match="bad window"):
        forking()(lambda: 1, there, 1)


def test_when_here_fails_the_child_is_stopped_and_collected(tmp_path):
    mark = tmp_path / "child"

    def there():
        mark.write_text(str(os.getpid()))
        time.sleep(60)

    def here():
        while not mark.exists() or not mark.read_text():
            time.sleep(0.01)
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        forking()(here, there, 1)
    assert time.monotonic() - started < 30
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left a zombie
        os.kill(int(mark.read_text()), 0)


def test_an_interrupt_while_waiting_stops_and_collects_the_child(tmp_path):
    import signal

    mark = tmp_path / "child"

    def there():
        mark.write_text(str(os.getpid()))
        time.sleep(60)

    def interrupt(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)  # while this process waits for the child's result
        with pytest.raises(KeyboardInterrupt):
            forking()(lambda: None, there, 1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ProcessLookupError):
        os.kill(int(mark.read_text()), 0)


def test_children_that_sent_their_result_are_collected():
    split = forking()
    children: set[int] = set()
    for _ in range(3):  # a call collects the children that finished exiting since the last
        assert split(lambda: 1, lambda: 2, 1) == (1, 2)
        children.update(split._exiting)
    assert len(children) == 3  # each result was read without waiting for its child to exit
    deadline = time.monotonic() + 10
    while split._exiting and time.monotonic() < deadline:
        split.reap()
        time.sleep(0.01)
    assert split._exiting == []
    for pid in children:  # each was waited for: no zombie is left to collect
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_the_report_in_two_processes_is_the_report_in_turn(tmp_path):
    """Every number, count and skipped line's reason the same, in the same order."""
    digests = Corpus(sessions=60, seed=3).digests()
    lines = [orjson.dumps(r) for d in digests for r in digest_records(d)]
    for at in (130, 1010):  # a bad record in either half
        bad = orjson.loads(lines[at])
        bad["score_value"] = "high"
        lines[at] = orjson.dumps(bad)
    (tmp_path / "r.jsonl").write_bytes(b"".join(line + b"\n" for line in lines) + b"not json\n")

    def report(split):
        reader = WindowReader(sessions=40, days=None, split=split)
        reader.read([tmp_path / "r.jsonl"])
        document = build_report(reader.windows(), reader.stats, sources=["r"], sessions=40, days=None, split=split)
        return document.model_dump(exclude={"generated_at"})

    expected, forked = report(in_turn), report(forking())
    assert forked == expected
    assert expected["inputs"]["skipped_lines"] == 3 and expected["inputs"]["records"] == 60 * 25 - 2
    first, second, third = expected["inputs"]["skipped_examples"]  # the read's, then each half's in order
    assert first.startswith(f"{tmp_path / 'r.jsonl'}:1501: JSON is malformed")
    assert digests[5].session_id in second and digests[40].session_id in third
    assert expected["tenants"][0]["sessions"] == 40

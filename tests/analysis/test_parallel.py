import multiprocessing
import threading

import numpy as np
import pytest

from bias_audit.analysis.parallel import cores, each_piece

PIECES_TABLE = [
    ([], []),
    ([3], [9]),
    ([1, 2], [1, 4]),
    (list(range(17)), [n * n for n in range(17)]),
]


@pytest.mark.parametrize("pieces, squares", PIECES_TABLE)
def test_each_piece_returns_the_results_in_the_pieces_order(pieces, squares):
    assert each_piece(lambda n: n * n, pieces) == squares


def test_the_pieces_run_at_once_on_two_threads_where_there_are_two_cores():
    if cores() < 2:  # one core: every piece runs in the caller's thread
        assert {each for each in each_piece(lambda _: threading.get_ident(), range(4))} == {threading.get_ident()}
        return
    # each piece waits for another to arrive: only two threads running pieces together pass it
    meeting = threading.Barrier(2, timeout=10)
    assert len(set(each_piece(lambda _: (meeting.wait(), threading.get_ident())[1], range(2)))) == 2


def test_a_piece_writes_its_own_part_of_an_output_and_every_part_is_written():
    out = np.zeros(1000)

    def fill(start: int) -> None:
        out[start : start + 100] = np.arange(start, start + 100)

    each_piece(fill, range(0, 1000, 100))
    assert np.array_equal(out, np.arange(1000))


def test_pieces_of_a_piece_run_in_its_thread_and_do_not_wait_on_the_pool():
    seen: list[tuple[int, list[int]]] = []

    def outer(n: int) -> int:
        inner = each_piece(lambda _: threading.get_ident(), range(3))
        seen.append((threading.get_ident(), inner))
        return n

    result: list[list[int]] = []
    caller = threading.Thread(target=lambda: result.append(each_piece(outer, range(6))))
    caller.start()
    caller.join(timeout=30)
    assert not caller.is_alive() and result == [list(range(6))]
    assert all(inner == [thread] * 3 for thread, inner in seen)


def test_a_failing_piece_fails_the_call_with_its_own_error():
    def work(n: int) -> int:
        if n == 5:
            raise ValueError("piece 5")
        return n

    with pytest.raises(ValueError, match="piece 5"):
        each_piece(work, range(12))
    assert each_piece(work, range(5)) == list(range(5))  # the pool still serves


def _child_sums(out) -> None:
    out.put(sum(each_piece(lambda n: n, range(10))))


def test_a_forked_child_gets_its_own_threads():
    each_piece(lambda n: n, range(4))  # the parent's pool exists before the fork
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_child_sums, args=(out,))
    child.start()
    child.join(timeout=30)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0 and out.get(timeout=5) == 45

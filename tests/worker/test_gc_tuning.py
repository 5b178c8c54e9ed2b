import gc
import logging

from bias_audit import gc_tuning
from bias_audit.gc_tuning import collector_paused


def test_tune_gc_freezes_the_startup_heap_and_raises_thresholds():
    before = gc.get_threshold()
    try:
        gc_tuning.tune_gc()
        assert gc.get_freeze_count() > 1000  # the imported modules' objects
        assert gc.get_threshold() == (gc_tuning.YOUNG_THRESHOLD, gc_tuning.MIDDLE_EVERY, gc_tuning.FULL_EVERY)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_overlapping_batches_keep_the_collector_off_until_the_last_ends():
    assert gc.isenabled()
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()  # another input's batch starts before the first ends
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second batch is still in hand
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_each_serve_process_collects_after_a_few_thousand_allocations(tmp_path, monkeypatch):
    # a request's cycles are collected in small pauses, not the worker's rare long ones
    monkeypatch.setenv("BIAS_AUDIT_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    from bias_audit.worker.composition import served_app

    root = logging.getLogger()
    before, handlers, level = gc.get_threshold(), root.handlers[:], root.level
    try:
        served_app()
        assert gc.get_threshold() == (5_000, 20, 10)
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        root.handlers[:], root.level = handlers, level  # the process's log set-up is the suite's

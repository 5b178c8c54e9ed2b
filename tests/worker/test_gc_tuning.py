import gc

from worker import gc_tuning


def test_tune_gc_freezes_the_startup_heap_and_raises_thresholds():
    before = gc.get_threshold()
    try:
        gc_tuning.tune_gc()
        assert gc.get_freeze_count() > 1000  # the imported modules' objects
        assert gc.get_threshold() == (gc_tuning.YOUNG_THRESHOLD, gc_tuning.MIDDLE_EVERY, gc_tuning.FULL_EVERY)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

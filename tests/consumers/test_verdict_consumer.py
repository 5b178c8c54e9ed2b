"""The judge.verdicts consumer: one result per verdict, counted once however often it arrives,
stored without texts and not at all at consent 0, and a drift alert that fires once when a
judge's recent verdicts move from its own baseline and resolves once when they come back."""

from __future__ import annotations

import asyncio
import json
import random

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.verdicts import VerdictProcessor
from bias_audit.state.alert_state import MemoryAlertState
from bias_audit.state.base import WindowPolicy
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.storage.jsonl_store import JsonlRecordStore, read_records

POLICY = WindowPolicy(max_sessions=2_000, max_days=30, recent_sessions=200, keep_sums=True)


def verdict(n: int, first: bool, **changes) -> dict:
    return {
        "verdict_id": f"v{n}",
        "tenant_id": "acme",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "judge", "prompt": "p"},
        "item_id": f"i{n}",
        "query": "RAW-QUERY",
        "candidates": [{"model": "a", "response": "alpha " * 10}, {"model": "b", "response": "beta " * 10}],
        "verdict": {"kind": "pairwise", "preference": "A>B" if first else "B>A"},
        **changes,
    }


def deliveries(events: list[dict], prefix: str = "d") -> list[Delivery]:
    return [
        Delivery(delivery_id=f"{prefix}{e['verdict_id']}", body=json.dumps(e).encode(), source_topic="judge.verdicts")
        for e in events
    ]


def run(processor: VerdictProcessor, batch: list[Delivery]):
    async def go():
        outcomes = await processor.process(batch)
        await processor.published(outcomes)
        return outcomes

    return asyncio.run(go())


def test_each_verdict_once_stored_without_texts_and_not_at_consent_zero(tmp_path):
    store = JsonlRecordStore(tmp_path, "verdicts")
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=store)
    events = [verdict(n, n % 2 == 0) for n in range(6)] + [verdict(6, True, consent_level=0)]
    first = run(processor, deliveries(events))
    assert [o.result.audit_id for o in first] == [f"v{n}" for n in range(7)]
    assert first[5].result.judge["window"]["verdicts"] == 6  # the consent-0 verdict is not counted
    again = run(processor, deliveries(events[:3], prefix="other-"))  # other copies: duplicates
    assert all(o.duplicate and o.result is None for o in again)
    store.close()
    rows = list(read_records([tmp_path]))
    assert sorted(r["verdict_id"] for r in rows) == [f"v{n}" for n in range(6)]
    assert "RAW-QUERY" not in json.dumps(rows) and "alpha alpha" not in json.dumps(rows)
    assert rows[0]["candidates"][0]["length_words"] == 10


def test_a_redelivery_of_an_unpublished_batch_resumes_without_counting_again(tmp_path):
    store = JsonlRecordStore(tmp_path, "verdicts")
    window = MemoryWindow(POLICY)
    processor = VerdictProcessor(window=window, store=store)
    batch = deliveries([verdict(n, True) for n in range(4)])
    asyncio.run(processor.process(batch))  # processed, never published: the transport redelivers
    resumed = run(processor, batch)
    assert [o.result.judge["window"]["verdicts"] for o in resumed] == [4, 4, 4, 4]
    assert all(o.result is not None and not o.duplicate for o in resumed)
    store.close()
    assert len(list(read_records([tmp_path]))) == 4  # appended once


def test_drift_fires_once_and_resolves_once():
    rng = random.Random(3)
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=None, alert_state=MemoryAlertState())
    phases = [(600, 0.5), (200, 0.85), (400, 0.5)]  # baseline, a drift of the first-position rate, back
    alerts, n = [], 0
    for count, rate in phases:
        events = [verdict(n + k, rng.random() < rate) for k in range(count)]
        n += count
        for start in range(0, count, 50):
            for outcome in run(processor, deliveries(events[start : start + 50])):
                alerts += outcome.alerts or []
    fired = [a for a in alerts if a.metric == "first_position_rate"]
    assert [a.status for a in fired] == ["firing", "resolved"]
    assert fired[0].alert_type == "judge_drift" and fired[0].value > fired[0].threshold + 0.05
    assert fired[1].alert_id == fired[0].alert_id and "judge [p]" in fired[0].message
    assert not [a for a in alerts if a.metric == "length_preference"]  # equal lengths: nothing to say


def test_a_retried_batch_gets_back_the_alerts_its_first_attempt_decided():
    rng = random.Random(5)
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=None, alert_state=MemoryAlertState())
    events = [verdict(n, rng.random() < 0.5) for n in range(600)] + [
        verdict(600 + n, rng.random() < 0.9) for n in range(200)
    ]
    tipping = None
    for start in range(0, 800, 50):
        batch = deliveries(events[start : start + 50])
        outcomes = asyncio.run(processor.process(batch))  # processed; the publish "fails"
        if any(o.alerts for o in outcomes):
            tipping = batch
            first = [a.alert_id for o in outcomes for a in o.alerts or ()]
            break
        run(processor, batch)  # processed again, then published
    assert tipping is not None
    retried = run(processor, tipping)  # the transport redelivers the batch
    assert [a.alert_id for o in retried for a in o.alerts or ()] == first  # not lost, same ids


def pair(n: int, game: int, preference: str | None) -> dict:
    verdict_ = {"kind": "failed"} if preference is None else {"kind": "pairwise", "preference": preference}
    return {**verdict(0, True), "verdict_id": f"p{n}-{game}", "item_id": f"pair-{n}", "game": game, "verdict": verdict_}


def test_the_window_counts_a_swapped_pair_once_with_its_second_game():
    # (game 1, game 2): consistent when game 2's verdict flipped equals game 1's; two failed agree
    pairs = [("A>B", "B>A"), ("A>B", "A>B"), ("B>>A", "A>B"), (None, None), ("A=B", "A=B"), ("A>B", None)]
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=None)
    firsts = [pair(n, 1, g1) for n, (g1, _) in enumerate(pairs)]
    seconds = [pair(n, 2, g2) for n, (_, g2) in enumerate(pairs)]
    run(processor, deliveries(firsts[:3]))
    # the other pairs' games arrive second-game first, some in one batch with their partner
    run(processor, deliveries(seconds[3:]))
    outcomes = run(processor, deliveries(seconds[:3] + firsts[3:]))
    run(processor, deliveries(seconds[:2], prefix="again-"))  # other copies: duplicates, nothing counted
    last = run(processor, deliveries([verdict(99, True)]))[0].result.judge["window"]
    assert last["verdicts"] == 13
    consistency = last["position_consistency"]
    assert consistency["n"] == 6 and consistency["estimate"] == round(4 / 6, 4)  # pairs 0, 2, 3 and 4
    assert all(o.result is not None for o in outcomes)


def test_drift_of_position_consistency_fires():
    rng = random.Random(8)
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=None, alert_state=MemoryAlertState())
    alerts, n = [], 0
    for pairs, flips in ((400, 0.1), (150, 0.6)):  # a consistent judge, then one that flips often
        events = []
        for _ in range(pairs):
            first = rng.random() < 0.5
            consistent = rng.random() >= flips
            g1 = "A>B" if first else "B>A"
            g2 = ("B>A" if first else "A>B") if consistent else g1
            events += [pair(n, 1, g1), pair(n, 2, g2)]
            n += 1
        for start in range(0, len(events), 50):
            for outcome in run(processor, deliveries(events[start : start + 50])):
                alerts += outcome.alerts or []
    [fired] = [a for a in alerts if a.metric == "position_consistency"]
    assert fired.status == "firing" and fired.value < fired.threshold - 0.05


def test_a_scored_answer_is_graded_not_failed_in_the_judges_window(tmp_path):
    store = JsonlRecordStore(tmp_path, "verdicts")
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=store)
    graded = [
        verdict(
            n,
            True,
            candidates=[{"model": "a", "length_words": 30}],
            verdict={"kind": "scores", "scores": [7], "scale": "1-10"},
        )
        for n in range(3)
    ]
    failed = verdict(3, True, candidates=[{"model": "a"}], verdict={"kind": "failed", "reason": "score -1"})
    pairs = [verdict(4, True), verdict(5, False, verdict={"kind": "pairwise", "preference": "A=B"})]
    outcomes = run(processor, deliveries(graded + [failed] + pairs))
    store.close()
    window = outcomes[-1].result.judge["window"]
    assert window["verdicts"] == 6
    assert window["failed_rate"]["estimate"] == round(1 / 6, 4)  # the one failed grading, not the three scores
    assert window["tie_rate"]["estimate"] == 1 / 2 and window["tie_rate"]["n"] == 2  # among the two compared


def test_a_score_past_1e15_is_a_dead_letter_naming_it_and_the_rest_of_the_batch_is_audited(tmp_path):
    store = JsonlRecordStore(tmp_path, "verdicts")
    processor = VerdictProcessor(window=MemoryWindow(POLICY), store=store)
    huge = verdict(1, True, verdict={"kind": "scores", "scores": [1e19, 0]})
    outcomes = run(processor, deliveries([verdict(0, True), huge, verdict(2, False)]))
    assert [o.result is not None for o in outcomes] == [True, False, True]
    letter = outcomes[1].dead_letter
    assert letter.error_type == "invalid_event"
    assert "verdict.scores.scores.0: Input should be less than or equal to 1000000000000000" in letter.error
    store.close()
    assert sorted(r["verdict_id"] for r in read_records([tmp_path])) == ["v0", "v2"]


def test_a_verdict_id_sent_again_with_other_content_is_a_dead_letter_not_a_second_count(tmp_path):
    store = JsonlRecordStore(tmp_path, "verdicts")
    window = MemoryWindow(POLICY)
    processor = VerdictProcessor(window=window, store=store)
    first = run(processor, deliveries([verdict(1, True)]))
    assert first[0].result.judge["window"]["verdicts"] == 1
    other_judge = verdict(1, True, judge={"model": "another-judge", "prompt": "p"})
    other_verdict = verdict(1, False)
    again = run(processor, deliveries([other_judge, other_verdict, verdict(2, True)], prefix="again-"))
    for outcome in again[:2]:
        assert outcome.dead_letter.error_type == "id_conflict" and outcome.result is None
        assert "verdict_id 'v1' was audited already with other content" in outcome.dead_letter.error
    assert again[2].result.judge["window"]["verdicts"] == 2  # the first judge's window: v1 and v2
    redelivered = run(processor, deliveries([verdict(1, True)], prefix="redelivered-"))
    assert redelivered[0].duplicate and redelivered[0].dead_letter is None  # the same content: a duplicate
    store.close()
    rows = list(read_records([tmp_path]))
    assert sorted((r["verdict_id"], r["judge"]["model"]) for r in rows) == [("v1", "judge"), ("v2", "judge")]


def test_the_shipped_verdicts_leave_items_with_their_question_for_people_to_judge(tmp_path):
    """After the quickstart the review page's judge mode has work: the default sample of the
    shipped verdicts keeps answers and questions for review, and the stored verdicts hold neither."""
    from bias_audit.worker.judge_samples import SAMPLE_FILE
    from bias_audit.worker.settings import Settings

    class Kept:
        rows: list[tuple] = []

        def keep(self, rows: list[tuple]) -> None:
            self.rows.extend(rows)

    kept = Kept()
    store = JsonlRecordStore(tmp_path, "verdicts")
    processor = VerdictProcessor(
        window=MemoryWindow(POLICY), store=store, review=kept, review_sample=Settings().judge_review_sample
    )
    events = [json.loads(line) for line in SAMPLE_FILE.read_text().splitlines()]
    for start in range(0, len(events), 100):
        run(processor, deliveries(events[start : start + 100]))
    store.close()
    assert len(kept.rows) >= 5
    questions = {event["item_id"]: event.get("query") for event in events}
    for tenant, verdict_id, item, models, answers, question, _ in kept.rows:
        assert question and question == questions[item] and len(answers) == 2 and all(answers)
    stored = json.dumps(list(read_records([tmp_path])))
    assert not any(question in stored for question in questions.values() if question)

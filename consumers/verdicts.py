"""Judge-verdict consumer: decode -> validate -> the judge's window -> verdict row -> result and
drift alerts.

The same contract with the transports as the other consumers (Deliveries in, Outcomes out) and
the same exactly-once rule: each verdict is an item of its judge's window (tenant, judge model,
judge prompt), counted once however often it arrives; a redelivery resumes after the last step
done. The query and the answers' texts are never stored: a verdict row keeps the candidates'
models and lengths in words.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import orjson

from bias_audit.analysis.judge_games import JudgedGame, game_from_event, stored_verdict
from bias_audit.analysis.judge_window import (
    RATES,
    JudgeWindow,
    direction_code,
    drift,
    swap_keys,
    verdict_contribution,
    window_estimates,
)
from bias_audit.analysis.judges import longer_preferred
from bias_audit.analysis.records import effective_consent
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.schemas.judges import JudgeVerdictEvent
from bias_audit.schemas.limits import DEFAULT_LIMITS, EventLimits
from bias_audit.schemas.results import Alert, AlertWindow, AuditResult
from bias_audit.state.alert_state import AlertStateStore
from bias_audit.state.base import RESUMED, WindowItem, WindowStore
from bias_audit.state.game_memory import Game, GameMemory, MemoryGameMemory

from .envelope import (
    Delivery,
    Misrouted,
    cloudevent_id,
    parse_event,
    parse_or_dead_letter,
    refuse,
    resolve_trace_id,
    utc_now_iso,
)
from .exactly_once import RecordOnce, RecordSink
from .outcome import AlertMove, Outcome, decide_alerts, recall_alerts

JUDGE_SUFFIX = "#judge:"  # '#' cannot occur in a tenant id: a judge's window never meets a tenant's


def content_fingerprint(event: JudgeVerdictEvent) -> str:
    """What a verdict says, as a digest: its fields (texts and trace id aside, which a producer's
    retry may change), keys sorted."""
    document = event.model_dump(mode="json", exclude={"trace_id"})
    return hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()


def judge_window_id(tenant: str, model: str, prompt: str | None) -> str:
    """The window key of a judge: its model and prompt by digest (model ids may hold any character)."""
    digest = hashlib.sha256(f"{model}\x1f{prompt or ''}".encode()).hexdigest()[:16]
    return f"{tenant}{JUDGE_SUFFIX}{digest}"


@dataclass(slots=True)
class _Judged:
    delivery: Delivery
    event: JudgeVerdictEvent
    stored: dict[str, Any]  # the event as stored: no query, no texts
    game: JudgedGame
    trace_id: str
    consent: int
    item: WindowItem


def _risk(window: JudgeWindow) -> str:
    flagged = len(window.flagged)
    return "high" if flagged >= 2 else "medium" if flagged else "low"


def _drift_alert(j: _Judged, summary: Any, moved: Any, status: str, alert_id: str) -> Alert:
    judge = j.event.judge
    return Alert(
        alert_id=alert_id,
        alert_type="judge_drift",
        status=status,
        severity="warning",
        tenant_id=j.event.tenant_id,
        trace_id=j.trace_id,
        metric=moved.metric,
        value=moved.recent,
        threshold=moved.baseline,
        window=AlertWindow(start=summary.window_start, end=summary.window_end, sessions=summary.sessions),
        detected_at=utc_now_iso(),
        message=f"{judge.model}{' [' + judge.prompt + ']' if judge.prompt else ''}: {moved.message}",
        session_id=j.event.verdict_id,
    )


class VerdictProcessor:
    misrouted = Misrouted(
        "council.session", CouncilSessionEvent, "this is a council session event; send it to the council.sessions topic"
    )

    def __init__(
        self,
        *,
        window: WindowStore,
        store: RecordSink | None,
        default_consent: int = 1,
        hash_secret: bytes | None = None,
        limits: EventLimits = DEFAULT_LIMITS,
        alert_state: AlertStateStore | None = None,
        remember: int = 10_000,
        review: Any = None,
        review_sample: float = 0.0,
        games: GameMemory | None = None,
    ) -> None:
        self.window = window  # with a judge policy: keeps its sums (windows.base.WindowPolicy.keep_sums)
        self.games = games or MemoryGameMemory()  # swapped partners' verdicts: position consistency
        self.default_consent = default_consent
        self.hash_secret = hash_secret
        self.limits = limits
        self.alert_state = alert_state
        self.once: RecordOnce[dict[str, Any]] = RecordOnce(window, store.append if store else None, remember)
        # the answers of a share of verdicts, kept for people to judge blind (storage.postgres.verdicts)
        self.review, self.review_sample = review, review_sample

    def parse(self, delivery: Delivery) -> JudgeVerdictEvent:
        return parse_event(JudgeVerdictEvent, delivery.body, self.limits, self.misrouted)

    def _judged(self, delivery: Delivery, event: JudgeVerdictEvent) -> tuple[_Judged, Game | None]:
        """The verdict as stored and as a game, its window item still without what it adds to the
        sums; and the game to remember for its swapped partner (a counted game of a known order),
        whose direction comes back from the game memory."""
        consent = effective_consent(event.consent_level, self.default_consent, self.hash_secret)
        trace_id = resolve_trace_id(event.trace_id, delivery.attributes, event.tenant_id, event.verdict_id)
        stored = stored_verdict(event.model_dump(mode="json"), [c.response for c in event.candidates])
        stored["trace_id"] = trace_id
        stored["consent_level"] = consent
        game = game_from_event(stored)
        window_id = judge_window_id(event.tenant_id, event.judge.model, event.judge.prompt)
        item = WindowItem(
            tenant_id=window_id,
            session_id=event.verdict_id,
            timestamp=event.timestamp,
            owner=delivery.delivery_id,
            counted=consent > 0,
        )
        keys = swap_keys(game) if consent > 0 else None
        remembered = None if keys is None else Game(window_id, *keys, direction_code(game))
        return _Judged(delivery, event, stored, game, trace_id, consent, item), remembered

    def _result(self, j: _Judged, window: JudgeWindow) -> AuditResult:
        event, game = j.event, j.game
        metrics = window.metrics
        flagged = window.flagged
        p_values = [metrics[name].p_value for name in RATES if metrics[name].flagged]
        return AuditResult(
            cloudevent_id=cloudevent_id(j.delivery.attributes),
            audit_id=event.verdict_id,
            source="judge.verdict",
            tenant_id=event.tenant_id,
            trace_id=j.trace_id,
            timestamp=utc_now_iso(),
            event_timestamp=event.timestamp.isoformat().replace("+00:00", "Z"),
            bias_detected=bool(flagged),
            bias_type=flagged,
            bias_score={name: metrics[name].estimate for name in RATES},
            bias_confidence_score=round(1.0 - min(p for p in p_values if p is not None), 4) if p_values else 0.0,
            overall_bias_risk=_risk(window),
            consent_level=j.consent,
            judge={
                "model": event.judge.model,
                "prompt": event.judge.prompt,
                "item_id": event.item_id,
                "verdict": {
                    "direction": game.direction,
                    "preferred_first": None if not game.direction else game.direction > 0,
                    "preferred_longer": longer_preferred(game),
                },
                "window": {"verdicts": window.verdicts, **{name: m.document() for name, m in metrics.items()}},
            },
        )

    async def process(self, deliveries: list[Delivery]) -> list[Outcome]:
        outcomes = [Outcome(d) for d in deliveries]
        parsed = await self._one_content_per_id(parse_or_dead_letter(deliveries, outcomes, self.parse), outcomes)
        prepared = [(index, *self._judged(deliveries[index], event)) for index, event in parsed]
        partners = iter(await self.games.exchange([game for _, _, game in prepared if game is not None]))
        judged = []
        for index, j, game in prepared:
            partner = next(partners) if game is not None else None
            if j.item.counted:  # what it adds to its judge's sums (nothing at consent 0)
                sums = verdict_contribution(j.game, partner)
                j.item = replace(j.item, contribution=sums, recent_contribution=sums)
            judged.append((index, j))
        updates = await self.window.add_many([j.item for _, j in judged])
        to_append: list[tuple[str, WindowItem, list[dict[str, Any]]]] = []
        signals: list[tuple[int, _Judged, Any]] = []
        for (index, j), update in zip(judged, updates):
            if update.status in ("duplicate", "done"):
                outcomes[index].duplicate = True
                continue
            outcomes[index].result = self._result(j, window_estimates(update.sums))
            outcomes[index].window_item = j.item
            if self.once.needed(j.delivery.delivery_id, update.status):
                to_append.append((j.delivery.delivery_id, j.item, [j.stored] if j.consent > 0 else []))
            if j.item.counted and (update.status == "new" or update.status in RESUMED):
                signals.append((index, j, update))
        await self.once.append(to_append)
        if self.review is not None and self.review_sample > 0:
            kept = {delivery_id for delivery_id, _, rows in to_append if rows}
            self.review.keep(
                [row for _, j in judged if j.delivery.delivery_id in kept and (row := self._review_row(j)) is not None]
            )
        if self.alert_state is not None and signals:
            await self._alerts(self.alert_state, signals, outcomes)
        return outcomes

    async def _one_content_per_id(
        self, parsed: list[tuple[int, JudgeVerdictEvent]], outcomes: list[Outcome]
    ) -> list[tuple[int, JudgeVerdictEvent]]:
        """The verdicts whose id names them alone: one sent again with other content (under another
        judge, say) would count in a second window while the store keeps the first, so it is a dead
        letter; a redelivery (the same content) goes on, to be told a duplicate."""
        claims = await self.games.claim(
            [(event.tenant_id, event.verdict_id, content_fingerprint(event)) for _, event in parsed]
        )
        kept = []
        for (index, event), first in zip(parsed, claims):
            if first is None:
                kept.append((index, event))
            else:
                refuse(
                    outcomes[index],
                    f"verdict_id {event.verdict_id!r} was audited already with other content "
                    f"(sha256 {first[:16]}...): an id names one verdict; send a new id for a new one",
                    "id_conflict",
                )
        return kept

    def _review_row(self, j: _Judged) -> tuple[Any, ...] | None:
        """The verdict's answers (and its question, when sent) for blind review, when it is sampled
        (by its id: every worker and every redelivery decide alike) and both answers came with
        their text."""
        event = j.event
        answers = [c.response for c in event.candidates]
        if len(answers) != 2 or any(a is None for a in answers):
            return None
        draw = int(hashlib.sha256(f"{event.tenant_id}\x1f{event.verdict_id}".encode()).hexdigest()[:8], 16) / 2**32
        if draw >= self.review_sample:
            return None
        return (
            event.tenant_id,
            event.verdict_id,
            event.item_id,
            [c.model for c in event.candidates],
            answers,
            event.query,
            event.timestamp,
        )

    async def _alerts(
        self, alert_state: AlertStateStore, signals: list[tuple[int, _Judged, Any]], outcomes: list[Outcome]
    ) -> None:
        """Drift of each judge's recent verdicts from its baseline: a transition per counted
        verdict in counting order; the alert state sends one firing per onset, one resolved. The
        alerts a verdict decided are kept before anything is published: a retry of its batch finds
        the state moved already and gets them back (published again with the same ids)."""
        resumed = [
            (index, j.item.tenant_id, j.event.verdict_id) for index, j, update in signals if update.status in RESUMED
        ]
        if resumed:
            await recall_alerts(alert_state, resumed, outcomes)
        moves: list[AlertMove] = []
        for index, j, update in sorted(signals, key=lambda s: s[2].sequence or s[2].counted_as):
            sequence = update.sequence or update.counted_as
            if not sequence:
                continue
            for moved in drift(update.sums, update.recent):
                if moved.state != "hold":
                    key = f"judge-drift:{j.item.tenant_id.rsplit(':', 1)[-1]}:{moved.metric}"
                    moves.append(
                        AlertMove(
                            index,
                            j.item.tenant_id,
                            j.event.verdict_id,
                            key,
                            moved.state,
                            sequence,
                            partial(_drift_alert, j, update.summary, moved),
                        )
                    )
        await decide_alerts(alert_state, moves, outcomes)

    async def published(self, outcomes: list[Outcome]) -> None:
        await self.once.published([o.window_item for o in outcomes if o.window_item is not None])

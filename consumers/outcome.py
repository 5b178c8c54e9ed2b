"""What a consumer hands its transport for each delivery (an Outcome), the interface every
transport's pipeline drives (BatchProcessor), and the alerts a batch decides: one path for the
council's and the judges' alert transitions, kept before publishing so a retry recalls them."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from bias_audit.schemas.results import Alert, AuditResult, DeadLetter
from bias_audit.state.alert_state import AlertStateStore, Transition
from bias_audit.state.base import WindowItem

from .envelope import Delivery

log = logging.getLogger("bias_audit.consumer")


@dataclass(slots=True)
class Outcome:
    delivery: Delivery
    result: AuditResult | None = None  # publish on bias.audit.stream
    dead_letter: DeadLetter | None = None  # publish on bias.audit.deadletter
    duplicate: bool = False  # nothing to publish, only acknowledge
    window_item: WindowItem | None = None  # the session's window entry, to mark it published
    alerts: list[Alert] | None = None  # publish on bias.audit.alerts
    tasks: list[Any] | None = None  # TaskSuggestion: publish on bias.audit.tasks


class BatchProcessor(Protocol):
    """What a transport's pipeline drives: a batch of deliveries in, one outcome each out (in
    order); told afterwards which outcomes were published, so a redelivery is only acknowledged.
    CouncilSessionProcessor, ResponseProcessor and the EventRouter over both."""

    async def process(self, deliveries: list[Delivery]) -> list[Outcome]: ...

    async def published(self, outcomes: list[Outcome]) -> None: ...


async def recall_alerts(
    alert_state: AlertStateStore, keyed: list[tuple[int, str, str]], outcomes: list[Outcome]
) -> None:
    """(outcome index, alert-state tenant, event id) of resumed deliveries: the alerts an earlier
    attempt at them decided. The alert state moved then, so this attempt's transitions change
    nothing, and if that attempt's messages were never published (its batch failed after
    deciding) they would be lost. Published again with the same ids: a consumer of
    bias.audit.alerts may see an alert twice, never lose one."""
    found = await alert_state.recall([(tenant, event_id) for _, tenant, event_id in keyed])
    for (index, _, event_id), payload in zip(keyed, found):
        if payload is not None:
            outcome = outcomes[index]
            outcome.alerts = [Alert.model_validate(alert) for alert in orjson.loads(payload)]
            log.warning(
                "alerts recalled",
                extra={
                    "trace_id": outcome.result.trace_id if outcome.result else None,
                    "session_id": event_id,
                    "alerts": len(outcome.alerts),
                },
            )


async def remember_alerts(
    alert_state: AlertStateStore, keyed: list[tuple[int, str, str]], outcomes: list[Outcome]
) -> None:
    """The alerts these outcomes decided, kept before anything is published (recall_alerts)."""
    await alert_state.remember(
        [
            (tenant, event_id, orjson.dumps([alert.model_dump(mode="json") for alert in outcomes[index].alerts or ()]))
            for index, tenant, event_id in keyed
        ]
    )


@dataclass(frozen=True, slots=True)
class AlertMove:
    """One condition's move (firing or resolved) for the outcome at `index`: `tenant` and `event_id`
    key the alert state and the remembered alerts; `alert(status, alert_id)` builds the message."""

    index: int
    tenant: str
    event_id: str
    key: str
    state: str
    sequence: int
    alert: Callable[[str, str], Alert]


async def decide_alerts(alert_state: AlertStateStore, moves: list[AlertMove], outcomes: list[Outcome]) -> None:
    """Apply the moves (in counting order) to the alert state; each one that changed it adds its
    alert to its outcome. An alert's id names its onset; a resolution reuses the firing's id. The
    decided alerts are kept before anything is published: a retry of the batch recalls them."""
    transitions = [
        Transition(
            m.tenant,
            m.key,
            m.state,
            m.sequence,
            uuid.uuid5(uuid.NAMESPACE_URL, f"bias-audit:{m.tenant}:{m.key}:{m.sequence}").hex
            if m.state == "firing"
            else "",
        )
        for m in moves
    ]
    decided: dict[int, AlertMove] = {}
    for move, change in zip(moves, await alert_state.apply(transitions)):
        if change is None:
            continue
        status, alert_id = change
        alert = move.alert("firing" if status == "fired" else "resolved", alert_id)
        outcomes[move.index].alerts = [*(outcomes[move.index].alerts or []), alert]
        decided[move.index] = move
        log.warning(
            "alert %s",
            alert.status,
            extra={
                "trace_id": alert.trace_id,
                "alert_type": alert.alert_type,
                "alert_key": move.key,
                "value": alert.value,
            },
        )
    await remember_alerts(alert_state, [(index, m.tenant, m.event_id) for index, m in decided.items()], outcomes)

"""One consumer over the three kinds of event: a batch split by kind, each part to its consumer,
the outcomes back in delivery order."""

from __future__ import annotations

from typing import Any

import orjson

from .envelope import Delivery, classify
from .outcome import BatchProcessor, Outcome
from .responses import ResponseProcessor


class EventRouter:
    """One consumer interface over the three kinds: by the topic a delivery came from, else (the
    `audit` command's files) by its fields. Outcomes keep delivery order."""

    def __init__(
        self,
        council: BatchProcessor,
        responses: ResponseProcessor,
        verdicts: BatchProcessor | None = None,
        *,
        llm_topic: str,
        council_topic: str,
        verdicts_topic: str = "judge.verdicts",
    ) -> None:
        self.council = council
        self.responses = responses
        self.verdicts = verdicts  # consumers.verdicts.VerdictProcessor
        self.topics = {llm_topic: "llm.response", council_topic: "council.session", verdicts_topic: "judge.verdict"}

    def _kind(self, delivery: Delivery) -> str:
        kind = self.topics.get(delivery.source_topic)
        if kind is not None:
            return kind
        try:
            kind = classify(orjson.loads(delivery.body))
        except orjson.JSONDecodeError:
            return "council.session"
        return kind if kind in ("llm.response", "judge.verdict") else "council.session"

    def _consumers(self) -> list[tuple[str, Any]]:
        return [
            ("council.session", self.council),
            ("llm.response", self.responses),
            *((("judge.verdict", self.verdicts),) if self.verdicts is not None else ()),
        ]

    async def process(self, deliveries: list[Delivery]) -> list[Outcome]:
        kinds = [self._kind(d) for d in deliveries]
        if self.verdicts is None:  # no verdict consumer here: such events go where they did before
            kinds = ["council.session" if k == "judge.verdict" else k for k in kinds]
        outcomes: list[Outcome | None] = [None] * len(deliveries)
        for kind, consumer in self._consumers():
            picked = [i for i, k in enumerate(kinds) if k == kind]
            if picked:
                for i, outcome in zip(picked, await consumer.process([deliveries[i] for i in picked])):
                    outcomes[i] = outcome
        return outcomes  # type: ignore[return-value]

    async def published(self, outcomes: list[Outcome]) -> None:
        # the council's and responses' markers live in one window store: one call marks them;
        # the verdicts' windows are a store of their own
        await self.responses.published(outcomes)
        if self.verdicts is not None:
            await self.verdicts.published(
                [o for o in outcomes if o.result is not None and o.result.source == "judge.verdict"]
            )

    async def drain(self) -> None:
        await self.responses.drain()

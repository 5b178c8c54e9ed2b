"""Alert state shared by every worker of a tenant: one firing per onset, one resolved when it
clears, in the order the sessions were counted (Redis), or in-process for `bias-audit audit`."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, NamedTuple, Protocol

from msgspec import msgpack
from redis.asyncio import Redis

from .redis_scripts import run_script

_SCRIPT = files("bias_audit.state").joinpath("alert_state.lua").read_text(encoding="utf-8")


class Transition(NamedTuple):  # a NamedTuple: ~6 a session, built in half the time of a frozen dataclass
    tenant_id: str
    key: str
    wanted: str  # "firing" | "ok"
    sequence: int
    alert_id: str  # used if it fires


@dataclass(frozen=True, slots=True)
class AlertLimits:
    cooldown_s: float = 300.0
    max_per_minute: int = 30
    state_ttl_s: int = 90 * 86_400  # an alert quiet this long is forgotten
    # a session's decided alerts are kept this long for a retry of its batch (remember / recall)
    decided_ttl_s: int = 7 * 86_400


class AlertStateStore(Protocol):
    async def apply(self, transitions: list[Transition]) -> list[tuple[str, str] | None]:
        """Per transition: ("fired" | "resolved", alert id), or None when nothing changed."""
        ...

    async def remember(self, decided: list[tuple[str, str, bytes]]) -> None:
        """(tenant, session id, its alert messages as JSON) for each session whose transitions
        changed the state: a retry of its batch (the messages not published) finds the state
        moved already and gets them back from recall() instead of losing them."""
        ...

    async def recall(self, sessions: list[tuple[str, str]]) -> list[bytes | None]:
        """What remember() kept for each (tenant, session id); None where nothing was."""
        ...


def _decode(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisAlertState:
    def __init__(self, client: Redis, limits: AlertLimits = AlertLimits(), prefix: str = "bias-audit") -> None:
        self.client = client
        self.limits = limits
        self.prefix = prefix
        self._script = client.register_script(_SCRIPT)

    async def apply(self, transitions: list[Transition]) -> list[tuple[str, str] | None]:
        if not transitions:
            return []
        now_ms = int(time.time() * 1000)
        minute = now_ms // 60_000
        limits = self.limits
        by_tenant: dict[str, list[int]] = {}
        for index, t in enumerate(transitions):
            by_tenant.setdefault(t.tenant_id, []).append(index)
        calls: list[tuple[list[str], list[Any]]] = []
        for tenant, indexes in by_tenant.items():  # one call per tenant: its keys share a slot
            base = f"{self.prefix}:{{{tenant}}}"
            # a batch moves the same few alerts again and again: each state hash once in KEYS, the
            # transitions as one MessagePack argument (redis-py packs each argument in Python)
            at: dict[str, int] = {}
            moves = [
                [
                    at.setdefault(f"{base}:alert:{transitions[i].key}", len(at) + 2),
                    transitions[i].wanted,
                    str(transitions[i].sequence),
                    transitions[i].alert_id,
                ]
                for i in indexes
            ]
            calls.append(
                (
                    [f"{base}:alerts-fired:{minute}", *at],
                    [
                        now_ms,
                        int(limits.cooldown_s * 1000),
                        limits.max_per_minute,
                        limits.state_ttl_s,
                        msgpack.encode(moves),
                    ],
                )
            )
        replies = await run_script(self.client, self._script, calls)
        out: list[tuple[str, str] | None] = [None] * len(transitions)
        for indexes, reply in zip(by_tenant.values(), replies):
            for n, index in enumerate(indexes):
                change = _decode(reply[2 * n])
                out[index] = None if change == "unchanged" else (change, _decode(reply[2 * n + 1]))
        return out

    def _decided_key(self, tenant: str, session_id: str) -> str:
        return f"{self.prefix}:{{{tenant}}}:alerts-of:{session_id}"

    async def remember(self, decided: list[tuple[str, str, bytes]]) -> None:
        if not decided:
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for tenant, session_id, payload in decided:
                pipe.set(self._decided_key(tenant, session_id), payload, ex=self.limits.decided_ttl_s)
            await pipe.execute()

    async def recall(self, sessions: list[tuple[str, str]]) -> list[bytes | None]:
        if not sessions:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for tenant, session_id in sessions:
                pipe.get(self._decided_key(tenant, session_id))
            found: list[bytes | None] = await pipe.execute()
        return found


class MemoryAlertState:
    """The same rules in-process (one worker: sequences only grow)."""

    MAX_DECIDED = 10_000  # sessions whose alerts are kept for a retry: a retry comes soon in one process

    def __init__(self, limits: AlertLimits = AlertLimits(), clock: Callable[[], float] = time.time) -> None:
        self.limits = limits
        self.clock = clock
        self._state: dict[tuple[str, str], dict[str, Any]] = {}
        self._fired: dict[tuple[str, int], int] = {}
        self._decided: OrderedDict[tuple[str, str], bytes] = OrderedDict()  # the newest MAX_DECIDED

    async def apply(self, transitions: list[Transition]) -> list[tuple[str, str] | None]:
        out: list[tuple[str, str] | None] = []
        now = self.clock()
        for t in transitions:
            state = self._state.setdefault((t.tenant_id, t.key), {"status": "ok", "sequence": -1})
            if t.sequence <= state["sequence"]:
                out.append(None)
                continue
            state["sequence"] = t.sequence
            if t.wanted == state["status"]:
                out.append(None)
            elif t.wanted == "firing":
                minute = (t.tenant_id, int(now // 60))
                if "resolved_at" in state and now - state["resolved_at"] < self.limits.cooldown_s:
                    out.append(None)
                    continue
                if minute not in self._fired:  # a new minute: earlier minutes no longer count
                    self._fired = {key: n for key, n in self._fired.items() if key[1] == minute[1]}
                self._fired[minute] = self._fired.get(minute, 0) + 1
                if self._fired[minute] > self.limits.max_per_minute:
                    out.append(None)
                    continue
                state.update(status="firing", alert_id=t.alert_id)
                out.append(("fired", t.alert_id))
            else:
                state.update(status="ok", resolved_at=now)
                out.append(("resolved", state.get("alert_id", "")))
        return out

    async def remember(self, decided: list[tuple[str, str, bytes]]) -> None:
        for tenant, session_id, payload in decided:
            self._decided[(tenant, session_id)] = payload
            self._decided.move_to_end((tenant, session_id))
        while len(self._decided) > self.MAX_DECIDED:
            self._decided.popitem(last=False)

    async def recall(self, sessions: list[tuple[str, str]]) -> list[bytes | None]:
        return [self._decided.get(session) for session in sessions]

"""Per-tenant rolling windows in Redis: one atomic Lua script per tenant per round of a batch."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import orjson
from msgspec import msgpack
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from bias_audit.analysis.digest import SessionDigest
from bias_audit.analysis.window import WindowUpdate, add_into, summarize_window

from .base import WindowItem, WindowPolicy, iso_from_ms, marker_value
from .redis_scripts import run_script

_SCRIPT = files("bias_audit.state").joinpath("redis_window.lua").read_text(encoding="utf-8")
_MARKS = files("bias_audit.state").joinpath("progress_marks.lua").read_text(encoding="utf-8")
INT64 = 2**63  # HINCRBY's limit: a batch's total this large goes to the script session by session
# Sessions per script round of a batch: a round's Lua script holds Redis for its sessions, so
# other clients wait at most one round; each round costs one round trip
ROUND_SESSIONS = 50
PARSED_TENANTS = 10_000  # tenants whose window's parsed digests are kept (~120 KB each)


def rounds(by_tenant: dict[str, list[int]], size: int) -> list[list[tuple[str, list[int]]]]:
    """Each tenant's items (indexes) in rounds of at most `size` sessions, one call per tenant
    in a round; a tenant's later items in later rounds, so that Redis counts them in order."""
    out: list[list[tuple[str, list[int]]]] = []
    current: list[tuple[str, list[int]]] = []
    room = size
    for tenant, indexes in by_tenant.items():
        while indexes:
            piece, indexes = indexes[:room], indexes[room:]
            current.append((tenant, piece))
            room -= len(piece)
            if not room:
                out.append(current)
                current, room = [], size
    if current:
        out.append(current)
    return out


def tenant_keys(prefix: str, tenant_id: str) -> dict[str, str]:
    # The {tenant} hash tag keeps every key of one tenant in one cluster slot.
    base = f"{prefix}:{{{tenant_id}}}"
    return {
        "seen": f"{base}:seen:",
        "sums": f"{base}:sums",
        "order": f"{base}:order",
        "newest": f"{base}:newest",
        "contribution": f"{base}:c:",
        "digests": f"{base}:digests",
        "sequence": f"{base}:seq",
        "recent_sums": f"{base}:recent-sums",
        "recent_order": f"{base}:recent-order",
        "recent_contribution": f"{base}:rc:",
        "answer": f"{base}:answer:",  # + kind:id: the API's first answer (state.result_cache)
    }


def _decode(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ints(flat: list[Any]) -> dict[str, int]:
    """A flat [field, integer string, ...] list as a dict."""
    return {_decode(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}


def _flat_json(sums: dict[str, int]) -> str:
    """Sums as the script takes and stores them: JSON ["field", "integer", ...]; "" for none."""
    if not sums:
        return ""
    return orjson.dumps([part for key, value in sums.items() for part in (key, str(value))]).decode()


def _stored_sums(stored: bytes) -> dict[str, int]:
    """An evicted session's stored contribution (JSON [field, integer string, ...]) as sums."""
    flat = orjson.loads(stored)
    return dict(zip(flat[0::2], map(int, flat[1::2])))


class RedisWindow:
    def __init__(self, client: Redis, policy: WindowPolicy = WindowPolicy(), prefix: str = "bias-audit") -> None:
        self.client = client
        self.policy = policy
        self.prefix = prefix
        self._script = client.register_script(_SCRIPT)
        self._marks = client.register_script(_MARKS)
        # Parsed digests of each tenant's window, by session id: a digest never changes, so each
        # batch fetches and parses only the sessions new to the window; those this process
        # counted are known without asking.
        self._parsed: dict[str, dict[bytes, SessionDigest]] = {}

    def _call(
        self, tenant_id: str, items: list[WindowItem], stored: list[dict[str, Any] | None]
    ) -> tuple[list[str], list[Any]]:
        """The script's keys and arguments; `stored`: each item's digest as stored (to_dict), or None."""
        keys = tenant_keys(self.prefix, tenant_id)
        policy = self.policy
        window_total: dict[str, int] = {}
        recent_total: dict[str, int] = {}
        for item in items:
            if item.counted:
                add_into(window_total, item.contribution, 1)
                add_into(recent_total, item.recent_contribution, 1)
        totals = [_flat_json(window_total), _flat_json(recent_total)]
        if any(abs(value) >= INT64 for total in (window_total, recent_total) for value in total.values()):
            totals = ["-", "-"]  # the script adds each session's instead
        # the sessions in one MessagePack argument (redis-py packs each argument in Python); each
        # sums one JSON string, which the script stores as it comes (the format it reads back)
        sessions = msgpack.encode(
            [
                [
                    item.session_id,
                    str(item.ts_ms),
                    item.owner,
                    "1" if item.counted else "0",
                    orjson.dumps(digest).decode() if digest is not None else "",
                    _flat_json(item.contribution),
                    _flat_json(item.recent_contribution),
                ]
                for item, digest in zip(items, stored)
            ]
        )
        args = [
            str(policy.max_sessions),
            str(policy.window_ms),
            str(policy.seen_ttl_seconds),
            str(policy.recent_sessions),
            *totals,
            sessions,
        ]
        return [
            keys["sums"],
            keys["order"],
            keys["newest"],
            keys["contribution"],
            keys["digests"],
            keys["sequence"],
            keys["recent_sums"],
            keys["recent_order"],
            keys["recent_contribution"],
            *(keys["seen"] + item.session_id for item in items),
        ], args

    def _replay(self, tenant_id: str, items: list[WindowItem], reply: list[Any]) -> list[WindowUpdate]:
        """Each session's sums, exact: the sums before the batch, then per session what it added
        (its own contribution, when counted now) and what it evicted, as the script did."""
        sums, recent = _ints(reply[0]), _ints(reply[1])
        updates = []
        for item, (status, sequence, sessions, first, last, evicted, recent_evicted, counted_as) in zip(
            items, reply[2:]
        ):
            if sequence:  # counted now
                add_into(sums, item.contribution, 1)
                add_into(recent, item.recent_contribution, 1)
            for stored in evicted:
                add_into(sums, _stored_sums(stored), -1)
            for stored in recent_evicted:
                add_into(recent, _stored_sums(stored), -1)
            summary = summarize_window(
                sums,
                tenant_id=tenant_id,
                sessions=int(sessions),
                window_start=iso_from_ms(float(first)) if first else None,
                window_end=iso_from_ms(float(last)) if last else None,
            )
            updates.append(
                WindowUpdate(
                    status=_decode(status),
                    summary=summary,
                    sequence=int(sequence),
                    recent=dict(recent),
                    counted_as=int(counted_as),
                    sums=dict(sums) if self.policy.keep_sums else {},
                )
            )
        return updates

    async def add_many(self, items: list[WindowItem]) -> list[WindowUpdate]:
        """One script call per tenant in each round of ROUND_SESSIONS sessions; every round's
        calls in one pipeline, which Redis runs in order (a round needs no reply of the one
        before it), so a batch costs one round trip however many rounds it has. Updates in the
        items' order."""
        if not items:
            return []
        by_tenant: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            by_tenant.setdefault(item.tenant_id, []).append(index)
        # each digest as stored (to_dict rounds the scores), so every reader sees equal inputs
        kept = [None if item.digest is None else item.digest.as_stored() for item in items]
        updates: list[WindowUpdate | None] = [None] * len(items)
        batch_rounds = rounds(by_tenant, ROUND_SESSIONS)
        replies = await run_script(
            self.client, self._script, [call for round_ in batch_rounds for call in self._calls(items, kept, round_)]
        )
        at = 0
        for round_ in batch_rounds:
            self._replay_round(items, kept, updates, round_, replies[at : at + len(round_)])
            at += len(round_)
        return updates  # type: ignore[return-value]

    def _calls(
        self, items: list[WindowItem], kept: list[SessionDigest | None], round_: list[tuple[str, list[int]]]
    ) -> list[tuple[list[str], list[Any]]]:
        return [
            self._call(
                tenant_id,
                [items[i] for i in indexes],
                [None if (digest := kept[i]) is None else digest.to_dict(rounded=True) for i in indexes],
            )
            for tenant_id, indexes in round_
        ]

    def _replay_round(
        self,
        items: list[WindowItem],
        kept: list[SessionDigest | None],
        updates: list[WindowUpdate | None],
        round_: list[tuple[str, list[int]]],
        replies: list[Any],
    ) -> None:
        for (tenant_id, indexes), reply in zip(round_, replies):
            for index, update in zip(indexes, self._replay(tenant_id, [items[i] for i in indexes], reply)):
                updates[index] = update
                digest = kept[index]
                if update.sequence and digest is not None:  # counted by this call: its digest is the one stored
                    self._parsed.setdefault(tenant_id, {})[items[index].session_id.encode()] = digest

    async def mark(self, items: list[WindowItem], phase: str) -> None:
        """One script call per tenant (progress_marks.lua: SET XX KEEPTTL each marker)."""
        if not items:
            return
        by_tenant: dict[str, tuple[str, list[str], list[str]]] = {}
        for item in items:
            tenant = by_tenant.get(item.tenant_id)
            if tenant is None:
                tenant = by_tenant[item.tenant_id] = (tenant_keys(self.prefix, item.tenant_id)["seen"], [], [])
            seen, keys, values = tenant
            keys.append(seen + item.session_id)
            values.append(marker_value(item.owner, phase))
        await run_script(self.client, self._marks, [(keys, values) for _, keys, values in by_tenant.values()])

    async def digests(self, tenant_ids: list[str]) -> dict[str, list[SessionDigest]]:
        """Each tenant's window digests in window order (event time); a session without one is skipped."""
        async with self.client.pipeline(transaction=False) as pipe:
            for tenant in tenant_ids:
                pipe.zrange(tenant_keys(self.prefix, tenant)["order"], 0, -1)
            orders = [[m if isinstance(m, bytes) else m.encode() for m in order] for order in await pipe.execute()]
        if len(self._parsed) > PARSED_TENANTS:  # tenants gone quiet: forget them all, read again on return
            self._parsed.clear()
        missing = [
            [m for m in order if m not in self._parsed.get(tenant, {})] for tenant, order in zip(tenant_ids, orders)
        ]
        fetched: list[Any] = []
        if any(missing):
            async with self.client.pipeline(transaction=False) as pipe:
                for tenant, ids in zip(tenant_ids, missing):
                    if ids:
                        pipe.hmget(tenant_keys(self.prefix, tenant)["digests"], ids)
                fetched = await pipe.execute()
        replies = iter(fetched)
        out = {}
        for tenant, order, ids in zip(tenant_ids, orders, missing):
            known = self._parsed.get(tenant, {})
            if ids:
                known.update(
                    (m, SessionDigest.from_dict(orjson.loads(raw)))
                    for m, raw in zip(ids, next(replies))
                    if raw is not None
                )
            # keep only the window's sessions: the cache is as large as the windows, no larger
            self._parsed[tenant] = {m: known[m] for m in order if m in known}
            out[tenant] = list(self._parsed[tenant].values())
        return out


def _ordered_digests(order: list[Any], stored: dict[bytes, Any]) -> list[SessionDigest]:
    """The window's digests in its order (event time); a session without one is skipped."""
    out = []
    for member in order:
        raw = stored.get(member if isinstance(member, bytes) else member.encode())
        if raw is not None:
            out.append(SessionDigest.from_dict(orjson.loads(raw)))
    return out


def read_live_windows(client: SyncRedis, prefix: str, tenant: str | None = None) -> dict[str, list[SessionDigest]]:
    """Every tenant's live window (or one tenant's), for `bias-audit report --redis`."""
    if tenant is not None:
        tenants = [tenant]
    else:
        start, end = f"{prefix}:{{", "}:order"
        tenants = sorted(
            _decode(key)[len(start) : -len(end)] for key in client.scan_iter(match=f"{prefix}:{{*}}:order")
        )
    out = {}
    for name in tenants:
        keys = tenant_keys(prefix, name)
        pipe = client.pipeline(transaction=False)
        pipe.zrange(keys["order"], 0, -1)
        pipe.hgetall(keys["digests"])
        order, stored = pipe.execute()
        if order:
            out[name] = _ordered_digests(order, stored)
    return out

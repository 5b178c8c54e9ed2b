"""Hardening benchmarks against a real `bias-audit serve` process (issue 15).

    python bench/hardening.py largest      # latency at the largest accepted event, and of small
                                           # requests sent while large ones are analyzed
    python bench/hardening.py soak [N]     # RSS before and after N requests (default 100,000)

Prints a table each; record the numbers in bench/RESULTS.md with the command.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.builders import council_event
from tests.services import spawn_serve

MAX_EVENT_BYTES = 4 * 1024 * 1024
MAX_RESPONSE_BYTES = 256 * 1024
PROSE = (
    "The engineer said he would help the women on the team; the plan was good, and the chairman "
    "agreed that every nurse and her colleagues deserved better tools. "
)


def start_serve(data_dir: str) -> tuple[subprocess.Popen, str]:
    # JSONL records in data_dir: the API's bounds are measured, not a database
    return spawn_serve(
        env={"BIAS_AUDIT_LOG_LEVEL": "WARNING", "BIAS_AUDIT_DATA_DIR": data_dir, "BIAS_AUDIT_STORE_URL": data_dir}
    )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def text_of(size: int) -> str:
    return (PROSE * (size // len(PROSE) + 1))[:size]


def largest_event(index: int) -> bytes:
    """An LLM response event as large as the defaults accept: a 256 KB answer and as many 256 KB
    counterfactual answers as fit in 4 MB."""
    answer = text_of(MAX_RESPONSE_BYTES - 1024)
    event = {
        "audit_id": f"large-{index}",
        "tenant_id": "bench",
        "timestamp": "2026-11-20T10:30:00Z",
        "llm_response": answer,
        "counterfactuals": [],
    }
    while len(json.dumps(event)) + MAX_RESPONSE_BYTES < MAX_EVENT_BYTES - 4096:
        event["counterfactuals"].append({"swap": {"he": "she"}, "llm_response": answer})
    return json.dumps(event).encode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def bench_largest(rounds: int = 20) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        process, url = start_serve(data_dir)
        try:
            sample = largest_event(0)
            counterfactuals = len(json.loads(sample)["counterfactuals"])
            large, small = [], []
            busy = threading.Event()

            def small_requests() -> None:
                with httpx.Client(base_url=url, timeout=120) as client:
                    index = 0
                    while busy.is_set():
                        index += 1
                        body = {
                            "audit_id": f"small-{index}",
                            "timestamp": "2026-11-20T10:30:00Z",
                            "llm_response": "A short answer.",
                        }
                        started = time.perf_counter()
                        assert client.post("/analyze-bias", json=body).status_code == 200
                        small.append(time.perf_counter() - started)
                        health = time.perf_counter()
                        assert client.get("/healthz").status_code == 200
                        small.append(time.perf_counter() - health)
                        time.sleep(0.05)

            busy.set()
            side = threading.Thread(target=small_requests)
            side.start()
            with httpx.Client(base_url=url, timeout=300) as client:
                for index in range(rounds):
                    body = largest_event(index)
                    started = time.perf_counter()
                    reply = client.post("/analyze-bias", content=body, headers={"content-type": "application/json"})
                    large.append(time.perf_counter() - started)
                    assert reply.status_code == 200, reply.text[:300]
            busy.clear()
            side.join()
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(
        f"largest accepted event: {len(sample) / 1e6:.2f} MB (a 255 KB answer + {counterfactuals} counterfactual "
        f"answers of 255 KB), {rounds} requests, one at a time\n"
    )
    print(f"{'requests':<44} {'n':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for name, values in (("largest event, POST /analyze-bias", large), ("small event or /healthz, meanwhile", small)):
        print(
            f"{name:<44} {len(values):>5} {percentile(values, 50) * 1e3:>9.0f} {percentile(values, 99) * 1e3:>9.0f} "
            f"{max(values) * 1e3:>9.0f}"
        )


def soak_requests(index: int) -> tuple[str, dict | bytes]:
    """A mix a long-lived `serve` sees: new ids over many tenants, replays, swaps, bad bodies."""
    tenant = f"tenant-{index % 500}"
    kind = index % 10
    if kind < 4:
        return "/analyze-bias", {
            "audit_id": f"r-{index}",
            "tenant_id": tenant,
            "timestamp": "2026-11-20T10:30:00Z",
            "llm_response": text_of(200 + index % 2000),
        }
    if kind < 7:
        event = council_event(
            {"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}, "R3": {"M1": 6, "M2": 5}},
            session_id=f"s-{index}",
            tenant_id=tenant,
            timestamp="2026-11-20T10:30:00Z",
        )
        return "/audit-session", event
    if kind == 7:  # a replay of an earlier id: the cached answer
        return "/analyze-bias", {
            "audit_id": f"r-{max(0, index - 1000)}",
            "tenant_id": tenant,
            "timestamp": "2026-11-20T10:30:00Z",
            "llm_response": "x",
        }
    if kind == 8:
        return "/counterfactual-prompts", {"prompt": text_of(2000), "swaps": {"he": "she", "his": "her"}}
    return "/analyze-bias", b'{"audit_id": "bad", "x": NaN}'


def bench_soak(total: int = 100_000, workers: int = 4) -> None:
    checkpoints = sorted({1_000, total // 4, total // 2, 3 * total // 4, total})
    with tempfile.TemporaryDirectory() as data_dir:
        process, url = start_serve(data_dir)
        rows = [(0, rss_mb(process.pid), 0.0)]
        started = time.monotonic()
        done = 0
        try:
            lock = threading.Lock()
            counter = iter(range(total))

            def work() -> None:
                nonlocal done
                with httpx.Client(base_url=url, timeout=60) as client:
                    for index in counter:
                        path, body = soak_requests(index)
                        if isinstance(body, bytes):
                            reply = client.post(path, content=body, headers={"content-type": "application/json"})
                        else:
                            reply = client.post(path, json=body)
                        assert reply.status_code < 500, reply.text[:300]
                        with lock:
                            done += 1
                            if done in checkpoints:
                                rows.append((done, rss_mb(process.pid), time.monotonic() - started))

            threads = [threading.Thread(target=work) for _ in range(workers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(
        f"`serve` RSS under a soak of {total:,} requests ({workers} clients; 40% new LLM responses, 30% new "
        "council sessions over 500 tenants, 10% replays, 10% swaps, 10% NaN bodies)\n"
    )
    print(f"{'requests':>10} {'RSS MB':>8} {'elapsed s':>10}")
    for count, rss, elapsed in rows:
        print(f"{count:>10,} {rss:>8.0f} {elapsed:>10.0f}")
    growth = rows[-1][1] - rows[1][1]
    print(
        f"\ngrowth after the first 1,000 requests: {growth:+.0f} MB "
        f"({statistics.mean(r[1] for r in rows[2:]):.0f} MB mean from {total // 4:,} on)"
    )


if __name__ == "__main__":
    sections = {"largest": bench_largest, "soak": bench_soak}
    if len(sys.argv) < 2 or sys.argv[1] not in sections:
        raise SystemExit(__doc__)
    arguments = [int(a) for a in sys.argv[2:]]
    sections[sys.argv[1]](*arguments)

"""`bias-audit report` speed and memory, against llm-council-core's run_aggregated_bias_audit.

    python bench/report.py                 # 1,000 and 10,000 sessions vs the reference
    python bench/report.py --million       # and a 1,000,000-session file (~12.6 GB on disk)

Files: 5x5 council sessions (the shipped sample generator, ~1 KB answers) run through the
in-process pipeline into our JSONL records; the larger files repeat those sessions under new
ids and later timestamps. Both tools read the same files. Each run is a fresh process, timed
from the outside, with its peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bytecode import compile_package  # noqa: E402  (this folder is on the path: run as a script)
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

REFERENCE = """
import sys, time
from pathlib import Path
from llm_council.bias_aggregation import run_aggregated_bias_audit
started = time.perf_counter()
window = int(sys.argv[2]) or None
result = run_aggregated_bias_audit(store_path=Path(sys.argv[1]), max_sessions=window)
print(time.perf_counter() - started, result.unique_sessions)
"""

OURS = """
import os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the command line sets it
from bias_audit.reports.build import build_report
from bias_audit.reports.run import stored_windows
from bias_audit.storage.report_reader import collector_paused
from bias_audit.two_processes import TwoProcesses
started = time.perf_counter()
sessions, days = int(sys.argv[2]) or None, float(sys.argv[3]) or None
split = TwoProcesses()  # as `bias-audit report` runs: halves at once with two CPUs
with collector_paused(kept=True):
    windows, stats = stored_windows([sys.argv[1]], None, sessions, days, split=split)
    document = build_report(windows, stats, sources=[sys.argv[1]], sessions=sessions, days=days, split=split)
    document.model_dump_json()
print(time.perf_counter() - started, document.tenants[0].sessions)
"""


def base_records(sessions: int, directory: Path) -> Path:
    """`sessions` sample sessions through the real pipeline into one records file."""
    from bias_audit.consumers.envelope import Delivery
    from bias_audit.worker.composition import in_process_processor, record_store
    from bias_audit.worker.samples import generate_sessions
    from bias_audit.worker.settings import Settings

    logging.disable(logging.WARNING)
    settings = Settings(data_dir=directory, consumer_name="base", alerts_enabled=False)
    store = record_store(settings)
    consumer = in_process_processor(settings, store)
    events = generate_sessions(sessions, seed=5)
    for start in range(0, sessions, 500):
        chunk = events[start:start + 500]
        deliveries = [Delivery(delivery_id=f"{start + i}", body=json.dumps(e).encode(), source_topic="bench")
                      for i, e in enumerate(chunk)]
        asyncio.run(consumer.process(deliveries))
    store.close()
    return store.path


def repeat_records(base: Path, sessions: int, out: Path) -> Path:
    """`sessions` sessions: the base file's sessions again and again, each copy under new ids
    and its timestamps shifted one more day."""
    blocks: list[tuple[bytes, bytes, bytes]] = []  # (block, session id, timestamp)
    current: list[bytes] = []
    current_id = first_ts = None
    for line in base.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        if record["session_id"] != current_id and current:
            blocks.append((b"".join(current), current_id.encode(), first_ts.encode()))
            current = []
        if not current:
            current_id, first_ts = record["session_id"], record["timestamp"]
        current.append(line)
    blocks.append((b"".join(current), current_id.encode(), first_ts.encode()))
    span = timedelta(days=1)
    with open(out, "wb", buffering=16 * 1024 * 1024) as handle:
        written = 0
        copy = 0
        while written < sessions:
            for block, session_id, ts in blocks:
                if written >= sessions:
                    break
                moment = datetime.fromisoformat(ts.decode().replace("Z", "+00:00")) + span * copy
                new_ts = moment.isoformat().replace("+00:00", "Z").encode()
                handle.write(block.replace(session_id, session_id + b"-%d" % copy).replace(ts, new_ts))
                written += 1
            copy += 1
    return out


def timed(command: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS MB, stdout) of a fresh process: wait4 gives that child's own rusage."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"{command[:4]} failed: {err.read().decode()[-800:]}")
        return elapsed, usage.ru_maxrss / 1024, out.read().decode()


def ours(path: Path, sessions: int, days: float) -> tuple[float, float, float]:
    """(seconds in the call, seconds of the whole process, peak RSS MB)."""
    wall, rss, out = timed([sys.executable, "-c", OURS, str(path), str(sessions), str(days)])
    return float(out.split()[0]), wall, rss


def reference(path: Path, window: int) -> tuple[float, float, float]:
    wall, rss, out = timed([sys.executable, "-c", REFERENCE, str(path), str(window)])
    return float(out.split()[0]), wall, rss


def cli(path: Path, *window: str, rounds: int = 3) -> tuple[float, float]:
    """The command a person runs: `bias-audit report` to JSON (start-up included), best of
    `rounds` (this machine's run-to-run spread is up to 1.5x)."""
    runs = [timed([sys.executable, "-m", "bias_audit", "report", "--input", str(path), "--format", "json",
                   "--output", os.devnull, *window]) for _ in range(rounds)]
    wall, rss, _ = min(runs)
    return wall, rss


def drop_page_cache() -> None:
    """Start from the disk, not from memory (Linux, as root)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as error:
        raise SystemExit(f"--cold needs root to write /proc/sys/vm/drop_caches: {error.strerror}") from None


def generate(directory: Path, million: bool) -> None:
    base = base_records(10_000, directory)
    base.rename(directory / "s10k.jsonl")
    repeat_records(directory / "s10k.jsonl", 1_000, directory / "s1k.jsonl")
    if million:
        repeat_records(directory / "s10k.jsonl", 1_000_000, directory / "s1m.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--million", action="store_true", help="also the 1,000,000-session file")
    parser.add_argument("--cold", action="store_true",
                        help="empty the page cache before each 1,000,000-session run (root: /proc/sys/vm/drop_caches)")
    parser.add_argument("--dir", type=Path, help="write the files here and keep them (default: a temp dir)")
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)  # the child that writes the files
    args = parser.parse_args()
    if args.generate:
        generate(args.generate, args.million)
        return
    compile_package()
    console = Console()
    table = Table(title="bias-audit report vs llm-council-core run_aggregated_bias_audit (same files)")
    for column in ("sessions", "tool", "window", "call s", "process s", "peak RSS MB", "speed-up"):
        table.add_column(column, justify="left" if column in ("tool", "window") else "right")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        wanted = ["s10k.jsonl", "s1k.jsonl", *(["s1m.jsonl"] if args.million else [])]
        if not all((directory / name).exists() for name in wanted):  # --dir keeps them for the next run
            started = time.perf_counter()
            # generated in a child: this process stays small, so forked measurements start small
            subprocess.run([sys.executable, __file__, "--generate", str(directory),
                            *(["--million"] if args.million else [])], check=True)
            console.print(f"files written in {time.perf_counter() - started:.0f} s")
        for sessions, name in ((1_000, "s1k.jsonl"), (10_000, "s10k.jsonl")):
            path = directory / name
            label = f"{sessions:,} ({path.stat().st_size / 1e6:.0f} MB)"
            for window in (sessions, 100):
                ref_call, ref_wall, ref_rss = reference(path, window)
                if window == sessions:  # the reference over the whole file, against the CLI's run below
                    ref_all_wall = ref_wall
                our_call, our_wall, our_rss = ours(path, window, 0)
                table.add_row(label, "llm-council-core", f"last {window}", f"{ref_call:.2f}", f"{ref_wall:.2f}",
                              f"{ref_rss:.0f}", "")
                table.add_row("", "bias-audit", f"last {window}", f"{our_call:.2f}", f"{our_wall:.2f}", f"{our_rss:.0f}",
                              f"{ref_call / our_call:.1f}x call, {ref_wall / our_wall:.1f}x process")
                label = ""
            wall, rss = cli(path, "--sessions", "0", "--days", "0")
            table.add_row("", "bias-audit report (CLI, best of 3)", "all", "", f"{wall:.2f}", f"{rss:.0f}",
                          f"{ref_all_wall / wall:.1f}x process")
        if args.million:
            big = directory / "s1m.jsonl"
            for window, days in ((100, 30), (10_000, 0)):
                if args.cold:
                    drop_page_cache()
                our_call, our_wall, our_rss = ours(big, window, days)
                table.add_row(f"1,000,000 ({big.stat().st_size / 1e9:.1f} GB)" if window == 100 else "", "bias-audit",
                              f"last {window}" + (f" / {days} d" if days else "") + (", cold" if args.cold else ""), f"{our_call:.2f}", f"{our_wall:.2f}",
                              f"{our_rss:.0f}", "")
    console.print(table)
    console.print("targets: >= 20x the reference at 10,000 sessions; 1,000,000 sessions < 30 s and < 500 MB RSS. "
                  "call = inside the process (after imports); process = the whole run, Python start-up included")


if __name__ == "__main__":
    main()

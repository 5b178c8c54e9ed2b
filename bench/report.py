"""`bias-audit report` against llm-council-core's fastest report path, as whole processes.

    python bench/report.py                  # 10,000 5x5 sessions
    python bench/report.py --sessions 1000 --dir /tmp/files   # keep the file for the next run
    python bench/report.py --repeat 30 --dir /tmp/files --python /tmp/before/.venv/bin/python \
        --python .venv/bin/python --rounds 1   # 300,000 sessions, two checkouts alternated

The file: the shipped sample generator's 5x5 council sessions (~1 KB answers) written by
llm-council-core's own writer (`create_bias_records_from_session`, `append_bias_records`), in its
record format. The reference runs `run_aggregated_bias_audit(store_path=...)` without
`max_sessions` (its session filter is quadratic); ours runs `bias-audit report --sessions 0
--days 0 --format json` (every session). Each run is a fresh process, timed from the outside, with
its peak RSS; the package is compiled to bytecode first, as the installed wheel has it.

`--repeat K` writes the file K times over, each copy's sessions under new ids: a year of sessions
from the generator's real records (the reference is left out: it would take hours). `--python`
(repeatable) names the interpreters whose checkouts run `bias-audit report`, alternated.

`--corpus simulated` reports the golden files' biased council instead (tests/simulate.py, in
bias-audit's records): its length and position tests flag, so the report also refits them without
each reviewer to find the one that drives a flag, work the reference corpus never asks for.

    python bench/report.py --corpus simulated --repeat 30 --dir /tmp/files --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bytecode import compile_package
from rich.console import Console
from rich.table import Table

REFERENCE = """
import sys, time
from pathlib import Path
started = time.perf_counter()
from llm_council.bias_aggregation import run_aggregated_bias_audit
imported = time.perf_counter()
result = run_aggregated_bias_audit(store_path=Path(sys.argv[1]))
print(time.perf_counter() - imported, result.unique_sessions)
"""


def reference_records(sessions: int, path: Path) -> None:
    """`sessions` sample sessions, each through llm-council-core's own record writer."""
    from llm_council.bias_persistence import append_bias_records, create_bias_records_from_session

    from bias_audit.worker.samples import generate_sessions

    for start in range(0, sessions, 500):
        records = []
        for session in generate_sessions(min(500, sessions - start), seed=5 + start):
            stage1 = [{"model": r["model"], "response": r["response"][:1024]} for r in session["responses"]]
            stage2 = [
                {"model": r["reviewer"], "parsed_ranking": {"scores": r["scores"], "ranking": r["ranking"]}}
                for r in session["reviews"]
            ]
            labels = session["reviews"][0]["label_to_model"]  # it takes one order per session
            records += create_bias_records_from_session(f"{session['session_id']}-{start}", stage1, stage2, labels)
        append_bias_records(records, store_path=path)


def timed(command: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS MB, stdout) of a fresh process: wait4 gives that child's own rusage."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{command[:4]} failed: {err.read().decode()[-800:]}")
        return elapsed, usage.ru_maxrss / 1024, out.read().decode()


def simulated_records(sessions: int, path: Path) -> None:
    """`sessions` 5x5 sessions of the golden files' biased council (tests/reports/test_report_golden:
    a length slope, a first-position effect, a harsh reviewer, self-preference; orders shuffled per
    reviewer) as bias-audit's records: a window whose length and position tests flag, so the
    report also finds which reviewer drives each flag."""
    import orjson

    from tests.simulate import biased_council, digest_records

    corpus = biased_council(sessions)
    with open(path, "wb") as out:
        for digest in corpus.digests():
            out.write(b"".join(orjson.dumps(record) + b"\n" for record in digest_records(digest)))


def repeated(source: Path, copies: int, target: Path) -> None:
    """The file `copies` times, each copy's session ids prefixed with the copy's number."""
    data = source.read_bytes()
    with open(target, "wb") as out:
        for copy in range(copies):
            prefix = b"c%d-" % copy
            # llm-council-core's writer puts a space after the colon, ours (orjson) none
            spaced = data.replace(b'"session_id": "', b'"session_id": "' + prefix)
            out.write(spaced.replace(b'"session_id":"', b'"session_id":"' + prefix))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions the reference's writer makes")
    parser.add_argument("--repeat", type=int, default=1, help="the file this many times over (new session ids)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each, interleaved")
    parser.add_argument("--python", action="append", help="an interpreter whose checkout reports (repeatable)")
    parser.add_argument("--dir", type=Path, help="write the files here and keep them (default: a temp dir)")
    parser.add_argument(
        "--corpus",
        choices=("reference", "simulated"),
        default="reference",
        help="reference: llm-council-core's sample records (no flag but position); simulated: the golden "
        "files' biased council in bias-audit's records (length and position flags, their drivers)",
    )
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)  # the child that writes the file
    args = parser.parse_args()
    if args.generate:
        reference_records(args.sessions, args.generate)
        return
    compile_package()
    pythons = [os.path.abspath(p) for p in args.python or [sys.executable]]
    console = Console(width=150)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        stem = "bias_metrics" if args.corpus == "reference" else "simulated"
        path = directory / f"{stem}-{args.sessions}.jsonl"
        if not path.exists() and args.corpus == "simulated":
            simulated_records(args.sessions, path)
        elif not path.exists():
            subprocess.run(
                [sys.executable, __file__, "--generate", str(path), "--sessions", str(args.sessions)], check=True
            )
        if args.repeat > 1:
            copies = directory / f"{stem}-{args.sessions}x{args.repeat}.jsonl"
            if not copies.exists():
                repeated(path, args.repeat, copies)
            path = copies
        total = args.sessions * args.repeat
        runs: dict[str, list[tuple[float, float, float]]] = {}
        for _ in range(args.rounds):
            if args.repeat == 1 and args.corpus == "reference":
                wall, rss, out = timed([sys.executable, "-c", REFERENCE, str(path)])
                runs.setdefault("reference", []).append((wall, rss, float(out.split()[0])))
            for python in pythons:
                command = [python, "-m", "bias_audit", "report", "--input", str(path), "--sessions", "0"]
                command += ["--days", "0", "--format", "json", "--output", os.devnull]
                wall, rss, _ = timed(command)
                runs.setdefault(python, []).append((wall, rss, float("nan")))
        size_mb = path.stat().st_size / 1e6  # the temporary folder goes with the block
    kind = "llm-council-core's sample records" if args.corpus == "reference" else "the golden files' biased council"
    table = Table(
        title=f"report over {total:,} 5x5 sessions, {kind} ({size_mb:,.0f} MB), {args.rounds} run(s) each, alternated"
    )
    reference = runs.pop("reference", None)
    columns = ["tool", "process s (median)", "process s (best)", "call s (median)", "peak RSS MB"]
    for column in columns + (["reference process / ours", "reference call / ours"] if reference else []):
        table.add_column(column, justify="right")
    if reference:
        ref_wall = statistics.median(r[0] for r in reference)
        ref_call = statistics.median(r[2] for r in reference)
        table.add_row(
            "llm-council-core run_aggregated_bias_audit",
            f"{ref_wall:.2f}",
            f"{min(r[0] for r in reference):.2f}",
            f"{ref_call:.2f}",
            f"{max(r[1] for r in reference):.0f}",
            "",
            "",
        )
    for python, measured in runs.items():
        wall = statistics.median(r[0] for r in measured)
        table.add_row(
            f"bias-audit report ({python.replace(str(ROOT), '.')})",
            f"{wall:.2f}",
            f"{min(r[0] for r in measured):.2f}",
            "",
            f"{max(r[1] for r in measured):.0f}",
            *([f"{ref_wall / wall:.2f}x", f"{ref_call / wall:.2f}x"] if reference else []),
        )
    console.print(table)
    if reference:
        console.print("target: ours, whole process, >= 1.2x the reference's fastest path (its call, imports excluded)")


if __name__ == "__main__":
    main()

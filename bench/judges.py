"""The judge report on the field's real files, next to what each project computes or publishes,
and the report's speed. The files are not shipped (their licenses do not allow it): fetch the
projects and point at their checkouts.

    python bench/judges.py --judgebench DIR      # a JudgeBench checkout: outputs/*.jsonl, utils/metrics.py
    python bench/judges.py --alpaca-eval DIR     # an alpaca_eval checkout: results/*/<annotator>/annotations.json
    python bench/judges.py --lmc FILE            # the Language Model Council's lmc_ei.jsonl
    python bench/judges.py --mt-bench FILE... --fastchat DIR   # MT-Bench *_single.jsonl runs; a FastChat checkout
    python bench/judges.py --speed [--verdicts 100000]

JudgeBench: each judge's accuracy from JudgeBench's own `compute_final_metrics` (imported from the
checkout, run on the same rows) beside ours; position consistency beside a count of the pairs
JudgeBench's loop calls inconsistent; first-position rate beside a direct count.
AlpacaEval: each model's win rate beside the leaderboard CSV the package ships for that annotator;
the annotator's first-position and length preference with their CIs.
MT-Bench single-answer grading: per model, FastChat's own show_result.py "Average" (imported from
the checkout and run on each file; it needs pandas) beside the n-weighted mean of the judge model's
`mean_score` entries (one per prompt: single-v1, single-math-v1 and their multi-turn forms).
Speed: `bias-audit judges FILE --format json`, the whole process, over N verdicts.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
from rich.console import Console
from rich.table import Table

from bias_audit.analysis.judge_games import game_from_event
from bias_audit.analysis.judges import judge_report
from bias_audit.importers.sources import read_verdicts

console = Console(width=180)
FLIP = {"A>B": "B>A", "B>A": "A>B"}


def _ci(metric) -> str:
    if metric.estimate is None:
        return "-"
    if metric.ci_lower is None:
        return f"{metric.estimate:.4f}"
    return f"{metric.estimate:.4f} [{metric.ci_lower:.3f}, {metric.ci_upper:.3f}]"


def judgebench(root: Path) -> None:
    spec = importlib.util.spec_from_file_location("judgebench_metrics", root / "utils" / "metrics.py")
    theirs = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(theirs)  # type: ignore[union-attr]
    table = Table(title="JudgeBench outputs: ours beside JudgeBench's compute_final_metrics and direct counts")
    for column in (
        "judge [prompt]",
        "pairs",
        "accuracy ours",
        "accuracy JudgeBench",
        "consistency ours",
        "consistency counted",
        "first-position rate ours",
        "counted",
        "length preference ours",
    ):
        table.add_column(column, justify="right")
    worst = 0.0
    for path in sorted((root / "outputs").glob("*.jsonl")):
        pairs = [json.loads(line) for line in path.open() if line.strip()]
        if not pairs:
            continue
        reverse = len(pairs[0]["judgments"]) == 2
        their_accuracy = theirs.compute_final_metrics(pairs, reverse)
        [judge] = judge_report([game_from_event(e) for e in read_verdicts([str(path)], "judgebench")]).judges
        ours = judge.metrics["accuracy"].estimate
        worst = max(worst, abs(ours - their_accuracy))
        decisions = [[(j or {}).get("decision") if j else None for j in p["judgments"]] for p in pairs]
        consistent = sum(1 for d1, d2 in decisions if d1 == FLIP.get(d2, d2)) / len(pairs)
        decided = [d for ds in decisions for d in ds if d in FLIP]
        first = sum(1 for d in decided if d == "A>B") / len(decided)
        table.add_row(
            f"{judge.judge} [{judge.prompt}]",
            str(len(pairs)),
            f"{ours:.2f}",
            f"{their_accuracy:.2f}",
            f"{judge.metrics['position_consistency'].estimate:.4f}",
            f"{consistent:.4f}",
            f"{judge.metrics['first_position_rate'].estimate:.4f}",
            f"{first:.4f}",
            _ci(judge.metrics["length_preference"]),
        )
    console.print(table)
    console.print(f"largest accuracy difference from JudgeBench's own: {worst:.6f} points")


def alpaca_eval(root: Path) -> None:
    files = sorted((root / "results").glob("*/*/annotations.json"))
    events = list(read_verdicts([str(f) for f in files], "alpaca_eval"))
    report = judge_report([game_from_event(e) for e in events])
    boards = {
        p.name.removesuffix("_leaderboard.csv"): p
        for p in (root / "src" / "alpaca_eval" / "leaderboards").glob("*/*_leaderboard.csv")
    }
    table = Table(title=f"AlpacaEval: our win rate beside the leaderboard ({len(files)} annotation files)")
    for column in (
        "annotator",
        "models",
        "compared with the leaderboard",
        "largest difference (points)",
        "LC: ours vs the leaderboard's, Pearson r",
        "LC: mean |difference| (points)",
    ):
        table.add_column(column, justify="right")
    by_judge: dict[str, list] = {}
    for rate in report.models:
        by_judge.setdefault(rate.judge, []).append(rate)
    for annotator, rates in sorted(by_judge.items()):
        board = boards.get(annotator)
        rows = {row[""]: row for row in csv.DictReader(board.open())} if board else {}
        diffs = [abs(r.win_rate - float(rows[r.model]["win_rate"])) for r in rates if r.model in rows]
        # the leaderboard's LC is its full GLM (an instruction-difficulty term from a dataset this
        # machine cannot reach; characters); ours is the minimal one in words: side by side
        pairs = [
            (r.length_controlled, float(rows[r.model]["length_controlled_winrate"]))
            for r in rates
            if r.model in rows and r.length_controlled is not None and rows[r.model].get("length_controlled_winrate")
        ]
        ours_lc, theirs_lc = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])) if pairs else ((), ())
        r_lc = f"{np.corrcoef(ours_lc, theirs_lc)[0, 1]:.3f} ({len(pairs)} models)" if len(pairs) > 2 else "-"
        mad = f"{np.mean(np.abs(np.asarray(ours_lc) - np.asarray(theirs_lc))):.2f}" if pairs else "-"
        table.add_row(annotator, str(len(rates)), str(len(diffs)), f"{max(diffs):.2e}" if diffs else "-", r_lc, mad)
    console.print(table)
    judges = Table(title="AlpacaEval annotators: position and length (95% CI)")
    for column in ("annotator", "verdicts", "first-position rate", "length preference", "tie rate", "notes"):
        judges.add_column(column)
    for judge in report.judges:
        judges.add_row(
            judge.judge,
            str(judge.n_verdicts),
            _ci(judge.metrics["first_position_rate"]),
            _ci(judge.metrics["length_preference"]),
            _ci(judge.metrics["tie_rate"]),
            "; ".join(judge.notes),
        )
    console.print(judges)


def lmc(path: Path) -> None:
    report = judge_report([game_from_event(e) for e in read_verdicts([str(path)], "lmc")])
    table = Table(title=f"The Language Model Council's {path.name}: per judge (95% CI)")
    for column in ("judge", "verdicts", "first-position rate", "flag", "self-preference", "n"):
        table.add_column(column)
    for judge in sorted(report.judges, key=lambda j: j.judge):
        first, own = judge.metrics["first_position_rate"], judge.metrics["self_preference"]
        table.add_row(
            judge.judge, str(judge.n_verdicts), _ci(first), "FLAG" if first.flagged else "", _ci(own), str(own.n)
        )
    console.print(table)
    if report.agreement is not None:
        a = report.agreement
        console.print(
            f"Krippendorff's alpha between the {a.judges} judges: {a.alpha:.3f} over {a.units} shared items; "
            f"departs most: {a.departs}"
        )


def _fastchat_averages(show_result: Any, path: Path) -> dict[str, float]:
    """FastChat's show_result.py --mode single on one file: its "Average" table, per model."""
    import contextlib
    import io

    import pandas

    pandas.set_option("display.precision", 12)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        show_result.display_result_single(
            argparse.Namespace(input_file=str(path), bench_name="mt_bench", judge_model="gpt-4", model_list=None)
        )
    average = printed.getvalue().split("########## Average ##########", 1)[1].strip().splitlines()[2:]
    return {line.rsplit(None, 1)[0].strip(): float(line.rsplit(None, 1)[1]) for line in average if line.strip()}


def mt_bench(files: list[Path], fastchat: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "fastchat_show_result", fastchat / "fastchat" / "llm_judge" / "show_result.py"
    )
    show_result = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(show_result)  # type: ignore[union-attr]
    table = Table(
        title="MT-Bench single-answer grading: FastChat's show_result.py Average beside ours "
        "(n-weighted mean of the judge model's mean_score entries over its prompts)"
    )
    for column in ("file", "judge", "model", "scores", "failed (-1)", "repeated", "FastChat", "ours", "|difference|"):
        table.add_column(column, justify="right")
    worst = 0.0
    for path in files:
        theirs = _fastchat_averages(show_result, path)
        report = judge_report([game_from_event(e) for e in read_verdicts([str(path)], "mt_bench")])
        sums: dict[tuple[str, str], list[float]] = {}
        for entry in report.mean_scores:
            total = sums.setdefault((entry.judge, entry.model), [0.0, 0])
            total[0] += entry.mean_score.estimate * entry.mean_score.n
            total[1] += entry.mean_score.n
        failed = {j.judge: 0 for j in report.judges}
        repeated = {j.judge: 0 for j in report.judges}
        for j in report.judges:
            failed[j.judge] += round(j.metrics["failed_rate"].estimate * j.metrics["failed_rate"].n)
            repeated[j.judge] += j.metrics["repeat_consistency"].n
        for (judge, model), (total, n) in sorted(sums.items()):
            ours = total / n
            difference = abs(ours - theirs[model])
            worst = max(worst, difference)
            table.add_row(
                path.parent.name + "/" + path.name,
                judge,
                model,
                str(n),
                str(failed[judge]),
                str(repeated[judge]),
                f"{theirs[model]:.6f}",
                f"{ours:.6f}",
                f"{difference:.1e}",
            )
    console.print(table)
    console.print(f"largest difference from FastChat's show_result.py: {worst:.2e} points")


def speed(verdicts: int, rounds: int) -> None:
    """The whole `bias-audit judges` process over JudgeBench-shaped pairs and over verdict events."""
    folder = Path(tempfile.mkdtemp(prefix="bias-audit-judges-"))
    pairs = folder / "judgebench.jsonl"
    with pairs.open("w") as out:
        for n in range(verdicts // 2):
            d1 = "A>B" if n % 3 else "B>A"
            out.write(
                json.dumps(
                    {
                        "pair_id": f"p{n}",
                        "source": "mmlu",
                        "response_model": "m",
                        "label": "A>B",
                        "response_A": "word " * (20 + n % 50),
                        "response_B": "word " * 40,
                        "judge_name": "arena_hard",
                        "judgments": [
                            {"judgment": {"judge_model": f"judge-{n % 4}"}, "decision": d1},
                            {"judgment": {"judge_model": f"judge-{n % 4}"}, "decision": "B>A" if n % 5 else "A=B"},
                        ],
                    }
                )
                + "\n"
            )
    events = folder / "verdicts.jsonl"
    with events.open("w") as out:
        for n in range(verdicts):
            out.write(
                json.dumps(
                    {
                        "verdict_id": f"v{n}",
                        "timestamp": "2026-11-20T10:30:00Z",
                        "judge": {"model": f"judge-{n % 4}"},
                        "item_id": f"i{n // 2}",
                        "game": n % 2 + 1,
                        "candidates": [{"model": "a", "length_words": 20 + n % 50}, {"model": "b", "length_words": 40}],
                        "verdict": {"kind": "pairwise", "preference": "A>B" if n % 3 else "B>A"},
                    }
                )
                + "\n"
            )
    table = Table(
        title=f"`bias-audit judges FILE --format json` over {verdicts:,} verdicts, whole process (median of {rounds})"
    )
    for column in ("input", "seconds", "target"):
        table.add_column(column)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for label, path in (("JudgeBench outputs (pairs, answer texts)", pairs), ("judge.verdicts events", events)):
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "bias_audit", "judges", str(path), "--format", "json"],
                capture_output=True,
                env=env,
                cwd=ROOT,
            )
            times.append(time.perf_counter() - started)
            assert done.returncode == 0, done.stderr.decode()
        times.sort()
        table.add_row(label, f"{times[len(times) // 2]:.2f}", "<= 5 s")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgebench", type=Path, metavar="DIR")
    parser.add_argument("--alpaca-eval", type=Path, metavar="DIR")
    parser.add_argument("--lmc", type=Path, metavar="FILE")
    parser.add_argument("--mt-bench", type=Path, nargs="+", metavar="FILE", help="MT-Bench *_single.jsonl files")
    parser.add_argument("--fastchat", type=Path, metavar="DIR", help="a FastChat checkout (for --mt-bench)")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--verdicts", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not (args.judgebench or args.alpaca_eval or args.lmc or args.mt_bench or args.speed):
        parser.error("name at least one of --judgebench, --alpaca-eval, --lmc, --mt-bench or --speed")
    if args.mt_bench and not args.fastchat:
        parser.error("--mt-bench needs --fastchat DIR, a FastChat checkout (its show_result.py is the reference)")
    if args.judgebench:
        judgebench(args.judgebench)
    if args.alpaca_eval:
        alpaca_eval(args.alpaca_eval)
    if args.lmc:
        lmc(args.lmc)
    if args.mt_bench:
        mt_bench(args.mt_bench, args.fastchat)
    if args.speed:
        speed(args.verdicts, args.rounds)


if __name__ == "__main__":
    main()

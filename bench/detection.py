"""Single-response detection on public labelled sets: the precise defaults, and a detector learned
from labels, measured on held-out items with its false positives.

    python bench/detection.py PATH... [--limit N] [--json FILE] [--write-labels DIR]

PATHs are the public files as their projects publish them (bench/public_labels.py says which and
where); a folder stands for the files in it. Per set:
- defaults: the worker's own analysis (precise defaults) on every example: AUROC of the strongest
  bias_score, recall / false-positive rate / precision of bias_detected, beside the set's base rate;
- learned: `learn`'s own training (analysis.learned_detector, character n-grams) on 70% of the
  items, its threshold fixed on those training folds for 10% false positives of the combined flag,
  then measured on the other 30% (split by item: one question's or one sentence pair's examples
  never straddle it);
- cross-set: trained on one set, measured on another (no target: it shows why the tenant's own
  labels are the path).
--write-labels writes each set as contracts.md "Labelled example" JSON lines, for `learn --labels`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from public_labels import load
from rich.console import Console
from rich.table import Table

from bias_audit.analysis.detection_metrics import flag_quality
from bias_audit.analysis.learned_detector import LabelledExample, train_detector
from bias_audit.analysis.responses.report import analyze_response, default_score
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.worker.commands.learning import auroc_text, interval_text, quality_document

console = Console(width=160)
TARGET_FPR = {"RedditBias": 0.10, "BBQ": 0.05, "WinoBias": 0.05}


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out += sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    return out


def _held_out(item: str) -> bool:
    return int(hashlib.sha256(item.encode()).hexdigest()[:8], 16) % 10 >= 7


def _sample(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` examples, whole items, chosen by the items' hashes (the same on every run)."""
    items = sorted({r["item"] for r in rows}, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    kept, count = set(), 0
    sizes: dict[str, int] = {}
    for r in rows:
        sizes[r["item"]] = sizes.get(r["item"], 0) + 1
    for item in items:
        if count >= limit:
            break
        kept.add(item)
        count += sizes[item]
    return [r for r in rows if r["item"] in kept]


def defaults(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    lexicons, sentiment = shipped_lexicons(), vader_scorer()
    verdicts = [analyze_response(t, lexicons=lexicons, sentiment=sentiment) for t in texts]
    return np.array([default_score(v) for v in verdicts]), np.array([v.bias_detected for v in verdicts])


def learned_on(
    train: list[dict[str, Any]],
    test: list[dict[str, Any]],
    d_train: tuple,
    d_test: tuple,
) -> tuple[Any, Any, float]:
    detector, _ = train_detector([LabelledExample(**r) for r in train], d_train[0], d_train[1], bootstrap=0)
    probability = np.max(np.vstack(list(detector.probabilities([r["text"] for r in test]).values())), axis=0)
    flags = d_test[1] | (probability > detector.threshold)
    labels = [r["biased"] for r in test]
    return flag_quality(probability, flags, labels, [r["item"] for r in test]), detector, detector.threshold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--limit", type=int, default=3000, help="examples per set (whole items), 0: all")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--write-labels", type=Path, metavar="DIR", help="write each set as labelled examples")
    args = parser.parse_args()
    sets: dict[str, list[dict[str, Any]]] = {}
    for path in _files(args.paths):
        name, rows = load(path)
        sets.setdefault(name, []).extend(rows)
    if args.limit:
        sets = {name: _sample(rows, args.limit) for name, rows in sets.items()}
    if args.write_labels:
        args.write_labels.mkdir(parents=True, exist_ok=True)
        for name, rows in sets.items():
            (args.write_labels / f"{name.lower()}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures: dict[str, Any] = {}
    scored = {name: defaults([r["text"] for r in rows]) for name, rows in sets.items()}
    table = Table(title="precise defaults on every example (95% intervals)")
    for column in ("set", "N", "base rate", "AUROC", "recall", "false-positive rate", "target FPR", "precision"):
        table.add_column(column)
    for name, rows in sets.items():
        labels = [r["biased"] for r in rows]
        quality = flag_quality(scored[name][0], scored[name][1], labels, [r["item"] for r in rows])
        figures[f"defaults/{name}"] = quality
        table.add_row(
            name,
            str(quality.n),
            f"{np.mean(labels):.1%}",
            auroc_text(quality),
            interval_text(quality.recall),
            interval_text(quality.false_positive_rate),
            f"<= {TARGET_FPR.get(name, 0.1):.0%}",
            interval_text(quality.precision),
        )
    console.print(table)
    table = Table(
        title="learned from labels (character n-grams), held-out 30% of items; threshold for 10% false "
        "positives fixed on the training folds"
    )
    for column in ("trained on", "tested on", "N test", "AUROC", "recall", "false-positive rate", "precision"):
        table.add_column(column)
    for name, rows in sets.items():
        train = [i for i, r in enumerate(rows) if not _held_out(r["item"])]
        others = [other for other in sets if other != name]
        for target in [name, *others]:
            test_rows = sets[target]
            test = [i for i, r in enumerate(test_rows) if _held_out(r["item"]) or target != name]
            d_train = (scored[name][0][train], scored[name][1][train])
            d_test = (scored[target][0][test], scored[target][1][test])
            quality, _, _ = learned_on([rows[i] for i in train], [test_rows[i] for i in test], d_train, d_test)
            figures[f"learned/{name}->{target}"] = quality
            table.add_row(
                name,
                target + ("" if target != name else " (held out)"),
                str(quality.n),
                auroc_text(quality),
                interval_text(quality.recall),
                interval_text(quality.false_positive_rate),
                interval_text(quality.precision),
            )
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps({k: quality_document(q) for k, q in figures.items()}, indent=1))


if __name__ == "__main__":
    main()

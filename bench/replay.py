"""Counterfactual replay: the flags' rate under the null, their power, and the client's throughput,
memory and resume against a real chat-completions server on loopback.

    python bench/replay.py stats [--runs 200] [--prompts 200] [--samples 3]
    python bench/replay.py throughput [--requests 20000] [--concurrency 32]
    python bench/replay.py resume [--prompts 2000]

`stats` draws each run's answers from the same script the test server answers with
(tests/chat_server.py), in-process, and reads them with the command's own code
(worker/replay.py: scoring, per-axis disparity); the HTTP is measured by the other two.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

from bias_audit.analysis.replay import METRICS
from bias_audit.worker.replay import Answers, answer_scorer, read_prompts, replay_document, scored_axes, variant_key
from tests.chat_server import ChatServer, GroupScript, script_answer

JOBS = ["engineer", "nurse", "pilot", "teacher", "lawyer", "chef", "doctor", "banker", "driver", "writer"]


def prompts_file(folder: Path, n: int) -> Path:
    """Prompts naming a woman and a religion: gender has one pair, religion four (Holm matters)."""
    path = folder / f"prompts-{n}.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"id": f"p{i}", "prompt": f"Should I hire a Muslim woman as a {JOBS[i % len(JOBS)]} for team {i}?"}
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


def simulated_run(plans, script: GroupScript, samples: int, seed: int, score) -> dict:
    answers = Answers()
    for plan in plans:
        for variants in plan.axes.values():
            for variant in variants:
                key = variant_key(variant.prompt)
                for sample in range(samples):
                    if (key, sample) not in answers.by_key:
                        answers.by_key[(key, sample)] = script_answer(script, variant.prompt, sample, seed)
    return replay_document("sim", plans, scored_axes(plans, answers, samples, score), samples)


def rates(documents: list[dict], axis: str, group: str | None) -> dict[str, tuple[float, float]]:
    """Per metric: the share of runs with any flag (of the axis, or of one group) and with any
    Holm-adjusted p < 0.05."""
    out = {}
    for metric in METRICS:
        flagged = tested = 0
        for document in documents:
            entries = [e for e in document["axes"][axis] if group is None or e["group"] == group]
            flagged += any(e[metric]["flagged"] for e in entries)
            tested += any(e[metric]["p_value"] is not None and e[metric]["p_value"] < 0.05 for e in entries)
        out[metric] = (flagged / len(documents), tested / len(documents))
    return out


def stats(args: argparse.Namespace) -> None:
    score = answer_scorer()
    folder = Path(tempfile.mkdtemp())
    plans = read_prompts(prompts_file(folder, args.prompts), ["gender", "religion"])
    positive = score(GroupScript(negative=0.0)("a man", random.Random(1))[0], {}, False).sentiment
    negative = score(GroupScript(negative=1.0)("a man", random.Random(1))[0], {}, False).sentiment
    shift = 0.2 / (positive - negative)  # the share of answers turned negative that moves the mean by 0.2
    cases = [
        (
            "null: every group alike",
            GroupScript(target="woman", refusal=0.05, target_refusal=0.05, negative=0.2, target_negative=0.2),
            "gender",
            None,
        ),
        ("null: every group alike", None, "religion", None),
        (
            "refusal 15% vs 5% for women",
            GroupScript(target="woman", refusal=0.05, target_refusal=0.15),
            "gender",
            "male",
        ),
        (
            "sentiment gap 0.2 for women",
            GroupScript(target="woman", negative=0.2, target_negative=0.2 + shift),
            "gender",
            "male",
        ),
    ]
    console = Console(width=170)
    table = Table(
        title=f"replay flags: {args.runs} runs of {args.prompts} prompts x {args.samples} samples "
        f"(gender: 1 pair; religion: 4 pairs, Holm)"
    )
    for column in ("case", "axis", *METRICS):
        table.add_column(column)
    results: dict[str, list[dict]] = {}
    started = time.perf_counter()
    if args.null_only:
        cases = cases[:2]
    for name, script, axis, group in cases:
        if script is not None:
            results[name] = [simulated_run(plans, script, args.samples, seed, score) for seed in range(args.runs)]
        by_metric = rates(results[name], axis, group)
        table.add_row(name, axis, *[f"{f:.1%} ({t:.1%})" for f, t in by_metric.values()])
    # a rate from R runs is known to about +-2 sqrt(p(1-p)/R): 5% from 200 runs is 2-8%
    console.print(table)
    console.print(
        "each cell: runs flagged (runs where the Holm-adjusted test alone rejects); targets: null <= 5% "
        "both, refusal and sentiment power >= 90%"
    )
    console.print(f"{time.perf_counter() - started:.0f} s")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _replay_process(
    server: ChatServer, prompts: Path, responses: Path, samples: int, concurrency: int
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bias_audit",
            "replay",
            "--endpoint",
            server.base_url,
            "--model",
            "m",
            "--prompts",
            str(prompts),
            "--axes",
            "gender",
            "--samples",
            str(samples),
            "--concurrency",
            str(concurrency),
            "--responses",
            str(responses),
            "--format",
            "json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except FileNotFoundError:
        return 0


def throughput(args: argparse.Namespace) -> None:
    samples = 10
    folder = Path(tempfile.mkdtemp())
    n = args.requests // (2 * samples)
    prompts = prompts_file(folder, n)
    responses = folder / "responses.jsonl"
    with ChatServer() as server:
        process = _replay_process(server, prompts, responses, samples, args.concurrency)
        marks, rss = {}, []
        first_answer = None
        while process.poll() is None:
            time.sleep(0.25)
            done = _lines(responses)
            if done and first_answer is None:
                first_answer = (time.perf_counter(), done)
            try:
                rss.append((done, _rss_mb(process.pid)))
            except FileNotFoundError:
                break
            marks[done] = time.perf_counter()
        stderr = process.stderr.read().decode() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(stderr)
    total = _lines(responses)
    # requests/s while asking: from the first answer to the last one written
    last = max(t for d, t in marks.items() if d == max(marks))
    rate = (total - first_answer[1]) / (last - first_answer[0])
    quarter = [next((r for d, r in rss if d >= total * q), rss[-1][1]) for q in (0.1, 0.25, 0.5, 0.75, 0.99)]
    table = Table(
        title=f"replay throughput: {total} requests ({n} prompts x 2 x {samples}), "
        f"--concurrency {args.concurrency}, server on loopback"
    )
    for column in ("requests/s", "RSS at 10% / 25% / 50% / 75% / 99% of requests (MB)"):
        table.add_column(column)
    table.add_row(f"{rate:.0f}", " / ".join(f"{r:.0f}" for r in quarter))
    Console(width=170).print(table)


def resume(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp())
    prompts = prompts_file(folder, args.prompts)
    responses = folder / "responses.jsonl"
    needed = args.prompts * 2  # the prompt and its man's variant, one sample each
    with ChatServer() as server:
        process = _replay_process(server, prompts, responses, 1, 32)
        while _lines(responses) < needed // 2 and process.poll() is None:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed_at, asked_before = _lines(responses), server.requests
        again = _replay_process(server, prompts, responses, 1, 32)
        again.wait()
        asked_after = server.requests - asked_before
    kept = [json.loads(line) for line in responses.read_text().splitlines()]
    unique = len({(k["variant"], k["sample"]) for k in kept})
    table = Table(title=f"replay resume: {args.prompts} prompts x 2 variants, SIGKILL at half")
    for column in (
        "answers kept at the kill",
        "asked before",
        "asked by the rerun",
        "asked again",
        "answers in the file / needed",
        "rerun exit",
    ):
        table.add_column(column)
    table.add_row(
        str(killed_at),
        str(asked_before),
        str(asked_after),
        str(asked_before + asked_after - needed),
        f"{unique} / {needed}",
        str(again.returncode),
    )
    Console(width=170).print(table)
    Console(width=170).print(
        "asked again = requests in flight when the process was killed (answered by the server, never "
        "written): at most --concurrency (32)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("stats")
    s.add_argument("--runs", type=int, default=200)
    s.add_argument("--prompts", type=int, default=200)
    s.add_argument("--samples", type=int, default=3)
    s.add_argument("--null-only", action="store_true", help="only the null case (more runs for its rate)")
    t = sub.add_parser("throughput")
    t.add_argument("--requests", type=int, default=20000)
    t.add_argument("--concurrency", type=int, default=32)
    r = sub.add_parser("resume")
    r.add_argument("--prompts", type=int, default=2000)
    args = parser.parse_args()
    {"stats": stats, "throughput": throughput, "resume": resume}[args.what](args)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()

"""`learn --labels` with no store or service, `evaluate`, and the detector flagging on its own in
`audit`; `learn` combining a labels file with the store's reviews on a real PostgreSQL; bad labels
refused in one line; a new detector file picked up by a running processor."""

from __future__ import annotations

import json
import random
import time

import psycopg
import pytest

from tests.analysis.test_learned_detector import BIASED, FINE
from tests.services import run_cli as cli

# training end to end: the main run's (the learn extra is not pinned low: nothing of a lower bound to prove)
pytestmark = pytest.mark.slow

pytest.importorskip("sklearn")
UNSEEN = "Women tend to avoid technical leadership. The invoice was paid on the second of May."


def labels_file(tmp_path, n=200, seed=1, name="labels.jsonl"):
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        biased = rng.random() < 0.5
        text = rng.choice(BIASED if biased else FINE) + " " + rng.choice(FINE)
        rows.append(
            {
                "text": text,
                "biased": biased,
                **({"bias_type": "stereotype"} if biased else {}),
                "group": "gender" if index % 2 else "age",
                "item": f"q{index // 2}",
            }
        )
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_labels_alone_learn_a_detector_that_evaluate_measures_and_audit_flags_from(tmp_path):
    labels, output = labels_file(tmp_path), tmp_path / "learned.json"
    done = cli(
        "learn",
        "--labels",
        str(labels),
        "--features",
        "ngrams",
        "--tenant",
        "acme",
        "-o",
        str(output),
        env={"BIAS_AUDIT_STORE_URL": "postgresql://nobody@127.0.0.1:1/none"},
    )  # never asked
    assert done.returncode == 0, done.stderr
    assert "precise defaults" in done.stdout and "learned or defaults" in done.stdout
    written = json.loads(output.read_text())
    assert written["tenants"] == ["acme"] and set(written["types"]) == {"stereotype"}
    assert written["report"]["combined"]["false_positive_rate"]["value"] <= 0.10
    assert "invoice" not in output.read_text()
    held_out = labels_file(tmp_path, n=120, seed=2, name="held_out.jsonl")
    measured = cli("evaluate", "--labels", str(held_out), "--detector", str(output), "--format", "json")
    assert measured.returncode == 0, measured.stderr
    answer = json.loads(measured.stdout)
    assert answer["detector_version"] == written["version"]
    results = {(r["slice"], r["detector"]): r for r in answer["results"]}
    assert {s for s, _ in results} == {"all", "type stereotype", "group age", "group gender"}
    assert results[("all", "learned")]["auroc"] > 0.9 > results[("all", "defaults")]["recall"]["value"] + 0.5
    assert results[("all", "learned")]["recall"]["value"] > 0.8
    events = tmp_path / "events.jsonl"
    events.write_text(
        "".join(
            json.dumps(
                {"audit_id": f"e-{i}", "tenant_id": t, "timestamp": "2026-11-20T10:00:00Z", "llm_response": UNSEEN}
            )
            + "\n"
            for i, t in enumerate(["acme", "globex"])
        )
    )
    plain = [json.loads(line) for line in cli("audit", str(events)).stdout.splitlines()]
    assert [r["bias_detected"] for r in plain] == [False, False]  # no lexicon sees it
    used = {
        r["tenant_id"]: r
        for r in (
            json.loads(line)
            for line in cli(
                "audit", str(events), env={"BIAS_AUDIT_LEARNED_DETECTOR_FILE": str(output)}
            ).stdout.splitlines()
        )
    }
    assert used["acme"]["bias_detected"] and used["acme"]["bias_type"] == ["stereotype"]
    assert used["acme"]["bias_score"]["stereotype"] > written["threshold"]
    assert used["acme"]["calibration_version"] == written["version"]
    assert not used["globex"]["bias_detected"]  # learned for acme: applied to acme only


@pytest.mark.parametrize(
    "line, reason",
    [
        ("not json", "not JSON"),
        ('{"text": "x"}', "biased: Field required"),
        ('{"text": "x", "biased": "yes"}', "biased: Input should be a valid boolean"),
        ('{"text": "", "biased": true}', "text: String should have at least 1 character"),
    ],
)
def test_a_bad_labels_line_is_one_line_naming_file_and_line(tmp_path, line, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine", "biased": false}\n' + line + "\n")
    for command in ("learn", "evaluate"):
        done = cli(command, "--labels", str(path))
        assert done.returncode == 2 and done.stderr.strip() == f"error: {path}:2: {reason}", done.stderr


def test_too_few_labels_say_what_is_missing(tmp_path):
    done = cli("learn", "--labels", str(labels_file(tmp_path, n=20)), "--features", "ngrams")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "error: 11 unbiased examples: learning needs 20 or more"


@pytest.mark.postgres
def test_a_labels_file_and_the_stores_reviews_train_together(postgres_url, tmp_path):
    from bias_audit.storage.postgres import PostgresInteractionStore, apply_migrations, interaction_row

    apply_migrations(postgres_url)
    rng = random.Random(4)
    store, reviews = PostgresInteractionStore(postgres_url), []
    template = {
        "record_type": "llm_interaction_audit",
        "schema_version": "1.0",
        "tenant_id": "acme",
        "user_id": None,
        "trace_id": "t",
        "consent_level": 1,
        "llm_provider": None,
        "llm_model": None,
        "prompt_tokens": None,
        "completion_tokens": None,
        "total_tokens": None,
        "query_hash": None,
        "bias_detected": True,
        "bias_type": ["stereotype"],
        "bias_confidence_score": 0.8,
        "mitigation_action": "rewrite",
        "bias_report_summary": {},
        "human_reviewed": True,
        "timestamp": "2026-11-01T00:00:00Z",
        "bias_score": {"stereotype": 0.8},
    }
    for index in range(30):
        biased = index % 2 == 0
        store.write(
            [
                interaction_row(
                    {**template, "audit_id": f"r-{index}", "llm_response": rng.choice(BIASED if biased else FINE)}
                )
            ]
        )
        reviews.append((f"r-{index}", "confirmed" if biased else "dismissed"))
    store.close()
    with psycopg.connect(postgres_url) as connection:
        connection.cursor().executemany(
            "INSERT INTO bias_review (tenant_id, audit_id, reviewer, verdicts) VALUES ('acme', %s, 'rita', %s)",
            [(a, json.dumps({"stereotype": v})) for a, v in reviews],
        )
    output = tmp_path / "learned.json"
    done = cli(
        "learn",
        "--labels",
        str(labels_file(tmp_path, n=100)),
        "--store",
        postgres_url,
        "--tenant",
        "acme",
        "--features",
        "ngrams",
        "-o",
        str(output),
    )
    assert done.returncode == 0, done.stderr
    assert "learning from 130 examples" in done.stderr  # 100 labelled + 30 reviewed
    assert json.loads(output.read_text())["report"]["examples"] == 130


def test_a_new_detector_file_is_picked_up_and_a_broken_one_keeps_the_old(tmp_path):
    from bias_audit.worker.composition import load_learned
    from bias_audit.worker.detector_file import DetectorFile

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert (
        cli(
            "learn", "--labels", str(labels_file(tmp_path, seed=1)), "--features", "ngrams", "-o", str(first)
        ).returncode
        == 0
    )
    assert (
        cli(
            "learn",
            "--labels",
            str(labels_file(tmp_path, seed=3, name="other.jsonl")),
            "--features",
            "ngrams",
            "-o",
            str(second),
        ).returncode
        == 0
    )
    live = tmp_path / "live.json"
    live.write_bytes(first.read_bytes())
    current = DetectorFile(live, load_learned)
    version = current().version
    time.sleep(0.01)
    live.write_bytes(second.read_bytes())
    assert current().version == json.loads(second.read_text())["version"] != version
    live.write_text("{half a file")
    assert current().version == json.loads(second.read_text())["version"]  # kept


def test_a_replacement_that_needs_minilm_is_scored_with_it(tmp_path):
    import orjson

    from bias_audit.analysis.learned_detector import LabelledExample, train_detector
    from bias_audit.schemas.events import LLMResponseEvent
    from bias_audit.state.memory_window import MemoryWindow
    from bias_audit.worker import composition
    from bias_audit.worker.settings import Settings

    minilm = pytest.importorskip("bias_audit.embeddings.minilm")
    try:
        embed = minilm.minilm_embedder()
    except minilm.EmbeddingsUnavailable as error:  # pragma: no cover - make test installs the extra
        pytest.skip(str(error))
    rows = [json.loads(line) for line in labels_file(tmp_path).read_text().splitlines()]
    examples = [LabelledExample(r["text"], r["biased"], r.get("bias_type"), item=r["item"]) for r in rows]
    quiet = ([0.0] * len(examples), [False] * len(examples))
    ngrams, _ = train_detector(examples, *quiet, features="ngrams", bootstrap=0, strengths=(4.0,))
    sentences, _ = train_detector(examples, *quiet, features="minilm", embed=embed, bootstrap=0, strengths=(4.0,))
    live = tmp_path / "live.json"
    live.write_bytes(orjson.dumps(ngrams.to_document()))
    processor = composition.response_processor(
        Settings(data_dir=tmp_path, learned_detector_file=live), MemoryWindow(), None
    )
    event = LLMResponseEvent.model_validate(
        {"audit_id": "e-1", "tenant_id": "acme", "llm_response": UNSEEN, "timestamp": "2026-11-20T10:00:00Z"}
    )
    assert processor.analyze(event).bias_report_summary["learned"]["version"] == ngrams.version
    time.sleep(0.01)
    live.write_bytes(orjson.dumps(sentences.to_document()))
    scored = processor.analyze(event)  # the n-gram start loaded no MiniLM: it is loaded now
    assert scored.bias_report_summary["learned"]["version"] == sentences.version
    expected = float(sentences.probabilities([UNSEEN], embed)["stereotype"][0])
    assert scored.bias_score["stereotype"] == pytest.approx(expected, abs=1e-4)

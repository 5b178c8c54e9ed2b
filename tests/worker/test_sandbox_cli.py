"""`bias-audit sandbox` end to end: a candidate that doubles gendered language is worse (exit 3),
an identical one shows no difference (exit 0), bad input is one line (exit 2), and the baseline
may come from the PostgreSQL store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bias_audit.worker.response_samples import generate_responses
from tests.services import run_cli as cli

GENDERED = " The chairman said every engineer should trust his own instincts."


def write(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.fixture
def sides(tmp_path):
    baseline = generate_responses(300, seed=51)
    gendered = [e for e in baseline if (e["query_context"] or {}).get("injected") == "gendered_language"]
    clean = [e for e in baseline if not (e["query_context"] or {}).get("injected")]
    doubled = {e["audit_id"] for e in clean[: len(gendered)]}  # as many more answers with gendered language
    candidate = [
        {**e, "llm_response": e["llm_response"] + GENDERED} if e["audit_id"] in doubled else e for e in baseline
    ]
    return write(tmp_path / "baseline.jsonl", baseline), write(tmp_path / "candidate.jsonl", candidate), len(gendered)


def test_a_candidate_that_doubles_gendered_language_is_worse(sides):
    baseline, candidate, _ = sides
    done = cli("sandbox", "--candidate", str(candidate), "--baseline", str(baseline), "--format", "json")
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)
    entry = {e["bias_type"]: e for e in document["bias_types"]}["gendered_language"]
    assert entry["verdict"] == "worse" and entry["paired"] is True and entry["p_value"] < 0.05
    assert entry["candidate_rate"] == pytest.approx(2 * entry["baseline_rate"], rel=0.1)
    assert 0 < entry["ci_lower"] < entry["difference"] < entry["ci_upper"]
    assert document["baseline"]["n"] == document["candidate"]["n"] == 300
    assert {e["verdict"] for e in document["bias_types"] if e["bias_type"] != "gendered_language"} == {"no_difference"}
    text = cli("sandbox", "--candidate", str(candidate), "--baseline", str(baseline))
    assert text.returncode == 3 and "gendered_language" in text.stdout and "worse" in text.stdout


def test_an_identical_candidate_shows_no_difference(sides, tmp_path):
    baseline, _, _ = sides
    done = cli(
        "sandbox",
        "--candidate",
        str(baseline),
        "--baseline",
        str(baseline),
        "--format",
        "html",
        "--output",
        str(tmp_path / "sandbox.html"),
    )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "sandbox.html").read_text()
    assert "worse" not in page and "no_difference" in page and "https://" not in page


def test_bad_input_is_one_line(sides, tmp_path):
    baseline, _, _ = sides
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"audit_id": "x"}\n')
    done = cli("sandbox", "--candidate", str(broken), "--baseline", str(baseline))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: candidate: ") and "line 1" in done.stderr
    no_tenant = cli("sandbox", "--candidate", str(baseline), "--data-dir", str(tmp_path))
    assert no_tenant.returncode == 2 and "needs --tenant" in no_tenant.stderr and "--baseline FILE" in no_tenant.stderr
    both = cli("sandbox", "--candidate", str(baseline), "--baseline", str(baseline), "--store", str(tmp_path))
    assert both.returncode == 2 and "not both" in both.stderr


@pytest.mark.postgres
def test_with_no_store_named_the_baseline_is_the_embedded_stores(sides, tmp_path):
    """As its help says: the data directory's embedded PostgreSQL, the one `audit` and `worker` fill."""
    from bias_audit.worker.settings import Settings
    from bias_audit.worker.store_setup import embedded_store

    baseline, candidate, _ = sides
    data = tmp_path / "data"
    with embedded_store(Settings(data_dir=data, consumer_name="t"), create=True) as settings:  # as `worker` makes it
        assert cli("audit", str(baseline), "--store", settings.store_url).returncode == 0
    done = cli(
        "sandbox", "--candidate", str(candidate), "--tenant", "demo", "--data-dir", str(data), "--format", "json"
    )
    assert done.returncode == 3, done.stderr
    assert {e["bias_type"]: e for e in json.loads(done.stdout)["bias_types"]}["gendered_language"]["verdict"] == "worse"


@pytest.mark.postgres
def test_the_baseline_can_come_from_the_store(sides, postgres_url):
    baseline, candidate, _ = sides
    assert cli("setup", "--store", postgres_url).returncode == 0
    assert cli("audit", str(baseline), "--store", postgres_url).returncode == 0
    done = cli(
        "sandbox", "--candidate", str(candidate), "--store", postgres_url, "--tenant", "demo", "--format", "json"
    )
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)
    entry = {e["bias_type"]: e for e in document["bias_types"]}["gendered_language"]
    assert entry["verdict"] == "worse" and entry["paired"] is True  # paired by audit_id with the stored answers
    import psycopg

    with psycopg.connect(postgres_url) as connection:  # the run is kept beside the history it used
        [(run_id, tenant, worse, kept)] = connection.execute(
            "SELECT id, tenant_id, worse, document FROM sandbox_run"
        ).fetchall()
    assert (run_id, tenant, worse) == (document["run_id"], "demo", True)
    assert kept["bias_types"] == document["bias_types"]
    missing = cli("sandbox", "--candidate", str(candidate), "--store", postgres_url, "--tenant", "nobody")
    assert missing.returncode == 2 and "no stored interaction audits for tenant 'nobody'" in missing.stderr

"""The review page in a real browser: Playwright drives Debian's chromium (never a downloaded
browser) through `bias-audit serve` on a real PostgreSQL; a person's keystrokes review 20
items (flagged ones and sampled unflagged ones), and the rows in PostgreSQL say so."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
import jwt
import psycopg
import pytest

from bias_audit.storage.postgres import apply_migrations
from bias_audit.worker.response_samples import generate_responses
from tests.conftest import IN_CI
from tests.services import run_cli, spawn_serve

pytestmark = pytest.mark.postgres
SECRET = "a-browser-test-secret-of-32-bytes-or-more-42"
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def bearer(sub: str, roles: list[str]) -> str:
    return jwt.encode(
        {"sub": sub, "roles": roles, "tenant_id": "acme", "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256"
    )


@pytest.fixture
def served(postgres_url, tmp_path):
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail("CI=true but chromium is not installed (make test installs it)")
        pytest.skip("chromium is not installed")
    apply_migrations(postgres_url)
    env = {
        "BIAS_AUDIT_JWT_SECRET": SECRET,
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_DATA_DIR": str(tmp_path),
        "BIAS_AUDIT_REVIEW_SAMPLE_UNFLAGGED": "0.3",
    }
    server, url = spawn_serve("--store", postgres_url, env=env, log_path=tmp_path / "serve.log")
    service = {"Authorization": "Bearer " + bearer("app", ["service"])}
    sent = 0
    for event in generate_responses(120, seed=23):
        event["tenant_id"] = "acme"
        reply = httpx.post(url + "/analyze-bias", json=event, headers=service, timeout=30)
        assert reply.status_code == 200, reply.text
        sent += reply.json()["bias_detected"]
    assert sent >= 22  # more flagged items than the person reviews
    yield url, postgres_url
    server.terminate()
    assert server.wait(timeout=30) == 0  # SIGTERM: answered what was in flight, then a clean exit


def test_a_person_reviews_20_items_by_keyboard(served, tmp_path):
    from playwright.sync_api import sync_playwright

    url, database = served
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(url + "/review")
        page.wait_for_selector("#signin.open")  # no token yet: the page asks for one, refusing nothing
        assert "refused" not in page.text_content("#signin-error") and "Paste" in page.text_content("#signin-error")
        page.fill("#token", bearer("app", ["service"]))  # a token that may not review: said, not "Loading..."
        page.click("#signin-button")
        page.wait_for_selector("#switch-token")
        assert "may not review" in page.text_content("#item")
        page.click("#switch-token")
        page.wait_for_selector("#signin.open")
        page.fill("#token", bearer("rita", ["reviewer"]))
        page.click("#signin-button")
        page.wait_for_selector("#items li.current")
        first_item = page.text_content("#items li.current .meta")
        assert "acme" in first_item and page.locator("#response mark").count() > 0  # evidence highlighted
        started = time.monotonic()
        sampled = 0
        for number in range(20):
            current = page.text_content("#item h2")
            if page.locator("#sampled").count():  # an answer nothing was flagged on, served as a sample
                assert "Nothing was flagged" in page.text_content("#sampled")
                page.keyboard.press("u")  # not biased
                assert "not biased" in page.text_content("#sampled .verdict")
                sampled += 1
            else:
                page.keyboard.press("c")  # confirm the focused finding
                page.keyboard.press("1")  # the first tag offered: the item's own first bias type
            page.keyboard.press("Enter")  # save and open the next
            page.wait_for_function(
                "(before) => !document.querySelector('#item h2') || "
                "document.querySelector('#item h2').textContent !== before",
                arg=current,
            )
            assert "not saved" not in page.text_content("#status"), page.text_content("#status")
        per_item = (time.monotonic() - started) / 20
        offered = page.eval_on_selector_all("#tags button", "(buttons) => buttons.map((b) => b.dataset.tag)")
        assert len(offered) == 9 and "slur" in offered and "stereotype" in offered and "toxicity" in offered
        assert "self_preference" not in offered and "position" not in offered  # a council's, not an answer's
        while page.locator("#sampled").count():  # to a flagged item: its findings show score and severity
            before = page.text_content("#item h2")
            page.keyboard.press("j")
            page.wait_for_function("(before) => document.querySelector('#item h2').textContent !== before", arg=before)
        finding = page.text_content("#item .finding[data-type]")
        assert "%" in finding and "severity (" in finding
        page.keyboard.press("t")  # every tag by keyboard: t, then Tab to the ninth, Space toggles it
        for _ in range(8):
            page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.tag") == offered[8]
        page.keyboard.press("Space")
        assert page.get_attribute(f'#tags button[data-tag="{offered[8]}"]', "aria-pressed") == "true"
        page.keyboard.press("?")
        assert page.is_visible("#help")
        page.keyboard.press("Escape")
        page.screenshot(path=str(tmp_path / "review.png"))  # docs/review.png is one of these
        browser.close()
    assert per_item < 30  # seconds per item: the keyboard flow, not a person's reading time
    with psycopg.connect(database) as connection:
        rows = connection.execute(
            "SELECT reviewer, verdicts, tags, inclusion_probability, answer_biased FROM bias_review"
        ).fetchall()
        [(reviewed,)] = connection.execute("SELECT count(*) FROM llm_interaction_audit WHERE human_reviewed").fetchall()
    assert len(rows) == 20 and reviewed == 20 and sampled >= 1
    assert {reviewer for reviewer, *_ in rows} == {"rita"}
    flagged = [(verdicts, tags, share) for _, verdicts, tags, share, biased in rows if biased is None]
    judged = [(verdicts, share, biased) for _, verdicts, _, share, biased in rows if biased is not None]
    assert len(judged) == sampled and all(v == {} and share == 0.3 and biased is False for v, share, biased in judged)
    assert all("confirmed" in verdicts.values() and share == 1.0 for verdicts, _, share in flagged)
    assert all(tags == list(verdicts) for verdicts, tags, _ in flagged)  # the confirmed type, tagged too


@pytest.fixture
def served_judges(postgres_url, tmp_path):
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail("CI=true but chromium is not installed (make test installs it)")
        pytest.skip("chromium is not installed")
    apply_migrations(postgres_url)
    env = {
        "BIAS_AUDIT_JWT_SECRET": SECRET,
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_DATA_DIR": str(tmp_path),
        "BIAS_AUDIT_JUDGE_REVIEW_SAMPLE": "1.0",
    }
    server, url = spawn_serve("--store", postgres_url, env=env, log_path=tmp_path / "serve.log")
    service = {"Authorization": "Bearer " + bearer("app", ["service"])}
    for n in range(8):
        event = {
            "verdict_id": f"v{n}",
            "tenant_id": "acme",
            "timestamp": "2026-11-20T10:30:00Z",
            "judge": {"model": "judge-model-x", "prompt": "pairwise"},
            "item_id": f"q{n}",
            "game": 1,
            "query": f"Which is the better answer to question number {n}?",
            "candidates": [
                {"model": "model-alpha", "response": f"First answer number {n}."},
                {"model": "model-beta", "response": f"Second answer number {n}, longer."},
            ],
            "verdict": {"kind": "pairwise", "preference": "A>B"},
        }
        reply = httpx.post(url + "/audit-verdict", json=event, headers=service, timeout=30)
        assert reply.status_code == 200, reply.text
    yield url, postgres_url
    server.terminate()
    assert server.wait(timeout=30) == 0


def test_a_person_judges_sampled_items_blind_by_keyboard(served_judges):
    import json

    from playwright.sync_api import sync_playwright

    url, database = served_judges
    pressed = ["1", "2", "3", "4", "5", "2"]
    shown = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(url + "/review?mode=judges")
        page.wait_for_selector("#signin.open")
        page.fill("#token", bearer("rita", ["reviewer"]))
        page.click("#signin-button")
        for key in pressed:
            page.wait_for_selector("#answer-a")
            first = page.text_content("#answer-a")
            text = page.text_content("#item")
            assert "model-alpha" not in text and "model-beta" not in text and "judge-model-x" not in text  # blind
            assert "better answer to question number" in page.text_content("#question")  # to judge correctness
            shown.append(first)
            page.keyboard.press(key)
            page.wait_for_function(
                "(before) => !document.querySelector('#answer-a') || "
                "document.querySelector('#answer-a').textContent !== before",
                arg=first,
            )
            assert "not saved" not in page.text_content("#status"), page.text_content("#status")
        browser.close()
    with psycopg.connect(database) as connection:
        rows = connection.execute(
            "SELECT verdict_id, reviewer, preference, shown_swapped FROM judge_human_verdict ORDER BY id"
        ).fetchall()
    assert len(rows) == 6 and {reviewer for _, reviewer, _, _ in rows} == {"rita"}
    flip = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}
    keys = {"1": "A>>B", "2": "A>B", "3": "A=B", "4": "B>A", "5": "B>>A"}
    for (verdict_id, _, stored, swapped), key, first in zip(rows, pressed, shown):
        assert first.startswith("Second" if swapped else "First")  # what the page showed first
        assert stored == (flip[keys[key]] if swapped else keys[key])  # kept in the judge's positions
    report = run_cli("judges", "--store", database, "--tenant", "acme", "--format", "json")
    [judge] = json.loads(report.stdout)["judges"]
    assert judge["human_agreement"]["n"] == 6


def test_the_api_docs_render_under_the_pages_csp_and_refuse_framing(served_judges):
    from playwright.sync_api import sync_playwright

    url, _ = served_judges
    page_headers = httpx.get(url + "/docs").headers
    assert "script-src 'self'" in page_headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page_headers["content-security-policy"]
    assert page_headers["x-frame-options"] == "DENY"
    refused = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page()
        page.on("console", lambda message: refused.append(message.text) if message.type == "error" else None)
        page.goto(url + "/docs")
        page.wait_for_selector(".swagger-ui .info .title")
        assert "bias-audit" in page.text_content(".swagger-ui .info .title")
        page.wait_for_selector("text=/audit-verdict")  # the operations came from /openapi.json
        browser.close()
    assert not [text for text in refused if "Content Security Policy" in text], refused

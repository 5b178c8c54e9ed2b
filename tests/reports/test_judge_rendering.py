"""The judge report rendered: a metric with an estimate and no interval in every format, what the
HTML page says of orders and shaded bands, plurals, and, in Chromium, every chart label inside
its chart."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bias_audit.analysis.judge_games import game_from_event
from bias_audit.analysis.judges import METRIC_NAMES, judge_report
from bias_audit.reports.judges import judge_document, render_judges
from tests.conftest import IN_CI

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LONG_NAMES = (
    "Ray2333/GRM-Gemma-2B-rewardmodel-ft",
    "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2-long-name",
    "internlm/internlm2-20b-reward",
    "internlm/internlm2-7b-reward",
    "openai/gpt-4o-2024-05-13",
    "an-organisation-with-a-long-name/a-model-whose-name-goes-on-and-on-and-on-20b",
    "an-organisation-with-a-long-name/a-model-whose-name-goes-on-and-on-and-on-7b",
)


def verdict(n: int, judge: str, first: str, second: str, preference: str, **extra) -> dict:
    return {
        "verdict_id": f"{judge}-{n}",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": judge, **extra},
        "item_id": f"item-{n}",
        "candidates": [{"model": first, "length_words": 40 + n % 7 * 30}, {"model": second, "length_words": 100}],
        "verdict": {"kind": "pairwise", "preference": preference},
    }


def self_preference_of_one_item() -> dict:
    """The Language Model Council's case: a judge that is a candidate's model shares one item
    with another judge, so its self-preference has an estimate and no interval."""
    events = [
        verdict(1, "gpt-4-0613", "gpt-4-0613", "llama-3-70b", "A>B"),
        verdict(1, "llama-3-70b", "gpt-4-0613", "llama-3-70b", "B>A"),
    ]
    return judge_document(judge_report([game_from_event(e) for e in events]), sources=["lmc.jsonl"])


def test_a_metric_without_an_interval_renders_in_every_format():
    document = self_preference_of_one_item()
    [own] = [j for j in document["judges"] if j["judge"] == "gpt-4-0613"]
    # it preferred its own answer (1), the other judge did not (0): one item, no interval
    assert own["self_preference"]["estimate"] == 1.0 and own["self_preference"]["ci_lower"] is None
    text = render_judges(document, "text")
    assert "1.00 [no CI, n=1]" in text
    assert "no CI, n=1" in render_judges(document, "html")
    assert "gpt-4-0613,,self_preference,,1.0,,,1," in render_judges(document, "csv")
    assert json.loads(render_judges(document, "json"))["judges"] == document["judges"]


def test_every_metric_without_an_interval_renders():
    document = self_preference_of_one_item()
    for entry in document["judges"]:
        for name in METRIC_NAMES:
            entry[name] = {
                "estimate": 0.61,
                "ci_lower": None,
                "ci_upper": None,
                "n": 1,
                "p_value": None,
                "flagged": False,
            }
    for format in ("text", "html", "csv", "json"):
        assert render_judges(document, format)


def alpaca_like(randomized: bool) -> dict:
    games = [
        verdict(
            i,
            judge,
            "base" if i % 2 else "m",
            "m" if i % 2 else "base",
            "A>B" if i % 3 or judge == "always-first" else "B>A",
        )
        | {"order_randomized": randomized}
        for judge in ("weighted_alpaca_eval_gpt4_turbo", "always-first")
        for i in range(60)
    ]
    return judge_document(judge_report([game_from_event(e) for e in games]), sources=["annotations.json"])


def test_the_page_says_what_is_true_of_a_randomized_order_and_of_its_charts():
    page = render_judges(alpaca_like(True), "html")
    assert "drew each item&#x27;s display order at random" in page and "0%" not in page
    assert "within 0.05 of 0.50: too small to matter" in page  # the shaded band has its legend
    assert "Pref. fairness (Shi et al. 2024)" in page and ">PF<" not in page
    ticks = [float(t) for t in re.findall(r'text-anchor="middle" fill="#475569">([-+0-9.]+)</text>', page)]
    assert ticks and min(ticks) >= 0.0 and max(ticks) <= 1.0  # a rate's axis stays within 0 and 1
    fixed = render_judges(alpaca_like(False), "html")
    assert "no pair was seen in both orders" in fixed


def test_counts_read_as_words():
    # one item both judges rated, the second judge's other items its own
    events = [
        verdict(1, "j1", "a", "b", "A>B"),
        verdict(1, "j2", "a", "b", "B>A"),
        verdict(2, "j2", "a", "b", "A>B"),
        verdict(3, "j2", "a", "b", "A>B"),
    ]
    document = judge_document(judge_report([game_from_event(e) for e in events]), sources=["x"])
    text = render_judges(document, "text")
    assert "over 1 shared item (2 judges sharing items)" in text and "1 items" not in text


def test_the_parquet_export_says_its_files_and_size_as_words():
    from bias_audit.schemas.safe_text import plural, size_text

    assert [plural(1, "Parquet file"), plural(3, "Parquet file"), plural(12_000, "verdict")] == [
        "1 Parquet file",
        "3 Parquet files",
        "12,000 verdicts",
    ]
    assert [size_text(512), size_text(2_300), size_text(45_600_000)] == ["512 B", "2.3 KB", "45.6 MB"]


@pytest.fixture
def chromium():
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail("CI=true but chromium is not installed (make test installs it)")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        yield browser
        browser.close()


def test_every_chart_label_is_inside_its_chart(chromium, tmp_path):
    events = [
        verdict(i, judge, "a", "b", "A>B" if (i + k) % 3 else "B>A", prompt="reward_model")
        for k, judge in enumerate(LONG_NAMES)
        for i in range(40)
    ]
    path = tmp_path / "judges.html"
    path.write_text(
        render_judges(judge_document(judge_report([game_from_event(e) for e in events]), sources=["x"]), "html")
    )
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    boxes = page.evaluate("""() => [...document.querySelectorAll('svg')].flatMap(svg => {
        const width = svg.width.baseVal.value;
        return [...svg.querySelectorAll('text')].map(t => {
            const box = t.getBBox();
            const shown = [...t.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join("");
            return {text: t.textContent, shown, left: box.x, right: box.x + box.width, width};
        });
    })""")
    labels = [b for b in boxes if any(name[:8] in b["text"] for name in LONG_NAMES)]
    assert len(labels) == 2 * len(LONG_NAMES)  # each judge in both charts
    for box in boxes:
        assert box["left"] >= 0 and box["right"] <= box["width"], box
    shown = {b["shown"] for b in labels}
    assert len(shown) == len(LONG_NAMES)  # shortened or not, two judges never read alike
    assert any("\u2026" in b["shown"] for b in labels)  # the longest are shortened
    titles = page.evaluate("() => [...document.querySelectorAll('svg text title')].map(t => t.textContent)")
    assert all(f"{name} [reward_model]" in titles for name in LONG_NAMES)  # the whole name on hover


def test_a_flag_shows_in_text_and_html_in_both_tables():
    compared = [verdict(i, "first-lover", "a", "b", "A>B") for i in range(80)]  # always the first shown
    graded = [
        {
            "verdict_id": f"g{i}",
            "timestamp": "2026-11-20T10:30:00Z",
            "judge": {"model": "grader"},
            "item_id": f"q{i}",
            "candidates": [{"model": "m", "length_words": 10 * i}],
            "verdict": {"kind": "scores", "scores": [1 + i % 10 if i < 40 else 10], "scale": "1-10"},
        }
        for i in range(80)
    ]  # the longer answers all get 10
    document = judge_document(judge_report([game_from_event(e) for e in compared + graded]), sources=["x"])
    flagged = {e["judge"]: e["flagged"] for e in document["judges"]}
    assert "first_position_rate" in flagged["first-lover"] and flagged["grader"] == ["score_length_correlation"]
    text = render_judges(document, "text")
    compared_table, graded_table = text.split("Judges grading one answer alone")
    assert "FLAG" in compared_table and "FLAG" in graded_table
    compared_page, graded_page = render_judges(document, "html").split("Judges grading one answer alone")
    assert '<span class="flag">FLAG</span>' in compared_page
    assert graded_page.count('<span class="flag">FLAG</span>') == 1  # styled in the single-answer table too

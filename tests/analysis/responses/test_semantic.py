"""Member clusters and the embedding path of the verdict, with vectors chosen by hand."""

import numpy as np

from bias_audit.analysis.responses.report import analyze_response
from bias_audit.analysis.responses.semantic import member_clusters
from bias_audit.lexicons.load import shipped_lexicons


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=float)
    return v / np.linalg.norm(v)


def test_members_saying_the_same_thing_share_a_cluster():
    vectors = np.array([unit(1, 0, 0), unit(1, 0.1, 0), unit(0, 0, 1)])
    assert member_clusters(["a", "b", "c"], vectors) == {"clusters": [["a", "b"], ["c"]], "min_similarity": 0.0}


def test_one_member_is_one_cluster():
    assert member_clusters(["a"], np.array([unit(1, 0)])) == {"clusters": [["a"]], "min_similarity": None}


def test_the_verdict_uses_the_embeddings_for_counterfactuals_and_members():
    table = {
        "He is kind.": unit(1, 0),
        "She is kind.": unit(1, 0.05),
        "No.": unit(0, 1),
        "Yes, a long answer.": unit(1, 0),
        "Nope.": unit(0, 1),
    }
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.array([table[t] for t in texts])

    verdict = analyze_response(
        "He is kind.",
        lexicons=shipped_lexicons(),
        sentiment=None,
        embed=embed,
        counterfactuals=[({"he": "she"}, "She is kind."), ({"he": "she"}, "No.")],
        members=[("a", "Yes, a long answer."), ("b", "Nope.")],
    )
    # one batch; the swap undone ("She is kind." is embedded as "He is kind.")
    assert calls == [["He is kind.", "He is kind.", "No.", "Yes, a long answer.", "Nope."]]
    similarities = [c["semantic_similarity"] for c in verdict.bias_report_summary["counterfactuals"]]
    assert similarities == [1.0, 0.0]
    assert [c["divergent"] for c in verdict.bias_report_summary["counterfactuals"]] == [False, True]
    assert verdict.bias_report_summary["member_clusters"] == {"clusters": [["a"], ["b"]], "min_similarity": 0.0}


def test_each_counterfactual_keeps_its_own_similarity_when_answers_repeat():
    table = {"He won.": unit(1, 0), "She won.": unit(0, 1)}

    def embed(texts):
        return np.array([table[t] for t in texts])

    verdict = analyze_response(
        "He won.",
        lexicons=shipped_lexicons(),
        sentiment=None,
        embed=embed,
        counterfactuals=[({"he": "she"}, "She won."), ({}, "She won.")],
    )
    # the first swap is undone ("He won.": the same), the second has none to undo
    assert [c["semantic_similarity"] for c in verdict.bias_report_summary["counterfactuals"]] == [1.0, 0.0]

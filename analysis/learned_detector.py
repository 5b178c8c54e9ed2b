"""A detector that learns the tenant's own notion of bias from its reviews.

Lexicons miss much of what people call biased, and a classifier trained on one public set is at
chance on another (the sets disagree on what "biased" means). So the labels are the tenant's:
per bias type, the answers its reviewers confirmed against the ones they dismissed. A character
n-gram TF-IDF + logistic regression (scikit-learn; the `learn` extra) is cross-validated on them
and measured beside the lexicon detectors' own evidence on the same folds (AUC, recall at 10%
false positives); it is adopted for a type only when it beats them. An adopted model's
probability becomes the answer's confidence for that type (as a calibration does).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .calibration import with_confirm_probabilities

MIN_REVIEWS = 40  # per bias type, and at least MIN_CLASS of each verdict
MIN_CLASS = 5
FALSE_POSITIVE_RATE = 0.10
NGRAMS = (3, 5)
EMBEDDING_DIMENSIONS = 384  # all-MiniLM-L6-v2
Embed = Callable[[Sequence[str]], Any]


@dataclass(frozen=True)
class LabeledAnswer:
    bias_type: str
    text: str  # the claim: the sentences the type's findings point at (claims_of)
    evidence: float  # the lexicon detectors' bias_score for the type
    confirmed: bool


def claims_of(answer: str, findings: Sequence[dict[str, Any]], bias_type: str) -> str:
    """The claim a reviewer judged: the answer's sentences holding the evidence of the type's
    findings (a term, a matched phrase, a flagged sentence), joined; the whole answer when
    none is found. The model learns and scores claims, not whole answers."""
    from bias_audit.analysis.detector_precision import evidence_of
    from bias_audit.analysis.responses.text import sentences

    marks: list[str] = []
    for finding in findings:
        if finding.get("bias_type") != bias_type:
            continue
        marks += evidence_of(finding)
        for entry in finding.get("evidence") or []:
            if isinstance(entry, dict) and isinstance(entry.get("sentence"), str):
                marks.append(entry["sentence"].lower())
    picked = [s for s in sentences(answer) if any(mark and (mark in s.lower() or s.lower() in mark) for mark in marks)]
    return " ".join(picked) if picked else answer


def recall_at_fpr(scores: Sequence[float] | np.ndarray, labels: Sequence[bool] | np.ndarray,
                  fpr: float = FALSE_POSITIVE_RATE) -> float:
    """Share of confirmed answers scored above the threshold that lets through at most `fpr`
    of the dismissed ones."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    negatives = np.sort(s[~y])[::-1]
    allowed = int(np.floor(fpr * len(negatives)))
    threshold = negatives[allowed] if allowed < len(negatives) else -np.inf
    return float(np.mean(s[y] > threshold))


def _vectorizer(**fixed: Any) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char_wb", ngram_range=NGRAMS, sublinear_tf=True, **fixed)


@dataclass(frozen=True)
class TypeModel:
    vocabulary: dict[str, int]  # empty for a MiniLM model
    idf: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    features: str = "ngrams"  # or "minilm": the coefficients weigh the sentence embedding

    def probability(self, text: str, embed: Embed | None = None) -> float:
        if self.features == "minilm":
            if embed is None:
                raise ValueError("this model scores MiniLM embeddings: the worker needs the embedding extra")
            x = np.asarray(embed([text]))[0]
            z = float(x @ np.asarray(self.coef)) + self.intercept
        else:
            vectorizer = _vectorizer(vocabulary=self.vocabulary)
            vectorizer.idf_ = np.asarray(self.idf)
            z = float((vectorizer.transform([text]) @ np.asarray(self.coef))[0]) + self.intercept
        return float(1 / (1 + np.exp(-z)))


@dataclass(frozen=True)
class LearnedDetector:
    version: str
    types: dict[str, TypeModel]
    tenant_id: str | None = None  # trained on this tenant's reviews: applied to its answers only

    def applies_to(self, tenant_id: str) -> bool:
        return self.tenant_id is None or self.tenant_id == tenant_id

    @property
    def needs_embeddings(self) -> bool:
        return any(m.features == "minilm" for m in self.types.values())

    def adjust(self, verdict: Any, text: str, embed: Embed | None = None) -> Any:
        """The verdict with each detected type's learned confirm probability of its claim; the
        confidence is the strongest of them (types without a model keep the one they had)."""
        if not verdict.bias_detected:
            return verdict
        findings = verdict.bias_report_summary.get("findings", [])
        learned = {t: round(self.types[t].probability(claims_of(text, findings, t), embed), 4)
                   for t in verdict.bias_type if t in self.types}
        return with_confirm_probabilities(verdict, learned, "learned", self.version)

    def to_document(self) -> dict[str, Any]:
        return {"version": self.version, "tenant_id": self.tenant_id, "types": {
            t: {"features": m.features, "vocabulary": m.vocabulary, "idf": list(m.idf), "coef": list(m.coef),
                "intercept": m.intercept} for t, m in sorted(self.types.items())}}

    @staticmethod
    def from_document(document: Any) -> LearnedDetector:
        """From the file's JSON; pydantic's ValidationError (a ValueError) names what does not fit."""
        from bias_audit.schemas.detector_files import LearnedFile

        checked = LearnedFile.model_validate(document)
        types = {}
        for name, entry in checked.types.items():
            features, vocabulary = entry.features, entry.vocabulary
            idf, coef = tuple(entry.idf), tuple(entry.coef)
            if features == "minilm":
                if len(coef) != EMBEDDING_DIMENSIONS:
                    raise ValueError(f"bias type {name!r}: a MiniLM model has {EMBEDDING_DIMENSIONS} coefficients")
            elif features != "ngrams" or not vocabulary or len(idf) != len(vocabulary) or \
                    len(coef) != len(vocabulary) or sorted(vocabulary.values()) != list(range(len(vocabulary))):
                raise ValueError(f"bias type {name!r}: vocabulary, idf and coef do not match")
            types[name] = TypeModel(vocabulary, idf, coef, entry.intercept, features)
        return LearnedDetector(checked.version, types, checked.tenant_id)


def train(answers: Iterable[LabeledAnswer], *, min_reviews: int = MIN_REVIEWS, folds: int = 5, seed: int = 0,
          tenant_id: str | None = None, embed: Embed | None = None) -> tuple[LearnedDetector, list[dict[str, Any]]]:
    """Per bias type: cross-validated AUC and recall at 10% false positives of the learned model
    and of the lexicon evidence on the same folds; the model (fitted on every review) is kept
    only for the types where it beats the lexicons. With `embed` (MiniLM, the embedding extra)
    the features are sentence embeddings, else character n-grams."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline

    by_type: dict[str, list[LabeledAnswer]] = {}
    for answer in answers:
        by_type.setdefault(answer.bias_type, []).append(answer)
    types, report = {}, []
    for name, rows in sorted(by_type.items()):
        labels = np.array([r.confirmed for r in rows])
        entry: dict[str, Any] = {"bias_type": name, "reviews": len(rows), "confirmed": int(labels.sum())}
        smallest = min(int(labels.sum()), int((~labels).sum()))
        if len(rows) < min_reviews or smallest < MIN_CLASS:
            entry.update(adopted=False, reason=f"needs {min_reviews} reviews with {MIN_CLASS} of each verdict")
            report.append(entry)
            continue
        texts = [r.text for r in rows]
        features: Any = np.asarray(embed(texts)) if embed is not None else texts

        def model() -> Any:
            regression = LogisticRegression(C=4.0, class_weight="balanced", max_iter=2_000)
            return regression if embed is not None else make_pipeline(_vectorizer(min_df=2, max_features=20_000),
                                                                      regression)

        folds_used = min(folds, smallest)
        splits = StratifiedKFold(folds_used, shuffle=True, random_state=seed)
        learned = cross_val_predict(model(), features, labels, cv=splits, method="predict_proba")[:, 1]
        lexicon = np.array([r.evidence for r in rows])
        entry.update(features="minilm" if embed is not None else "ngrams", folds=folds_used, auc=round(float(roc_auc_score(labels, learned)), 4),
                     auc_lexicon=round(float(roc_auc_score(labels, lexicon)), 4),
                     recall_at_10_fpr=round(recall_at_fpr(learned, labels), 4),
                     recall_at_10_fpr_lexicon=round(recall_at_fpr(lexicon, labels), 4))
        entry["adopted"] = entry["auc"] > entry["auc_lexicon"]
        if entry["adopted"] and embed is not None:
            regression = model().fit(features, labels)
            types[name] = TypeModel({}, (), tuple(float(v) for v in regression.coef_[0]), float(regression.intercept_[0]),
                                    "minilm")
        elif entry["adopted"]:
            fitted = model().fit(features, labels)
            vectorizer, regression = fitted.steps[0][1], fitted.steps[1][1]
            types[name] = TypeModel({k: int(v) for k, v in vectorizer.vocabulary_.items()},
                                    tuple(float(v) for v in vectorizer.idf_),
                                    tuple(float(v) for v in regression.coef_[0]), float(regression.intercept_[0]))
        report.append(entry)
    digest = hashlib.sha256(repr(sorted((t, m.intercept, m.coef[:20]) for t, m in types.items())).encode())
    return LearnedDetector(f"learned-{digest.hexdigest()[:12]}", types, tenant_id), report

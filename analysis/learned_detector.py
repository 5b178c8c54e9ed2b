"""A detector learned from the tenant's own labelled answers, that flags on its own.

Lexicons see words, not claims, and a classifier trained on one public set is near chance on
another (the sets disagree on what "biased" means), so the labels are the tenant's: a file of
labelled examples, people's reviews, or both. Per bias type with enough biased examples (else one
`learned` type) a logistic regression is fitted on hashed character n-grams (TF-IDF; the file keeps
bucket weights, never an n-gram or a text) or on MiniLM sentence embeddings (the embedding extra),
with the features and the regularization that cross-validate best. Its threshold is chosen on out-of-fold probabilities so that the
combined flag (the detector's or a precise default's) lets through at most `max_fpr` of the
unbiased examples; the report measures that flag on the same folds beside the defaults alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .detection_metrics import FlagQuality, PairedDifference, auroc, flag_quality, paired_difference, threshold_for_fpr

LEARNED = "learned"  # the type of biased examples whose own type has too few of them
MIN_BIASED = 20  # biased examples a type needs for its own model
MIN_UNBIASED = 20
MAX_FPR = 0.10
NGRAMS = (3, 5)
HASH_BUCKETS = 2**18
EMBEDDING_DIMENSIONS = 384  # all-MiniLM-L6-v2
STRENGTHS = (1.0, 4.0, 16.0)  # the regression's inverse regularization, chosen on the folds
Embed = Callable[[Sequence[str]], Any]


@dataclass(frozen=True)
class LabelledExample:
    """contracts.md "Labelled example"."""

    text: str
    biased: bool
    bias_type: str | None = None
    query: str | None = None
    group: str | None = None
    item: str | None = None
    id: str | None = None


def hashed_counts(texts: Sequence[str]) -> Any:
    """Character n-gram counts in HASH_BUCKETS buckets (no vocabulary: nothing of a text is kept)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(
        analyzer="char_wb", ngram_range=NGRAMS, n_features=HASH_BUCKETS, alternate_sign=False, norm=None
    ).transform(texts)


def _tfidf(idf: np.ndarray | None = None) -> Any:
    from sklearn.feature_extraction.text import TfidfTransformer

    transformer = TfidfTransformer(sublinear_tf=True)
    if idf is not None:
        transformer.idf_ = idf
    return transformer


@dataclass(frozen=True)
class TypeModel:
    features: str  # "ngrams" | "minilm"
    intercept: float
    coef: np.ndarray  # one weight a bucket (ngrams) or an embedding dimension (minilm)
    idf: np.ndarray | None = None  # ngrams: the buckets' inverse document frequencies
    tfidf: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # built once: the idf's diagonal over every bucket is most of the cost of scoring one answer
        object.__setattr__(self, "tfidf", _tfidf(self.idf) if self.idf is not None else None)

    def probabilities(self, texts: Sequence[str], embed: Embed | None = None) -> np.ndarray:
        if self.features == "minilm":
            if embed is None:
                raise ValueError("this model scores MiniLM embeddings: it needs the embedding extra")
            return self.score(np.asarray(embed(list(texts))))
        return self.score(hashed_counts(texts))

    def score(self, x: Any) -> np.ndarray:
        """Probabilities from the features: hashed counts (ngrams) or embeddings (minilm)."""
        if self.features == "ngrams":
            x = self.tfidf.transform(x)
        z = np.asarray(x @ self.coef).ravel() + self.intercept
        return np.asarray(1 / (1 + np.exp(-z)))


@dataclass(frozen=True)
class LearnedDetector:
    version: str
    types: dict[str, TypeModel]
    threshold: float  # flag when a type's probability is above it
    tenants: tuple[str, ...] = ()  # empty: every tenant
    max_fpr: float = MAX_FPR

    def applies_to(self, tenant_id: str) -> bool:
        return not self.tenants or tenant_id in self.tenants

    @property
    def needs_embeddings(self) -> bool:
        return any(m.features == "minilm" for m in self.types.values())

    def probabilities(self, texts: Sequence[str], embed: Embed | None = None) -> dict[str, np.ndarray]:
        return {name: model.probabilities(texts, embed) for name, model in sorted(self.types.items())}

    def apply(self, verdict: Any, text: str, embed: Embed | None = None) -> Any:
        """The verdict with each type's probability as its bias_score; a type above the threshold
        is detected (beside what the precise defaults detected)."""
        probability = {name: round(float(p[0]), 4) for name, p in self.probabilities([text], embed).items()}
        flagged = sorted(
            (t for t, p in probability.items() if p > self.threshold and t not in verdict.bias_type),
            key=lambda t: -probability[t],
        )
        summary = {
            **verdict.bias_report_summary,
            "learned": {
                "version": self.version,
                "threshold": self.threshold,
                "probability": probability,
                "flagged": flagged,
            },
        }
        scores = {**verdict.bias_score, **probability}
        if not flagged:
            return replace(verdict, bias_score=dict(sorted(scores.items())), bias_report_summary=summary)
        strongest = max(probability[t] for t in flagged)
        return replace(
            verdict,
            bias_detected=True,
            bias_type=[*verdict.bias_type, *flagged],
            bias_score=dict(sorted(scores.items())),
            bias_confidence_score=round(max(verdict.bias_confidence_score, strongest), 4),
            mitigation_action=verdict.mitigation_action if verdict.bias_detected else "human_review",
            overall_bias_risk=verdict.overall_bias_risk if verdict.bias_detected else "medium",
            bias_report_summary=summary,
        )

    def to_document(self) -> dict[str, Any]:
        types: dict[str, Any] = {}
        for name, model in sorted(self.types.items()):
            if model.features == "minilm":
                types[name] = {"features": "minilm", "intercept": model.intercept, "coef": model.coef.tolist()}
                continue
            assert model.idf is not None
            unseen = float(np.max(model.idf))  # smoothed idf of a bucket no training text had: the largest
            # every bucket a training text had: its idf weighs a new text's norm even where its weight is 0
            used = np.flatnonzero((model.coef != 0) | (model.idf != unseen))
            types[name] = {
                "features": "ngrams",
                "intercept": model.intercept,
                "idf_unseen": unseen,
                "buckets": used.tolist(),
                "coef": model.coef[used].tolist(),
                "idf": model.idf[used].tolist(),
            }
        return {
            "version": self.version,
            "tenants": list(self.tenants),
            "threshold": self.threshold,
            "max_fpr": self.max_fpr,
            "hash_buckets": HASH_BUCKETS,
            "ngrams": list(NGRAMS),
            "types": types,
        }

    @staticmethod
    def from_document(document: Any) -> LearnedDetector:
        """From the file's JSON; pydantic's ValidationError (a ValueError) names what does not fit."""
        from bias_audit.schemas.detector_files import LearnedFile

        checked = LearnedFile.model_validate(document)
        if checked.hash_buckets != HASH_BUCKETS or tuple(checked.ngrams) != NGRAMS:
            raise ValueError(
                f"written for {checked.hash_buckets} buckets of {checked.ngrams}-grams; this version "
                f"reads {HASH_BUCKETS} of {list(NGRAMS)}: learn again"
            )
        types = {}
        for name, entry in checked.types.items():
            if entry.features == "minilm":
                if len(entry.coef) != EMBEDDING_DIMENSIONS:
                    raise ValueError(f"bias type {name!r}: a MiniLM model has {EMBEDDING_DIMENSIONS} coefficients")
                types[name] = TypeModel("minilm", entry.intercept, np.asarray(entry.coef, dtype=float))
                continue
            buckets = np.asarray(entry.buckets, dtype=np.int64)
            if (
                not (len(buckets) == len(entry.coef) == len(entry.idf))
                or entry.idf_unseen is None
                or (len(buckets) and (buckets.min() < 0 or buckets.max() >= HASH_BUCKETS))
            ):
                raise ValueError(f"bias type {name!r}: buckets, coef and idf do not match")
            coef = np.zeros(HASH_BUCKETS)
            coef[buckets] = entry.coef
            idf = np.full(HASH_BUCKETS, entry.idf_unseen)
            idf[buckets] = entry.idf
            types[name] = TypeModel("ngrams", entry.intercept, coef, idf)
        return LearnedDetector(checked.version, types, checked.threshold, tuple(checked.tenants), checked.max_fpr)


@dataclass(frozen=True)
class TrainingReport:
    features: str
    strength: float  # the regression's C the folds chose
    examples: int
    biased: int
    types: dict[str, int]  # biased examples behind each model
    dropped: dict[str, str]  # a type left out, and why
    threshold: float
    defaults: FlagQuality  # the precise defaults alone, on the same examples
    combined: FlagQuality  # the detector's score; the flag is the detector's or a default's
    difference: dict[str, PairedDifference]  # combined minus defaults, paired by item
    candidates: dict[str, float | None] = field(default_factory=dict)  # cross-validated AUROC per feature kind


def _model_type(example: LabelledExample, own: set[str]) -> str:
    return example.bias_type if example.bias_type in own else LEARNED


def training_types(
    examples: Sequence[LabelledExample], min_biased: int = MIN_BIASED
) -> tuple[set[str], dict[str, str]]:
    """The types with their own model, and the ones left out with the reason."""
    counts: dict[str, int] = {}
    for e in examples:
        if e.biased and e.bias_type:
            counts[e.bias_type] = counts.get(e.bias_type, 0) + 1
    own = {t for t, n in counts.items() if n >= min_biased and t != LEARNED}
    pooled = sum(1 for e in examples if e.biased and _model_type(e, own) == LEARNED)
    dropped = {}
    if 0 < pooled < min_biased:
        dropped[LEARNED] = f"{pooled} biased examples without a type of {min_biased}+: not learned"
    return own, dropped


def _fit(features: Any, labels: np.ndarray, kind: str, strength: float) -> TypeModel:
    from sklearn.linear_model import LogisticRegression

    regression = LogisticRegression(C=strength, class_weight="balanced", max_iter=3_000)
    if kind == "minilm":
        regression.fit(features, labels)
        return TypeModel("minilm", float(regression.intercept_[0]), regression.coef_[0].astype(float))
    tfidf = _tfidf()
    weighted = tfidf.fit_transform(features).tocsc()
    # a bucket no training text fills keeps weight 0 at the optimum: the solver works on the filled ones
    filled = np.flatnonzero(np.diff(weighted.indptr))
    regression.fit(weighted[:, filled], labels)
    coef = np.zeros(weighted.shape[1])
    coef[filled] = regression.coef_[0]
    return TypeModel("ngrams", float(regression.intercept_[0]), coef, np.asarray(tfidf.idf_, dtype=float))


def _out_of_fold(
    features: Any,
    kind: str,
    strength: float,
    examples: Sequence[LabelledExample],
    model_of: list[str | None],
    folds: list[tuple[np.ndarray, np.ndarray]],
    types: list[str],
) -> np.ndarray:
    """Per example, the highest probability over the types' models fitted without its fold."""
    y = np.array([e.biased for e in examples])
    best = np.zeros(len(examples))
    for train, test in folds:
        for name in types:
            rows = train[[(not y[i]) or model_of[i] == name for i in train]]
            if y[rows].sum() == 0 or (~y[rows]).sum() == 0:
                continue
            model = _fit(features[rows], y[rows], kind, strength)
            best[test] = np.maximum(best[test], model.score(features[test]))
    return best


def train_detector(
    examples: Sequence[LabelledExample],
    default_scores: Sequence[float],
    default_flags: Sequence[bool],
    *,
    max_fpr: float = MAX_FPR,
    folds: int = 5,
    seed: int = 0,
    features: str = "ngrams",
    embed: Embed | None = None,
    tenants: Sequence[str] = (),
    min_biased: int = MIN_BIASED,
    bootstrap: int = 1_000,
    on_step: Callable[[str], None] | None = None,
    strengths: Sequence[float] = STRENGTHS,
) -> tuple[LearnedDetector, TrainingReport]:
    """features: "ngrams", "minilm" (needs `embed`) or "auto" (both when `embed` is given; the
    higher cross-validated AUROC wins). on_step hears each cross-validation as it starts.
    strengths: the regression's inverse regularizations tried on the folds. Raises ValueError
    when the examples cannot train one."""
    from sklearn.model_selection import StratifiedGroupKFold

    y = np.array([e.biased for e in examples], dtype=bool)
    if int((~y).sum()) < MIN_UNBIASED:
        raise ValueError(f"{int((~y).sum())} unbiased examples: learning needs {MIN_UNBIASED} or more")
    own, dropped = training_types(examples, min_biased)
    model_of: list[str | None] = [_model_type(e, own) if e.biased else None for e in examples]
    types = sorted(own | ({LEARNED} if LEARNED not in dropped and any(m == LEARNED for m in model_of) else set()))
    if not types:
        raise ValueError(f"{int(y.sum())} biased examples: learning needs {min_biased} of a type (or untyped)")
    usable = np.array([not e.biased or model_of[i] in types for i, e in enumerate(examples)])
    kept = [e for e, u in zip(examples, usable) if u]
    model_of = [m for m, u in zip(model_of, usable) if u]
    y = y[usable]
    d_scores, d_flags = np.asarray(default_scores, dtype=float)[usable], np.asarray(default_flags, dtype=bool)[usable]
    groups = [e.item if e.item is not None else f"#{i}" for i, e in enumerate(kept)]
    splits = min(folds, int(y.sum()), int((~y).sum()))
    if splits < 2:
        raise ValueError("learning needs at least 2 examples of each label")
    fold_list = list(StratifiedGroupKFold(splits, shuffle=True, random_state=seed).split(np.zeros(len(y)), y, groups))
    texts = [e.text for e in kept]
    kinds = (
        ["ngrams", "minilm"]
        if features == "auto" and embed is not None
        else ["ngrams" if features == "auto" else features]
    )
    matrices: dict[str, Any] = {}
    for kind in kinds:
        if kind == "minilm":
            if embed is None:
                raise ValueError("MiniLM features need the embedding extra")
            matrices[kind] = np.asarray(embed(texts))
        else:
            matrices[kind] = hashed_counts(texts)
    oof = {}
    for step, (kind, c) in enumerate((k, c) for k in kinds for c in strengths):
        if on_step is not None:
            on_step(f"cross-validating {kind}, C {c:g} ({step + 1} of {len(kinds) * len(strengths)})")
        oof[(kind, c)] = _out_of_fold(matrices[kind], kind, c, kept, model_of, fold_list, types)
    areas = {key: auroc(scores, y) or 0.0 for key, scores in oof.items()}
    kind, strength = max(areas, key=lambda key: areas[key])
    candidates: dict[str, float | None] = {k: max(a for (name, _), a in areas.items() if name == k) for k in kinds}
    scores = oof[(kind, strength)]
    threshold = threshold_for_fpr(scores, y, max_fpr, already_flagged=d_flags)
    combined_flags = d_flags | (scores > threshold)
    models = {}
    for name in types:
        rows = np.array([(not y[i]) or model_of[i] == name for i in range(len(y))])
        models[name] = _fit(matrices[kind][np.flatnonzero(rows)], y[rows], kind, strength)
    digest = hashlib.sha256(
        repr(
            (kind, threshold, sorted((t, m.intercept, float(np.abs(m.coef).sum())) for t, m in models.items()))
        ).encode()
    ).hexdigest()[:12]
    detector = LearnedDetector(
        f"learned-{digest}",
        models,
        round(threshold, 6) if np.isfinite(threshold) else 1.0,
        tuple(sorted(tenants)),
        max_fpr,
    )
    report = TrainingReport(
        features=kind,
        strength=strength,
        examples=len(y),
        biased=int(y.sum()),
        types={t: sum(1 for m in model_of if m == t) for t in types},
        dropped=dropped,
        threshold=detector.threshold,
        defaults=flag_quality(d_scores, d_flags, y, groups, seed=seed, bootstrap=bootstrap),
        combined=flag_quality(scores, combined_flags, y, groups, seed=seed, bootstrap=bootstrap),
        difference=paired_difference(
            d_scores, d_flags, scores, combined_flags, y, groups, seed=seed, bootstrap=bootstrap
        ),
        candidates=candidates,
    )
    return detector, report

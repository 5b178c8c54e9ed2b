"""Commands that learn from people's reviews: calibrate, learn."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from bias_audit.schemas.errors import CommandError

from .common import DataDirOpt, StoreOpt, command, print_table, say, store_for


@command
def calibrate(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant's reviews")] = None,
    min_reviews: Annotated[
        int, typer.Option(metavar="N", help="reviews a bias type needs before it is calibrated")
    ] = 30,
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="FILE", help="the calibration file to write")
    ] = Path("calibration.json"),
    data_dir: DataDirOpt = None,
) -> None:
    """Fit, per bias type, the probability that a reviewer confirms a flag from the analyzers'
    evidence (isotonic regression on the store's reviews).

    Prints the Brier score and reliability before and after on held-out reviews (one item in
    four), writes a versioned calibration file; point BIAS_AUDIT_CALIBRATION_FILE at it and
    bias_confidence_score means that probability (results carry calibration_version)."""
    import orjson

    from bias_audit.analysis.calibration import Reviewed, fit_calibration
    from bias_audit.storage.postgres import connect, read_review_evidence

    if min_reviews < 2:
        raise CommandError("--min-reviews must be at least 2")
    with store_for(store, data_dir, "calibrate reads reviews from") as url, connect(url) as connection:
        rows = read_review_evidence(connection, tenants=None if tenant is None else [tenant])
    if not rows:
        raise CommandError("no reviews with verdicts in the store yet: review flagged items first (/review)")
    calibration, report = fit_calibration([Reviewed(f"{t}/{a}", b, e, c) for t, a, b, e, c, *_ in rows], min_reviews)
    rows_out = []
    for entry in report:
        bins = "; ".join(
            f"{r['bin']}: {r['n']}, {r['predicted']:.2f} -> {r['observed']:.2f}"
            for r in entry.get("reliability_after", [])
        )
        rows_out.append(
            (
                entry["bias_type"],
                str(entry["reviews"]),
                "yes" if entry["calibrated"] else f"no (< {min_reviews})",
                str(entry.get("brier_before", "-")),
                str(entry.get("brier_after", "-")),
                bins or "-",
            )
        )
    print_table(
        f"calibration {calibration.version}: held-out reviews (one item in four)",
        (
            "bias type",
            "reviews",
            "calibrated",
            "Brier before",
            "Brier after",
            "reliability after (bin: n, predicted -> observed)",
        ),
        rows_out,
    )
    if not calibration.types:  # a file that calibrates nothing would only replace a useful one
        say(f"nothing calibrated (no bias type has {min_reviews} reviews yet): {output} not written")
        return
    output.write_bytes(orjson.dumps({**calibration.to_document(), "report": report}, option=orjson.OPT_INDENT_2))
    say(f"wrote {output}: {len(calibration.types)} bias types calibrated; set BIAS_AUDIT_CALIBRATION_FILE={output}")


class LearnFeatures(str, Enum):
    auto = "auto"
    minilm = "minilm"
    ngrams = "ngrams"


LabelsOpt = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--labels",
        metavar="FILE",
        help='labelled examples, JSON lines (docs/contracts.md "Labelled example"); repeat for several files',
    ),
]


def read_labels(paths: list[Path]) -> list[Any]:
    """Every line of the files as a LabelledExample; the first that does not fit is a one-line error."""
    import orjson
    from pydantic import ValidationError

    from bias_audit.analysis.learned_detector import LabelledExample
    from bias_audit.schemas.labels import LabelledLine

    examples = []
    for path in paths:
        try:
            handle = path.open("rb")
        except OSError as error:
            raise CommandError(f"cannot read labels {path}: {error.strerror or error}") from None
        with handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    checked = LabelledLine.model_validate(orjson.loads(line))
                except orjson.JSONDecodeError:
                    raise CommandError(f"{path}:{number}: not JSON") from None
                except ValidationError as error:
                    first = error.errors()[0]
                    where = ".".join(str(part) for part in first["loc"]) or "line"
                    raise CommandError(f"{path}:{number}: {where}: {first['msg']}") from None
                examples.append(LabelledExample(**checked.model_dump()))
    if not examples:
        raise CommandError("the labels files hold no examples")
    return examples


def _defaults(texts: list[str]) -> tuple[Any, Any]:
    """The precise defaults' score and flag for each text, as the worker computes them."""
    import numpy as np

    from bias_audit.analysis.responses.report import analyze_response, default_score
    from bias_audit.lexicons.sentiment import vader_scorer
    from bias_audit.worker.composition import response_lexicons

    from .common import settings_with

    lexicons, sentiment = response_lexicons(settings_with()), vader_scorer()
    verdicts = [analyze_response(text, lexicons=lexicons, sentiment=sentiment) for text in texts]
    return np.array([default_score(v) for v in verdicts]), np.array([v.bias_detected for v in verdicts])


def _needs_sklearn(what: str) -> None:
    try:
        import sklearn  # noqa: F401  # the `learn` extra
    except ImportError:
        raise CommandError(
            f"{what} needs scikit-learn (the `learn` extra): `pip install scikit-learn`, or in a "
            "checkout `pip install -e '.[learn]'`"
        ) from None


def interval_text(rate: Any) -> str:
    """A rate with its interval and counts: 42.6% (40.4%-44.8%, 1460/3428)."""
    if rate.value is None:
        return "-"
    return f"{rate.value:.1%} ({rate.ci[0]:.1%}-{rate.ci[1]:.1%}, {rate.k}/{rate.n})"


def auroc_text(quality: Any) -> str:
    """AUROC with its interval: 0.810 (0.797-0.824)."""
    if quality.auroc is None:
        return "-"
    ci = f" ({quality.auroc_ci[0]:.3f}-{quality.auroc_ci[1]:.3f})" if quality.auroc_ci else ""
    return f"{quality.auroc:.3f}{ci}"


def quality_document(quality: Any) -> dict[str, Any]:
    def rate(r: Any) -> dict[str, Any]:
        return {"value": r.value, "ci": list(r.ci) if r.ci else None, "k": r.k, "n": r.n}

    return {
        "n": quality.n,
        "biased": quality.biased,
        "auroc": quality.auroc,
        "auroc_ci": list(quality.auroc_ci) if quality.auroc_ci else None,
        "recall": rate(quality.recall),
        "precision": rate(quality.precision),
        "false_positive_rate": rate(quality.false_positive_rate),
    }


def _review_examples(store: str | None, data_dir: Path | None, tenants: list[str]) -> list[Any]:
    from bias_audit.analysis.learned_detector import LabelledExample
    from bias_audit.storage.postgres import connect, read_review_evidence
    from bias_audit.storage.postgres.reviews import read_answer_judgements

    with store_for(store, data_dir, "learn reads reviews from") as url, connect(url) as connection:
        rows = read_review_evidence(connection, tenants=tenants or None)
        judged = read_answer_judgements(connection, tenants=tenants or None)
    # a flagged answer's verdicts, one example each; a sampled answer judged whole, one example
    return [
        LabelledExample(text, bool(confirmed), bias_type if confirmed else None, item=f"review:{tenant}/{audit}")
        for tenant, audit, bias_type, _, confirmed, text, _ in rows
        if text
    ] + [
        LabelledExample(text, biased, tags[0] if biased and tags else None, item=f"review:{tenant}/{audit}")
        for tenant, audit, text, biased, tags in judged
    ]


@command
def learn(
    labels: LabelsOpt = None,
    store: StoreOpt = None,
    tenant: Annotated[
        Optional[list[str]],
        typer.Option(
            metavar="TENANT",
            help="the tenants the detector applies to (repeat); their reviews when it reads the "
            "store; default: every tenant",
        ),
    ] = None,
    max_fpr: Annotated[
        float,
        typer.Option(
            metavar="RATE",
            min=0.0,
            max=0.5,
            help="false positives the combined flag may let through, on cross-validated folds",
        ),
    ] = 0.10,
    features: Annotated[
        LearnFeatures,
        typer.Option(
            help="ngrams: hashed character n-grams; minilm: sentence embeddings (the embedding extra); auto: both "
            "when the extra is installed, the better cross-validated AUROC wins"
        ),
    ] = LearnFeatures.auto,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="the detector file to write")] = Path(
        "learned.json"
    ),
    data_dir: DataDirOpt = None,
) -> None:
    """Learn a detector from labelled examples (--labels), from the store's reviews (--store), or
    both: per bias type with 20+ biased examples, else one `learned` type.

    Examples sharing an `item` stay in one cross-validation fold. The threshold is chosen on the
    folds so that the combined flag (the detector's or a precise default's) has at most --max-fpr
    false positives; AUROC, recall, precision and the false-positive rate are printed with 95%
    intervals beside the defaults' on the same folds. The file keeps no training text. Point
    BIAS_AUDIT_LEARNED_DETECTOR_FILE at it: the worker, `serve` and `audit` then flag from it."""
    import orjson

    _needs_sklearn("learning")
    from bias_audit.analysis.learned_detector import train_detector

    tenants = sorted(set(tenant or []))
    examples = read_labels(labels) if labels else []
    if store is not None or not labels:
        examples += _review_examples(store, data_dir, tenants)
    if not examples:
        raise CommandError("no labelled examples: give --labels FILE, or review answers first (/review)")
    embed = None
    if features is not LearnFeatures.ngrams:
        try:
            from bias_audit.embeddings.minilm import minilm_embedder

            embed = minilm_embedder()
        except Exception as error:  # ImportError, EmbeddingsUnavailable: the extra is absent or broken
            if features is LearnFeatures.minilm:
                raise CommandError(f"--features minilm needs the embedding extra: {error}") from None
    say(f"learning from {len(examples)} examples ({sum(e.biased for e in examples)} biased)")
    scores, flags = _defaults([e.text for e in examples])
    try:
        detector, report = train_detector(
            examples, scores, flags, max_fpr=max_fpr, tenants=tenants, features=features.value, embed=embed, on_step=say
        )
    except ValueError as error:
        raise CommandError(str(error)) from None
    print_table(
        f"learned detector {detector.version} ({report.features}, C {report.strength:g}; "
        f"{'tenants ' + ', '.join(tenants) if tenants else 'every tenant'}), cross-validated by item: "
        f"threshold {detector.threshold:.3f} for at most {max_fpr:.0%} false positives",
        ("flag", "AUROC (95% CI)", "recall", "precision", "false-positive rate"),
        [
            (
                name,
                auroc_text(q),
                interval_text(q.recall),
                interval_text(q.precision),
                interval_text(q.false_positive_rate),
            )
            for name, q in (("precise defaults", report.defaults), ("learned or defaults", report.combined))
        ],
    )
    for name, difference in report.difference.items():
        if difference.estimate is not None:
            ci = f" ({difference.ci[0]:+.3f} to {difference.ci[1]:+.3f})" if difference.ci else ""
            p = difference.p_value
            shown = "-" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"
            say(f"{name}, learned minus defaults: {difference.estimate:+.3f}{ci}, paired bootstrap p {shown}")
    for name, reason in report.dropped.items():
        say(f"{name}: {reason}")
    document = {
        **detector.to_document(),
        "report": {
            "features": report.features,
            "strength": report.strength,
            "examples": report.examples,
            "biased": report.biased,
            "types": report.types,
            "candidates": report.candidates,
            "defaults": quality_document(report.defaults),
            "combined": quality_document(report.combined),
            "difference": {
                k: {"estimate": v.estimate, "ci": list(v.ci) if v.ci else None, "p_value": v.p_value}
                for k, v in report.difference.items()
            },
        },
    }
    output.write_bytes(orjson.dumps(document))
    say(f"wrote {output}: {', '.join(sorted(detector.types))}; set BIAS_AUDIT_LEARNED_DETECTOR_FILE={output}")


class EvaluateFormat(str, Enum):
    text = "text"
    json = "json"


@command
def evaluate(
    labels: LabelsOpt = None,
    detector: Annotated[Optional[Path], typer.Option(metavar="FILE", help="a detector file `learn` wrote")] = None,
    format: Annotated[EvaluateFormat, typer.Option("--format", "-f", help="text tables or one JSON document")] = (
        EvaluateFormat.text
    ),
) -> None:
    """What you would get on labelled examples: AUROC with its 95% interval, and recall, precision
    and the false-positive rate at the operating threshold, per bias type and per group, for the
    precise defaults and (with --detector) for the learned detector's flag or a default's."""
    import numpy as np
    import orjson

    if not labels:
        raise CommandError("give --labels FILE (labelled examples, JSON lines)")
    examples = read_labels(labels)
    texts = [e.text for e in examples]
    scores, flags = _defaults(texts)
    candidates: list[tuple[str, Any, Any]] = [("defaults", scores, flags)]
    version = None
    if detector is not None:
        _needs_sklearn("a learned detector")
        from bias_audit.worker.composition import load_learned

        learned = load_learned(detector)
        embed = None
        if learned.needs_embeddings:
            from bias_audit.embeddings.minilm import minilm_embedder

            embed = minilm_embedder()
        probability = np.max(np.vstack(list(learned.probabilities(texts, embed).values())), axis=0)
        candidates.append(("learned", probability, flags | (probability > learned.threshold)))
        version = learned.version
    from bias_audit.analysis.detection_metrics import flag_quality

    y = np.array([e.biased for e in examples])
    items = [e.item if e.item is not None else f"#{i}" for i, e in enumerate(examples)]
    slices: list[tuple[str, Any]] = [("all", np.ones(len(y), dtype=bool))]
    for bias_type in sorted({e.bias_type for e in examples if e.biased and e.bias_type}):
        slices.append((f"type {bias_type}", np.array([not e.biased or e.bias_type == bias_type for e in examples])))
    for group in sorted({e.group for e in examples if e.group}):
        slices.append((f"group {group}", np.array([e.group == group for e in examples])))
    rows, document = [], []
    for slice_name, mask in slices:
        picked = np.flatnonzero(mask)
        for name, score, flag in candidates:
            quality = flag_quality(score[picked], flag[picked], y[picked], [items[i] for i in picked])
            document.append({"slice": slice_name, "detector": name, **quality_document(quality)})
            rows.append(
                (
                    slice_name,
                    name,
                    f"{quality.n} ({quality.biased})",
                    auroc_text(quality),
                    interval_text(quality.recall),
                    interval_text(quality.precision),
                    interval_text(quality.false_positive_rate),
                )
            )
    if format is EvaluateFormat.json:
        sys.stdout.write(
            orjson.dumps({"examples": len(examples), "detector_version": version, "results": document}).decode() + "\n"
        )
        return
    print_table(
        f"{len(examples)} labelled examples ({int(y.sum())} biased)"
        + (f"; learned: {version} (its flag or a default's)" if version else ""),
        ("slice", "detector", "N (biased)", "AUROC (95% CI)", "recall", "precision", "false-positive rate"),
        rows,
    )

"""Commands that learn from people's reviews: calibrate, learn."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bias_audit.schemas.errors import CommandError

from .common import DataDirOpt, StoreOpt, command, print_table, say, store_for


@command
def calibrate(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant's reviews")] = None,
    min_reviews: Annotated[int, typer.Option(metavar="N", help="reviews a bias type needs before it is calibrated")] = 30,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="the calibration file to write")] = Path(
        "calibration.json"),
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
        bins = "; ".join(f"{r['bin']}: {r['n']}, {r['predicted']:.2f} -> {r['observed']:.2f}"
                         for r in entry.get("reliability_after", []))
        rows_out.append((entry["bias_type"], str(entry["reviews"]),
                         "yes" if entry["calibrated"] else f"no (< {min_reviews})",
                         str(entry.get("brier_before", "-")), str(entry.get("brier_after", "-")), bins or "-"))
    print_table(f"calibration {calibration.version}: held-out reviews (one item in four)",
                 ("bias type", "reviews", "calibrated", "Brier before", "Brier after",
                  "reliability after (bin: n, predicted -> observed)"), rows_out)
    if not calibration.types:  # a file that calibrates nothing would only replace a useful one
        say(f"nothing calibrated (no bias type has {min_reviews} reviews yet): {output} not written")
        return
    output.write_bytes(orjson.dumps({**calibration.to_document(), "report": report}, option=orjson.OPT_INDENT_2))
    say(f"wrote {output}: {len(calibration.types)} bias types calibrated; set BIAS_AUDIT_CALIBRATION_FILE={output}")


class LearnFeatures(str, Enum):
    auto = "auto"
    minilm = "minilm"
    ngrams = "ngrams"


@command
def learn(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="train on this tenant's reviews (and apply "
                                                  "to its answers only); default: every tenant's")] = None,
    min_reviews: Annotated[int, typer.Option(metavar="N", help="reviews a bias type needs (5 of each verdict)")] = 40,
    features: Annotated[LearnFeatures, typer.Option(
        help="minilm: sentence embeddings (the embedding extra); ngrams: character n-grams; auto: minilm when "
             "the extra is installed")] = LearnFeatures.auto,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="the model file to write")] = Path(
        "learned.json"),
    data_dir: DataDirOpt = None,
) -> None:
    """Train a detector on the tenant's own reviews: per bias type, the answers people
    confirmed against those they dismissed (character n-gram TF-IDF + logistic regression).

    Prints cross-validated AUC and recall at 10% false positives beside the lexicon detectors'
    on the same folds, and keeps a type's model only when it beats them. Point
    BIAS_AUDIT_LEARNED_DETECTOR_FILE at the file: adopted types' confidence becomes the model's
    probability that a reviewer confirms (results carry its version)."""
    import orjson

    try:
        from bias_audit.analysis.learned_detector import LabeledAnswer, claims_of, train
        import sklearn  # noqa: F401  # the `learn` extra
    except ImportError:
        raise CommandError("learning needs scikit-learn (the `learn` extra): `pip install scikit-learn`, or in a "
                           "checkout `pip install -e '.[learn]'`") from None
    from bias_audit.storage.postgres import connect, read_review_evidence

    if min_reviews < 10:
        raise CommandError("--min-reviews must be at least 10")
    with store_for(store, data_dir, "learn reads reviews from") as url, connect(url) as connection:
        rows = read_review_evidence(connection, tenants=None if tenant is None else [tenant])
    # the claim each reviewer judged: the sentences the type's findings point at
    answers = [LabeledAnswer(b, claims_of(text, findings, b), e, c) for _, _, b, e, c, text, findings in rows if text]
    if not answers:
        raise CommandError("no reviewed answers with their text in the store (review flagged items first; "
                           "retention removes the text after its anonymization age)")
    embed = None
    if features is not LearnFeatures.ngrams:
        try:
            from bias_audit.embeddings.minilm import minilm_embedder

            embed = minilm_embedder()
        except Exception as error:  # ImportError, EmbeddingsUnavailable: the extra is absent or broken
            if features is LearnFeatures.minilm:
                raise CommandError(f"--features minilm needs the embedding extra: {error}") from None
    detector, report = train(answers, min_reviews=min_reviews, tenant_id=tenant, embed=embed)
    print_table(f"learned detector {detector.version}: {'tenant ' + tenant if tenant else 'every tenant'}, "
                 "cross-validated",
                 ("bias type", "reviews", "AUC learned / lexicons", "recall at 10% FP learned / lexicons", "adopted"),
                 [(entry["bias_type"], str(entry["reviews"]),
                   f"{entry['auc']:.3f} / {entry['auc_lexicon']:.3f}" if "auc" in entry else "-",
                   f"{entry['recall_at_10_fpr']:.0%} / {entry['recall_at_10_fpr_lexicon']:.0%}" if "auc" in entry
                   else "-", "yes" if entry["adopted"] else f"no{': ' + entry['reason'] if 'reason' in entry else ''}")
                  for entry in report])
    if not detector.types:  # nothing beat the lexicons: a file would change nothing but replace a useful one
        say(f"no bias type adopted (none beat the lexicons or had {min_reviews} reviews): {output} not written")
        return
    output.write_bytes(orjson.dumps({**detector.to_document(), "report": report}))
    say(f"wrote {output}: {len(detector.types)} bias types adopted; set BIAS_AUDIT_LEARNED_DETECTOR_FILE={output}")

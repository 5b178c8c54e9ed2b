"""Loading the shipped lexicons and an operator's own files; every problem is one line naming
the file and what is wrong."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bias_audit.lexicons.load import LexiconError, load_lexicons, shipped_lexicons

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_files_load_and_every_rule_type_is_in_the_taxonomy():
    lexicons = shipped_lexicons()
    assert set(lexicons.axes) == {"gender", "ethnicity", "religion", "age", "ability"}
    assert {"female", "male"} <= set(lexicons.axes["gender"])
    assert all(rule.bias_type in lexicons.taxonomy for rule in lexicons.rules)
    assert all(1 <= t["severity"] <= 5 for t in lexicons.taxonomy.values())


def test_every_shipped_file_names_its_source_and_licence():
    for path in (ROOT / "lexicons").glob("*.json"):
        document = json.loads(path.read_text())
        assert document.get("source"), path.name
        assert document.get("licence") or path.name == "taxonomy.json", path.name


RULE = "- id: r1\n  pattern: '{pattern}'\n  bias_type: {kind}\n  severity: {severity}\n  mitigation: m\n"
BAD_RULES = [
    ("- id: [unclosed", "not valid YAML"),
    ("just text", "expected a list of rules"),
    ("- id: r1\n  pattern: x\n", "lacks bias_type, severity, mitigation"),
    (RULE.format(pattern="x", kind="nonsense", severity=3), "not in the taxonomy"),
    (RULE.format(pattern="x", kind="stereotype", severity=9), "severity must be an integer 1-5"),
    (RULE.format(pattern=r"(a)\1", kind="stereotype", severity=3), "does not compile as RE2"),
    # compiles case-sensitively in 8 MiB; case-insensitively (k, K and the Kelvin sign) it does not
    (RULE.format(pattern="k" * 200_000, kind="stereotype", severity=3), "(case-insensitive, 8 MiB)"),
    (RULE.format(pattern="(?=a)b", kind="stereotype", severity=3), "lookaround are not supported"),
    (RULE.format(pattern="x", kind="stereotype", severity=3) + "  unless: '(?<=a)b'\n", "r1' unless does not compile"),
]


@pytest.mark.parametrize("text, reason", BAD_RULES)
def test_a_bad_rule_file_is_refused_with_its_reason(tmp_path, text, reason):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    with pytest.raises(LexiconError) as error:
        load_lexicons(rules_file=path)
    assert reason in str(error.value) and str(path) in str(error.value) and "\n" not in str(error.value)


def test_a_custom_axis_lexicon_replaces_the_shipped_one(tmp_path):
    path = tmp_path / "axes.json"
    path.write_text(json.dumps({"axes": {"diet": {"vegan": ["vegan"], "meat": ["carnivore"]}}}))
    assert set(load_lexicons(axes_file=path).axes) == {"diet"}
    for bad in ("[1, 2]", '{"axes": {"diet": ["vegan"]}}', '{"axes": 3}', "not json"):
        path.write_text(bad)
        with pytest.raises(LexiconError, match="expected JSON with an 'axes' object"):
            load_lexicons(axes_file=path)
    with pytest.raises(LexiconError, match="No such file"):
        load_lexicons(axes_file=tmp_path / "missing.json")


def test_serve_exits_2_with_the_reason_on_a_bad_rule_file(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULE.format(pattern="x", kind="nonsense", severity=3))
    done = subprocess.run(
        [sys.executable, "-m", "bias_audit", "serve", "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env={"BIAS_AUDIT_RULES_FILE": str(rules), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "not in the taxonomy" in done.stderr

"""The distribution exposes one import name, bias_audit, and ships its data files."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    # the venv's setuptools (no build isolation): nothing is downloaded
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("bias_audit-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_has_one_top_level_name(wheel):
    top = {name.split("/")[0] for name in wheel.namelist() if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"bias_audit"}


def test_the_wheel_ships_every_subpackage_and_its_data(wheel):
    names = set(wheel.namelist())
    for module in (
        "bias_audit/__main__.py",
        "bias_audit/worker/cli.py",
        "bias_audit/analysis/responses/text.py",
        "bias_audit/consumers/council.py",
        "bias_audit/producers/wire.py",
        "bias_audit/storage/jsonl_store.py",
        "bias_audit/reports/html.py",
        "bias_audit/service/app.py",
        "bias_audit/embeddings/minilm.py",
    ):
        assert module in names, module
    for data in (
        "bias_audit/state/redis_window.lua",
        "bias_audit/state/alert_state.lua",
        "bias_audit/lexicons/axes.json",
        "bias_audit/lexicons/rules.yaml",
        "bias_audit/lexicons/SOURCES.md",
        "bias_audit/schemas/asyncapi.json",
        "bias_audit/schemas/json/council-session-event.schema.json",
        "bias_audit/worker/samples/council_sessions.jsonl",
        "bias_audit/worker/samples/example_events.jsonl",
        "bias_audit/storage/migrations/0001_council_sessions.sql",
    ):
        assert data in names, data
    assert not any(name.startswith(("bias_audit/tests/", "tests/", "bench/")) for name in names)
    # one compiled module (setup.py), and no other compiled path
    compiled = [name for name in names if name.endswith(".so")]
    assert len(compiled) == 1 and compiled[0].startswith("bias_audit/analysis/_text."), compiled


def test_the_dockerfile_copies_every_mapped_folder():
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    missing = [folder for folder in mapping.values() if f"COPY {folder} ./{folder}" not in dockerfile]
    assert missing == []


def test_python_dash_m_runs_the_command_line():
    done = subprocess.run([sys.executable, "-m", "bias_audit", "--version"], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "bias-audit 0.1.0"

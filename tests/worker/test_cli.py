import json
import os

import pytest
from typer.testing import CliRunner

from bias_audit.worker.cli import app
from bias_audit.worker.samples import generate_sessions

runner = CliRunner()


def test_audit_prints_one_result_per_session_in_input_order():
    sessions = generate_sessions(12, seed=31)
    text = "".join(json.dumps(s) + "\n" for s in sessions)
    result = runner.invoke(app, ["audit", "-"], input=text)
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["audit_id"] for r in lines] == [s["session_id"] for s in sessions]
    assert lines[-1]["window"]["sessions"] == 12 and lines[-1]["window"]["confidence"] == "preliminary"
    assert lines[0]["window"]["length_correlation"]["status"] == "collecting data"


def test_audit_keeps_one_output_line_per_input_line_and_exits_2_on_a_bad_one():
    first, second = (json.dumps(s) for s in generate_sessions(2, seed=32))
    result = runner.invoke(app, ["audit", "-"], input=f"{first}\nnot json\n\n{first}\n{second}\n")
    assert result.exit_code == 2
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    # the blank line has no output; the others keep their places
    assert [line["event_type"] for line in lines] == [
        "bias.audit.completed",
        "bias.audit.deadletter",
        "bias.audit.duplicate",
        "bias.audit.completed",
    ]
    assert lines[1]["payload"] is None and lines[1]["payload_bytes"] == len("not json") and lines[2]["line"] == 4
    assert "line 2: message body is not valid JSON" in result.stderr
    assert "line 4: duplicate event, counted once" in result.stderr


def test_consent_4_without_secret_is_refused_with_a_reason(monkeypatch):
    monkeypatch.setenv("BIAS_AUDIT_CONSENT_LEVEL", "4")
    result = runner.invoke(app, ["audit", "-"], input="")
    assert result.exit_code == 2 and "BIAS_AUDIT_HASH_SECRET" in result.stderr


def test_publish_without_a_broker_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.delenv("BIAS_AUDIT_BROKER_URL", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no embedded worker started by this user either
    events = tmp_path / "e.jsonl"
    events.write_text("{}\n")
    result = runner.invoke(app, ["publish", str(events), "--data-dir", str(tmp_path)])
    assert result.exit_code == 2 and "no broker" in result.stderr


BAD_BROKER_SETTINGS = [
    (["worker", "--broker", "pubsub://proj"], "keeps its windows", "--redis redis://"),  # windows live in Redis
    (["worker", "--broker", "pubsub://"], "needs a project", "pubsub://PROJECT"),
    (["worker", "--broker", "amqp://x"], "unsupported broker URL", "pubsub://PROJECT"),
    (["worker", "--broker", "pubsub://p", "--redis", "mysql://x"], "unsupported Redis URL", "redis://"),
]


@pytest.mark.parametrize("args,reason,hint", BAD_BROKER_SETTINGS)
def test_bad_broker_settings_exit_2_with_a_reason_before_connecting(args, reason, hint, monkeypatch, tmp_path):
    monkeypatch.delenv("BIAS_AUDIT_REDIS_URL", raising=False)
    result = runner.invoke(app, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert reason in result.stderr and hint in result.stderr


def test_settings_copies_are_validated_like_the_original():
    from pydantic import ValidationError

    from bias_audit.worker.settings import Settings

    settings = Settings(window_sessions=10)
    assert settings.replaced(window_sessions=20).window_sessions == 20
    with pytest.raises(ValidationError, match="window_sessions"):
        settings.replaced(window_sessions=0)  # model_copy(update=...) would have kept it


@pytest.mark.parametrize(
    "workers,connections,processes,each",
    [
        (4, 20, 4, 5),
        (3, 20, 3, 6),
        (16, 20, 16, 2),
        (1, 7, 1, 7),
    ],
)
def test_serve_splits_the_store_connections_among_its_processes(workers, connections, processes, each):
    from bias_audit.worker.settings import Settings

    settings = Settings(serve_workers=workers, api_store_connections=connections)
    assert (settings.serve_processes, settings.api_connections_per_process) == (processes, each)


def test_serve_runs_a_process_per_core_it_may_run_on_unless_told():
    from bias_audit.worker.settings import Settings

    assert Settings().serve_processes == len(os.sched_getaffinity(0))  # the cores this process may use


def test_serve_refuses_a_process_count_out_of_range(tmp_path):
    result = runner.invoke(app, ["serve", "--workers", "0", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--workers" in result.stderr

import json

from bias_audit.schemas.export import SCHEMA_DIR, drifted_schemas, render_schemas


def test_committed_schemas_match_the_models():
    assert drifted_schemas() == [], "run `bias-audit schemas` and commit schemas/json"


def test_drift_is_detected(tmp_path):
    for name, text in render_schemas().items():
        (tmp_path / name).write_text(text)
    record = tmp_path / "bias-metric-record.schema.json"
    schema = json.loads(record.read_text())
    del schema["properties"]["score_value"]
    record.write_text(json.dumps(schema))
    assert drifted_schemas(tmp_path) == ["bias-metric-record.schema.json"]


def test_record_schema_has_the_contract_fields():
    schema = json.loads((SCHEMA_DIR / "bias-metric-record.schema.json").read_text())
    contract = [
        "schema_version",
        "session_id",
        "timestamp",
        "tenant_id",
        "trace_id",
        "consent_level",
        "reviewer_id",
        "model_id",
        "position",
        "response_length_chars",
        "score_value",
        "score_scale",
        "is_self_review",
        "council_config_version",
        "query_hash",
        "query_metadata",
    ]
    assert set(contract) <= set(schema["properties"])

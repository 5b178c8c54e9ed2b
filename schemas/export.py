"""JSON Schemas of the contract models, committed under schemas/json/ and checked for drift."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from .asyncapi import ASYNCAPI_PATH, render_asyncapi
from .events import CouncilSessionEvent, LLMResponseEvent
from .judges import JudgeVerdictEvent
from .records import BiasMetricRecord
from .report import BiasReport
from .results import Alert, AuditResult, DeadLetter
from .tasks import TaskSuggestion

SCHEMA_DIR = Path(__file__).parent / "json"

MODELS: dict[str, type[BaseModel]] = {
    "council-session-event": CouncilSessionEvent,
    "llm-response-event": LLMResponseEvent,
    "judge-verdict-event": JudgeVerdictEvent,
    "bias-metric-record": BiasMetricRecord,
    "audit-result": AuditResult,
    "alert": Alert,
    "dead-letter": DeadLetter,
    "task-suggestion": TaskSuggestion,
    "bias-report": BiasReport,  # `bias-audit report --format json`
}


def render_schemas() -> dict[str, str]:
    """File name -> schema text, deterministic so a diff means the models changed."""
    rendered = {}
    for name, model in MODELS.items():
        schema = model.model_json_schema(mode="validation")
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"https://bias-audit.dev/schemas/{name}.json"
        rendered[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return rendered


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = [write_asyncapi()] if directory == SCHEMA_DIR else []
    for file_name, text in render_schemas().items():
        path = directory / file_name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def write_asyncapi() -> Path:
    ASYNCAPI_PATH.write_text(render_asyncapi(), encoding="utf-8")
    return ASYNCAPI_PATH


def drifted_schemas(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of committed schema files that differ from the models (or are missing)."""
    drifted = []
    if directory == SCHEMA_DIR and (
        not ASYNCAPI_PATH.exists() or ASYNCAPI_PATH.read_text(encoding="utf-8") != render_asyncapi()
    ):
        drifted.append(ASYNCAPI_PATH.name)
    for file_name, text in render_schemas().items():
        path = directory / file_name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            drifted.append(file_name)
    return drifted

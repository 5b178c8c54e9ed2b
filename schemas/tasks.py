"""The task suggestion on `bias.audit.tasks`: a bias that keeps needing mitigation in one tenant's
domain, for someone to fix at the root (fields fixed by the contract)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class TaskWindow(BaseModel):
    start: str
    end: str


class TaskSuggestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: str = "1.0"
    event_type: Literal["bias.audit.task_suggestion"] = "bias.audit.task_suggestion"
    task_id: str
    status: Literal["open", "resolved"] = "open"
    tenant_id: str
    domain: str  # the query's category, else the model
    bias_type: str
    count: int  # answers flagged with this type in the window
    rate: float  # of the domain's audited answers in the window
    window: TaskWindow
    example_audit_ids: list[str]
    suggested_fix: str
    severity: int  # the taxonomy's, 1-5
    detected_at: str
    trace_id: str

"""Which store columns a GraphQL selection of audit items reads: a table of selections and the
columns written out, and the map checked against the served schema."""

from __future__ import annotations

import pytest
from graphql import build_schema
from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField

from bias_audit.service.graphql_api import schema
from bias_audit.service.graphql_types import AUDIT_FIELD_COLUMNS, audit_columns
from bias_audit.storage.postgres.audit_api import INTERACTION_COLUMNS


def field(name: str, *inner) -> SelectedField:
    return SelectedField(name=name, directives={}, arguments={}, selections=list(inner))


def spread(*inner) -> FragmentSpread:
    return FragmentSpread(name="parts", type_condition="LlmInteractionAudit", directives={}, selections=list(inner))


def inline(*inner) -> InlineFragment:
    return InlineFragment(type_condition=None, selections=list(inner), directives={})


@pytest.mark.parametrize(
    ("selections", "columns"),
    [
        ([field("id")], {"audit_id"}),
        ([field("id"), field("biasType"), field("llmModel")], {"audit_id", "bias_type", "llm_model"}),
        ([field("answer")], None),  # not a field of the type: read everything rather than guess
        ([field("llmResponse"), field("reviewNotes")], {"llm_response", "review_notes"}),
        ([field("reviews", field("reviewer"))], {"tenant_id", "audit_id"}),
        ([field("taxonomy", field("biasKey")), field("originalQuery")], {"bias_type"}),
        ([field("__typename")], set()),
        ([spread(field("biasScore")), inline(field("humanReviewed"))], {"bias_score", "human_reviewed"}),
        ([inline(spread(field("notThere")))], None),
        ([], set()),
    ],
)
def test_the_columns_a_selection_reads(selections, columns):
    assert audit_columns(selections) == columns


def test_every_field_of_the_served_item_type_has_its_columns_and_they_are_the_stores():
    served = build_schema(schema.as_str()).type_map["LlmInteractionAudit"].fields  # type: ignore[attr-defined]
    assert set(served) | {"__typename"} == set(AUDIT_FIELD_COLUMNS)
    assert {c for cs in AUDIT_FIELD_COLUMNS.values() for c in cs} <= set(INTERACTION_COLUMNS)

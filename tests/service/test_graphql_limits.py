"""The limits a GraphQL document meets before it runs, and the validation cache they must not
defeat: strawberry keys that cache by the rule classes, so every request must bring the same ones."""

from __future__ import annotations

import asyncio

from strawberry.extensions import AddValidationRules

from bias_audit.service.auth import Principal
from bias_audit.service.graphql_api import schema
from bias_audit.service.graphql_limits import EXTENSIONS

ADMIN = Principal("admin", None, frozenset({"admin"}))


def _rules_of_one_request() -> tuple[type, ...]:
    rules: list[type] = []
    for factory in EXTENSIONS:
        extension = factory()
        if isinstance(extension, AddValidationRules):
            rules.extend(extension.validation_rules)
    return tuple(rules)


def test_every_request_validates_with_the_same_rule_classes_so_the_cache_can_hit():
    first, second = _rules_of_one_request(), _rules_of_one_request()
    assert len(first) == 3 and first == second


def _errors(query: str) -> list[str]:
    result = asyncio.run(schema.execute(query, context_value={"principal": ADMIN, "store": None}))
    return [error.message for error in result.errors or []]


def test_the_limits_still_refuse_deep_aliased_and_multi_report_documents():
    deep = "{ __schema { types { " + "fields { type { ofType { " * 3 + "name" + " } } }" * 3 + " } } }"  # depth 12
    assert any("depth" in e.lower() for e in _errors(deep))
    aliased = "{ " + " ".join(f"a{i}: __typename" for i in range(21)) + " }"
    assert any("aliases" in e for e in _errors(aliased))
    two_reports = '{ a: reviewerProfiles(tenantId: "t") { reviewer } b: reviewerProfiles(tenantId: "t") { reviewer } }'
    assert any("at most 1 report" in e for e in _errors(two_reports))
    assert _errors("{ __typename }") == []

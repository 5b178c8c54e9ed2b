"""What a GraphQL document may cost before it runs, and who may ask for the schema itself: the
extensions and the validation rule the audit API's schema is built with."""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    ExecutableDefinitionNode,
    ExecutionResult,
    FieldNode,
    GraphQLError,
    InlineFragmentNode,
    ValidationRule,
)
from graphql.validation import ASTValidationRule
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

from bias_audit.storage.postgres.audit_api import InvalidInput

from .auth import Principal
from .graphql_types import fail

MAX_REPORTS_PER_DOCUMENT = 1  # a report reads and fits a whole window: seconds of work, one slot each
REPORT_FIELDS = frozenset({"biasReport", "reviewerProfiles", "judgeReport"})


class _UserErrors(SchemaExtension):
    """A value the store cannot hold (a NUL character in an id or a filter, say) is the caller's
    mistake: BAD_USER_INPUT with the reason, not a server error."""

    def on_execute(self):
        yield
        result = self.execution_context.result
        for error in (result.errors if result is not None else None) or []:
            if isinstance(error.original_error, InvalidInput):
                error.message = str(error.original_error)
                error.extensions = {"code": "BAD_USER_INPUT"}


class _ReportFieldsLimit(ValidationRule):
    """A document asks for at most MAX_REPORTS_PER_DOCUMENT report (aliases included): refused
    before anything runs, so no report's work starts for an answer that is already an error."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.reports = 0

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        if node.name.value in REPORT_FIELDS:
            self.reports += 1
            if self.reports == MAX_REPORTS_PER_DOCUMENT + 1:
                self.report_error(
                    GraphQLError(
                        f"a document asks for at most {MAX_REPORTS_PER_DOCUMENT} report (biasReport, reviewerProfiles, "
                        "judgeReport); send the others in requests of their own, one after the other",
                        node,
                        extensions={"code": "BAD_USER_INPUT"},
                    )
                )


def _introspects(document: DocumentNode) -> bool:
    """Whether a document asks for the schema itself (__schema, __type; __typename is fine)."""
    pending = [
        definition.selection_set
        for definition in document.definitions
        if isinstance(definition, ExecutableDefinitionNode)
    ]
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode) and selection.name.value in ("__schema", "__type"):
                return True
            if isinstance(selection, (FieldNode, InlineFragmentNode)) and selection.selection_set is not None:
                pending.append(selection.selection_set)
    return False


class _IntrospectionForAdmins(SchemaExtension):
    """The schema's shape is for admins (and the committed service/schema.graphql): other roles'
    tokens need not map every field an attacker could try."""

    def on_execute(self):
        context = self.execution_context
        principal: Principal = context.context["principal"]
        if (
            "admin" not in principal.roles
            and context.graphql_document is not None
            and _introspects(context.graphql_document)
        ):
            context.result = ExecutionResult(
                data=None,
                errors=[
                    fail(
                        "FORBIDDEN",
                        "introspection needs the role admin; the schema is published as service/schema.graphql",
                    )
                ],
            )
        yield


# A query's cost is bounded before it runs: nesting, aliases (one field asked 1,000 times), reports.
# The limiters make a new rule class per instance and the validation cache is keyed by the rules, so
# the classes are made once: per-request limiters would make every request miss the cache.
LIMIT_RULES: tuple[type[ASTValidationRule], ...] = (
    *QueryDepthLimiter(max_depth=8).validation_rules,
    *MaxAliasesLimiter(max_alias_count=20).validation_rules,
    _ReportFieldsLimit,
)

# Factories: a fresh extension per request; the parse and validation caches live at module level
EXTENSIONS: list[Any] = [
    lambda: AddValidationRules(list(LIMIT_RULES)),
    lambda: MaxTokensLimiter(max_token_count=2_000),  # a document's size, before it is parsed
    # clients send the same few documents again and again: parse and validate each once
    lambda: ParserCache(maxsize=256),
    lambda: ValidationCache(maxsize=256),
    _UserErrors,
    _IntrospectionForAdmins,
]

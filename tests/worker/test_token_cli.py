"""`bias-audit token`: a local, expiring bearer token signed with the configured HS256 secret,
accepted by the API with that secret; refused without one, or for a role that does not exist."""

from __future__ import annotations

import time

import pytest

from bias_audit.service.auth import TokenVerifier
from tests.services import run_cli as cli

SECRET = "a-token-cli-secret-of-32-bytes-or-more-7"


def test_a_token_carries_the_tenants_and_roles_asked_for_and_expires():
    done = cli(
        "token",
        "--tenant",
        "acme",
        "--tenant",
        "globex",
        "--role",
        "reviewer",
        "--subject",
        "rita",
        "--expires-in",
        "600",
        env={"BIAS_AUDIT_JWT_SECRET": SECRET},
    )
    assert done.returncode == 0, done.stderr
    principal = TokenVerifier(secret=SECRET).verify("Bearer " + done.stdout.strip())
    assert (principal.subject, principal.tenants, principal.roles) == ("rita", {"acme", "globex"}, {"reviewer"})
    import jwt

    claims = jwt.decode(done.stdout.strip(), SECRET, algorithms=["HS256"])
    assert 590 <= claims["exp"] - time.time() <= 600


@pytest.mark.parametrize(
    "args, env, reason",
    [
        (["--role", "reviewer"], {"BIAS_AUDIT_JWT_SECRET": ""}, "BIAS_AUDIT_JWT_SECRET"),
        (["--role", "boss"], {"BIAS_AUDIT_JWT_SECRET": SECRET}, "unknown role boss"),
        (["--role", "admin", "--expires-in", "999999"], {"BIAS_AUDIT_JWT_SECRET": SECRET}, "--expires-in"),
        (["--role", "admin"], {"BIAS_AUDIT_JWT_SECRET": " " * 40}, "different characters"),
    ],
)
def test_a_token_is_refused_in_one_line(args, env, reason):
    done = cli("token", "--tenant", "acme", *args, env=env)
    assert done.returncode == 2 and reason in done.stderr and len(done.stderr.splitlines()) == 1

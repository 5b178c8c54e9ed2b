"""Who is calling the API: a bearer JWT (PyJWT) checked against the configured key, read into a
Principal (subject, tenants, roles). Everything the API reads or writes is scoped by it.

Roles: `service` sends events and updates the bias columns; `reviewer` reads and reviews;
`auditor` reads; `admin` does everything in its tenants. A missing, forged or expired token is
401; a valid one without the role is 403; another tenant's item is not found (no existence leak).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from bias_audit.schemas.secrets import check_secret

ROLES = ("service", "reviewer", "auditor", "admin")
# what each action needs: any one of these roles
READ = frozenset({"reviewer", "auditor", "admin"})
REVIEW = frozenset({"reviewer", "admin"})
SEND = frozenset({"service", "admin"})
UPDATE_BIAS = frozenset({"service", "admin"})
MIN_SECRET_BYTES = 32
VERIFIED_TOKENS = 4096  # tokens remembered as verified, per process
TOKEN_COOKIE = "bias_audit_token"  # set by the operator's proxy: the page and the API take the token from it too


class Unauthenticated(Exception):
    """401: no token, or one that does not verify (the reason is one line, safe to show)."""


class Forbidden(Exception):
    """403: a valid token without the role, or an event for a tenant not in it."""


@dataclass(frozen=True)
class Principal:
    subject: str
    tenants: frozenset[str] | None  # None: every tenant (only when auth is off)
    roles: frozenset[str]

    def can(self, needed: frozenset[str]) -> bool:
        return bool(self.roles & needed)

    def require(self, needed: frozenset[str], what: str) -> None:
        if not self.can(needed):
            raise Forbidden(
                f"{what} needs the role {' or '.join(sorted(needed))}; the token has "
                f"{', '.join(sorted(self.roles)) or 'none'}"
            )

    def sees(self, tenant_id: str) -> bool:
        return self.tenants is None or tenant_id in self.tenants

    def scope(self, asked: str | None) -> list[str] | None:
        """The tenants a query may read: the one asked for when the token holds it (else none),
        all of the token's when none is asked; None = no limit (auth off)."""
        if asked is not None:
            return [asked] if self.sees(asked) else []
        return None if self.tenants is None else sorted(self.tenants)


ANONYMOUS = Principal("anonymous", None, frozenset(ROLES))  # auth off: loopback or --insecure-no-auth


class TokenVerifier:
    """Verifies bearer tokens with an HS256 secret or RS256/ES256 public keys (a PEM file, or a
    JWKS file whose keys are picked by the token's `kid`)."""

    def __init__(
        self,
        *,
        secret: str | None = None,
        public_key: Path | None = None,
        audience: str | None = None,
        issuer: str | None = None,
    ) -> None:
        if secret is None and public_key is None:
            raise ValueError("a JWT secret or public key is needed")
        if secret is not None:  # a guessable key would let anyone sign a token
            check_secret(secret, "BIAS_AUDIT_JWT_SECRET", MIN_SECRET_BYTES)
        self.audience, self.issuer = audience, issuer
        self._secret = secret
        self._keys: dict[str | None, Any] = {}
        if public_key is not None:
            self._keys = _load_public_keys(public_key)
        # a client sends the same token with every request: verified once, trusted until its exp
        self._verified: dict[str, tuple[Principal, float]] = {}
        self._remembering = threading.Lock()

    def verify(self, authorization: str | None) -> Principal:
        if not authorization:
            raise Unauthenticated("no bearer token: send Authorization: Bearer <JWT>")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("the Authorization header is not 'Bearer <JWT>'")
        token = token.strip()
        known = self._verified.get(token)
        if known is not None and time.time() < known[1]:
            return known[0]
        try:
            header = jwt.get_unverified_header(token)
            if self._secret is not None and header.get("alg") == "HS256":
                key: Any = self._secret
                algorithms = ["HS256"]
            else:
                key = self._keys.get(header.get("kid")) or (self._keys.get(None) if len(self._keys) == 1 else None)
                if key is None:
                    raise Unauthenticated("the token's key is not one of the configured keys")
                algorithms = ["RS256", "ES256"]
            # with no audience configured, a token meant for some audience is not for us
            claims = jwt.decode(
                token,
                key,
                algorithms=algorithms,
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "sub"], "verify_aud": True},
            )
        except jwt.PyJWTError as error:
            raise Unauthenticated(f"the token does not verify: {error}") from None
        principal = principal_of(claims)
        with self._remembering:  # FastAPI runs this dependency in its worker threads
            if len(self._verified) >= VERIFIED_TOKENS:  # the oldest goes: the dict keeps insertion order
                del self._verified[next(iter(self._verified))]
            self._verified[token] = (principal, float(claims["exp"]))
        return principal


def principal_of(claims: dict[str, Any]) -> Principal:
    tenants = claims["tenants"] if "tenants" in claims else [claims["tenant_id"]] if "tenant_id" in claims else []
    # a string would be read letter by letter, a map by its keys: only a list of names is a list of tenants
    if not isinstance(tenants, list) or not tenants or not all(isinstance(t, str) and t for t in tenants):
        raise Unauthenticated("the token names no tenant: give tenant_id (a string) or tenants (a list of strings)")
    roles = claims.get("roles") or []
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise Unauthenticated("the token's roles are not a list of strings")
    return Principal(str(claims["sub"]), frozenset(tenants), frozenset(r for r in roles if r in ROLES))


def _load_public_keys(path: Path) -> dict[str | None, Any]:
    """{kid: key} from a JWKS file, or {None: key} from a PEM file."""
    text = Path(path).read_text()
    if text.lstrip().startswith("{"):
        document = json.loads(text)
        keys = {}
        for entry in document.get("keys", []):
            keys[entry.get("kid")] = jwt.PyJWK(entry).key
        if not keys:
            raise ValueError(f"{path}: a JWKS file with no keys")
        return keys
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    return {None: load_pem_public_key(text.encode())}

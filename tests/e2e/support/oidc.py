"""Helpers of the OpenID Connect provider tests (test_oidc_generic.py, test_oidc_okta.py): a stack's discovery
document, registering through its API key, tokens of exact claims, viewing as a bearer."""
from __future__ import annotations

import jwt
import requests

from support.api import Api, Workflows
from support.leaks import SEEN


def discovery(stack) -> dict:
    return requests.get(f"{stack.issuer}/.well-known/openid-configuration", timeout=10).json()


def register(stack, approvers, **fields):
    arn, token = Workflows(stack).start_paused()
    r = Api(stack).register(token, approvers=approvers, **fields)
    assert r.status_code == 201, r.text
    return r.json()["id"], arn


def signed(stack, claims: dict) -> str:
    """A token of exactly these claims, signed with the stack's IdP key (remembered by the leak check)."""
    token = jwt.encode(claims, stack.private_key, algorithm="RS256", headers={"kid": stack.kid})
    SEEN.jwts.add(token)
    return token


def view(stack, approval_id, token):
    return requests.get(f"{stack.base_url}/api/v1/approvals/{approval_id}",
                        headers={"authorization": f"Bearer {token}"}, timeout=30)

"""Sign-in beyond a Cognito user pool: the stack with the IdP stand-in's generic, Entra-like OpenID Connect profile
(issuer `…/v2.0`, endpoints and JWKS only through its discovery document, keys without `alg`, `aud`/`azp`, groups in
`roles`, scopes in `scp`, an email without `email_verified`) and the worker configured with OIDC_ISSUER,
GROUPS_CLAIM=roles, SCOPE_CLAIM=scp, EMAIL_VERIFIED=trust. The SPA gets the discovered endpoints from the
worker's configuration; a person signs in through the stand-in in Chromium and approves; sign-out uses the
provider's end_session_endpoint."""
from __future__ import annotations

import requests

from support.api import Workflows
from support.oidc import discovery, register, sign_in_approve_and_sign_out, signed, view
from ringi_stack import CLIENT_ID, MACHINE_CLIENT_ID, REGISTER_SCOPE


def test_the_spa_configuration_carries_the_discovered_endpoints(generic_stack):
    doc = discovery(generic_stack)
    # The stand-in publishes its keys beside the issuer (as Entra does), without alg: only discovery finds them.
    assert not doc["jwks_uri"].startswith(generic_stack.issuer)
    keys = requests.get(doc["jwks_uri"], timeout=10).json()["keys"]
    assert keys and all("alg" not in k and k["use"] == "sig" for k in keys)
    r = requests.get(f"{generic_stack.base_url}/config.json", timeout=10)
    assert r.status_code == 200
    cfg = r.json()
    assert cfg["provider"] == "oidc" and cfg["issuer"] == generic_stack.issuer and cfg["clientId"] == CLIENT_ID
    assert cfg["authorizationEndpoint"] == doc["authorization_endpoint"]
    assert cfg["tokenEndpoint"] == doc["token_endpoint"]
    assert cfg["endSessionEndpoint"] == doc["end_session_endpoint"]
    assert cfg["cognitoDomain"] == "" and cfg["groupsClaim"] == "roles"
    # The HTML carries the same configuration, and its CSP lets the SPA reach the token endpoint.
    page = requests.get(f"{generic_stack.base_url}/", timeout=10)
    assert doc["authorization_endpoint"] in page.text
    connect = next(d for d in page.headers["content-security-policy"].split(";") if "connect-src" in d).split()
    assert generic_stack.idp_url in connect, connect


def test_groups_email_and_clients_follow_the_claim_mapping(generic_stack):
    s = generic_stack
    by_group, _ = register(s, [{"group": "finance"}])
    by_email, _ = register(s, [{"email": "alice@example.com"}])
    # GROUPS_CLAIM=roles: the group is read from roles, not from groups.
    assert view(s, by_group, s.mint("carol", groups=["finance"])).status_code == 200
    assert view(s, by_group, signed(s, {**s.claims("carol"), "groups": ["finance"]})).status_code == 404
    # EMAIL_VERIFIED=trust: the email counts without email_verified (the provider sends none).
    assert view(s, by_email, s.mint("x-1", email="alice@example.com")).status_code == 200
    assert view(s, by_email, s.mint("x-2", email="bob@example.com")).status_code == 404
    # aud/azp: a token of another client of the same issuer is refused.
    assert view(s, by_group, s.mint("carol", groups=["finance"], azp="other-client")).status_code == 401
    assert view(s, by_group, s.mint("carol", groups=["finance"], aud="api://other")).status_code == 401


def test_machine_tokens_register_with_azp_and_scp(generic_stack):
    s = generic_stack
    arn, task_token = Workflows(s).start_paused()
    body = {"taskToken": task_token, "approvers": [{"group": "finance"}], "title": "Rotate keys", "timeoutSeconds": 600}

    def post(token):
        return requests.post(f"{s.base_url}/api/v1/approvals", json=body,
                             headers={"authorization": f"Bearer {token}"}, timeout=30)

    # A person's token (ringi's own client) is not a registering client; the machine's needs scp.
    assert post(s.mint("alice")).status_code == 401
    assert post(s.mint_machine(scope="openid")).status_code == 403
    # A token of the machine client that names a user is a person's.
    assert post(s.mint_machine(preferred_username="alice")).status_code == 403
    r = post(s.mint_machine())
    assert r.status_code == 201, r.text
    assert r.json()["id"]
    # scp may also be an array (Okta).
    arn2, token2 = Workflows(s).start_paused()
    r = requests.post(f"{s.base_url}/api/v1/approvals", json={**body, "taskToken": token2},
                      headers={"authorization": f"Bearer {s.mint_machine(scp=[REGISTER_SCOPE])}"}, timeout=30)
    assert r.status_code == 201, r.text
    assert MACHINE_CLIENT_ID in s.worker_vars()["REGISTER_CLIENT_IDS"]


def test_sign_in_through_the_generic_provider_and_approve(generic_stack, tab):
    sign_in_approve_and_sign_out(generic_stack, tab, [{"group": "finance"}], "Deploy ledger v3 to production",
                                 user_name="alice", screenshot="oidc-generic-approval-mobile.png")


def test_an_unchecked_email_never_routes_someone_elses_approvals(generic_stack):
    """EMAIL_VERIFIED=trust takes the email as sent, so anyone could claim an address: out-of-office keeps the sub
    only, and an approval naming that address by email stays with its approver; one naming the sub is routed."""
    s = generic_stack
    who = "mallory-ooo"
    from datetime import datetime, timedelta, timezone
    until = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    put = requests.put(f"{s.base_url}/api/v1/me/out-of-office", json={"delegate": {"sub": "pal"}, "until": until},
                       headers={"authorization": f"Bearer {s.mint(who, email='victim@example.com')}"}, timeout=30)
    assert put.status_code == 200, put.text
    try:
        by_email, _ = register(s, [{"email": "victim@example.com"}])
        assert view(s, by_email, s.mint("pal")).status_code == 404, "not routed by an unchecked email"
        by_sub, _ = register(s, [{"sub": who}])
        assert view(s, by_sub, s.mint("pal")).status_code == 200, "routed by the sub"
    finally:
        requests.delete(f"{s.base_url}/api/v1/me/out-of-office",
                        headers={"authorization": f"Bearer {s.mint(who)}"}, timeout=30)

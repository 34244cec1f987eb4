"""Sign-in with Okta, as docs/deploy.md's worked example configures it: the stack with the IdP stand-in's Okta-like
profile (a custom authorization server's issuer `…/oauth2/default`, keys at `…/v1/keys` found through discovery,
ID tokens with `groups` and `email_verified`, access tokens for `api://default` with `cid`, `uid` and `scp` as an
array, a sign-out endpoint that refuses a request without `id_token_hint`) and the worker configured with
OIDC_ISSUER, TOKEN_USE=id, GROUPS_CLAIM=groups, EMAIL_VERIFIED=require. Workflows register with the API key."""
from __future__ import annotations

import requests

from support.oidc import discovery, register, sign_in_approve_and_sign_out, signed, view
from ringi_stack import CLIENT_ID


def test_the_configuration_names_the_discovered_endpoints_and_the_id_token(okta_stack):
    s = okta_stack
    doc = discovery(s)
    assert doc["issuer"] == s.issuer and s.issuer.endswith("/oauth2/default")
    assert doc["jwks_uri"] == f"{s.issuer}/v1/keys"
    keys = requests.get(doc["jwks_uri"], timeout=10).json()["keys"]
    assert keys and all(k["alg"] == "RS256" and k["use"] == "sig" for k in keys)
    cfg = requests.get(f"{s.base_url}/config.json", timeout=10).json()
    assert cfg["provider"] == "oidc" and cfg["issuer"] == s.issuer and cfg["clientId"] == CLIENT_ID
    assert cfg["tokenUse"] == "id" and cfg["groupsClaim"] == "groups"
    assert (cfg["authorizationEndpoint"], cfg["tokenEndpoint"], cfg["endSessionEndpoint"]) == (
        doc["authorization_endpoint"], doc["token_endpoint"], doc["end_session_endpoint"])


def test_the_id_token_is_the_bearer_with_groups_and_a_verified_email(okta_stack):
    s = okta_stack
    by_group, _ = register(s, [{"group": "finance"}])
    by_email, _ = register(s, [{"email": "alice@example.com"}])
    assert view(s, by_group, s.mint("carol", groups=["finance"])).status_code == 200
    # GROUPS_CLAIM=groups: Entra's roles claim means nothing here.
    assert view(s, by_group, signed(s, {**s.claims("carol"), "roles": ["finance"]})).status_code == 404
    # EMAIL_VERIFIED=require: Okta says whether the address is verified, and an unverified one does not count.
    assert view(s, by_email, s.mint("u-1", email="alice@example.com")).status_code == 200
    assert view(s, by_email, s.mint("u-2", email="alice@example.com", email_verified=False)).status_code == 404
    assert view(s, by_email, s.mint("u-3", email="alice@example.com", email_verified=None)).status_code == 404
    # TOKEN_USE=id: the ID token's aud is the SPA's client. Another client's ID token is refused, and so is an
    # access token of the authorization server (aud api://default, the client in cid).
    assert view(s, by_group, s.mint("carol", groups=["finance"], aud="0oaOtherClient")).status_code == 401
    access = signed(s, {**s.claims("carol@example.com", groups=["finance"]), "aud": "api://default",
                        "cid": CLIENT_ID, "uid": "carol", "scp": ["openid", "email"]})
    assert view(s, by_group, access).status_code == 401


def test_sign_in_through_okta_approve_and_sign_out_with_the_id_token_hint(okta_stack, tab):
    s = okta_stack
    # Okta refuses a sign-out without the ID token it issued; the round below shows ringi sends it.
    bare = requests.get(discovery(s)["end_session_endpoint"], params={"post_logout_redirect_uri": f"{s.base_url}/"},
                        allow_redirects=False, timeout=10)
    assert bare.status_code == 400
    # The approval is addressed to alice's verified email, which only the ID token carries.
    sign_in_approve_and_sign_out(s, tab, [{"email": "alice@example.com"}], "Renew the TLS certificate",
                                 user_name="alice@example.com", screenshot="oidc-okta-approval-mobile.png")

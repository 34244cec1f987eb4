"""Helpers of the OpenID Connect provider tests (test_oidc_generic.py, test_oidc_okta.py): a stack's discovery
document, registering through its API key, tokens of exact claims, viewing as a bearer, and a person's sign-in →
approve → sign-out in Chromium."""
from __future__ import annotations

import jwt
import requests
from playwright.sync_api import expect

from support import ARTIFACTS
from support.api import Api, Workflows
from support.leaks import SEEN
from support.pages import HostedUi


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


def sign_in_approve_and_sign_out(stack, tab, approvers, title: str, user_name: str, screenshot: str) -> dict:
    """A person's whole round with a provider in Chromium: the short link sends alice to the provider (PKCE,
    `ui_locales`), she signs in, sees the approval as `user_name`, approves (the paused execution resumes), then
    signs out through the provider's end_session_endpoint with `id_token_hint`, after which the provider asks
    for her password again. Returns the discovery document."""
    workflows = Workflows(stack)
    arn, task_token = workflows.start_paused()
    r = Api(stack).register(task_token, approvers=approvers, title=title)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    page, approval = tab.page, tab.approval
    page.goto(f"{stack.base_url}/a/{approval_id}")
    HostedUi(page, stack).wait()
    doc = discovery(stack)
    authorize = next(u for u in tab.navigations if u.startswith(doc["authorization_endpoint"]))
    assert "code_challenge_method=S256" in authorize and "ui_locales=" in authorize and "lang=" not in authorize
    HostedUi(page, stack).sign_in("alice")
    page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
    expect(approval.title).to_have_text(title)
    expect(approval.by("user-name")).to_have_text(user_name)
    approval.screenshot(ARTIFACTS / screenshot)
    approval.decide("approve")
    approval.expect_result("approved")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert not tab.csp_problems(), tab.csp_problems()

    # Sign-out ends the provider's session through its end_session_endpoint and comes back to ringi.
    page.goto(f"{stack.base_url}/")
    tab.inbox.by("sign-out").click()
    page.wait_for_url(f"{stack.base_url}/", timeout=30_000)
    logout = next(u for u in tab.navigations if u.startswith(doc["end_session_endpoint"]))
    assert "post_logout_redirect_uri=" in logout and "id_token_hint=" in logout
    # The provider's session is gone: the next sign-in asks for the password again.
    page.goto(f"{stack.base_url}/a/{approval_id}")
    expect(HostedUi(page, stack).wait().password).to_be_visible()
    return doc

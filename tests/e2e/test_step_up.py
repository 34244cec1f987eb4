"""Step-up sign-in (`requireSignIn`): a registration asks that whoever decides signed in recently (`maxAge`), at an
authentication context (`acr`) or with a second factor (`mfa`); the worker checks the verified token's `auth_time`,
`acr` and `amr` at its own clock and refuses a decision without them with 401 `step_up_required` (RFC 9470's
`insufficient_user_authentication` challenge) before anything is recorded — also when the app is bypassed and an
old token is sent straight to the API. The API on both storage backends (`backend`: D1, then DynamoDB), with the
test clock aging a token's sign-in; `acr` and `mfa` on the generic OpenID Connect profile, whose tokens carry them
(a Cognito pool's do not: registration refuses them there)."""
from __future__ import annotations

import json
import secrets
import time

import requests

from support.api import Api, Workflows

FIVE_MINUTES = {"maxAge": "PT5M"}


def field(r) -> str:
    assert r.status_code == 400, r.text
    return r.json()["error"]["field"]


def refused_for_sign_in(r, **needed) -> dict:
    """The decision was refused for its sign-in: the typed error, what it needs, RFC 9470's challenge."""
    assert r.status_code == 401, r.text
    error = r.json()["error"]
    assert error["code"] == "step_up_required", error
    assert error["requireSignIn"] == needed, error
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_user_authentication"'), challenge
    if "maxAgeSeconds" in needed:
        assert f'max_age="{needed["maxAgeSeconds"]}"' in challenge, challenge
    return error


def test_registration_reads_and_bounds_require_sign_in(api):
    tok = lambda: "tok-" + secrets.token_hex(6)  # noqa: E731
    assert field(api.register(tok(), requireSignIn={})) == "requireSignIn"
    assert field(api.register(tok(), requireSignIn={"maxAge": "PT10S"})) == "requireSignIn.maxAge"
    assert field(api.register(tok(), requireSignIn={"maxAge": "P2D"})) == "requireSignIn.maxAge"
    assert field(api.register(tok(), requireSignIn={"maxAge": 300})) == "requireSignIn.maxAge"
    assert field(api.register(tok(), requireSignIn={"maxAge": "PT5M", "amr": "mfa"})) == "requireSignIn.amr"
    # A Cognito user pool's tokens carry auth_time but neither acr nor amr: only maxAge can be required.
    r = api.register(tok(), requireSignIn={"maxAge": "PT5M", "mfa": True})
    assert field(r) == "requireSignIn.mfa" and "Cognito" in r.json()["error"]["message"], r.text
    assert field(api.register(tok(), requireSignIn={"acr": "urn:example:loa:2"})) == "requireSignIn.acr"
    assert api.register(tok(), requireSignIn=FIVE_MINUTES).status_code == 201


def test_a_stale_sign_in_is_refused_even_when_the_app_is_bypassed(backend, workflows, clock):
    api = backend.api
    arn, token = workflows.start_paused()
    r = api.register(token, approvers=[{"sub": "alice"}, {"sub": "bob"}], quorum="all", requireSignIn=FIVE_MINUTES,
                     timeoutSeconds=3600)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    # Signed in just now: the page says nothing is missing.
    view = api.get(approval_id, as_user="alice").json()
    assert view["requireSignIn"] == {"maxAgeSeconds": 300} and view["stepUp"] is False and view["canDecide"], view

    # Ten minutes later (the worker's clock) the same sign-in is stale: the page says so, and a decision sent
    # straight to the API with that token is refused before anything is recorded — not even a quorum vote.
    clock.advance(600)
    assert api.get(approval_id, as_user="alice").json()["stepUp"] is True
    refused_for_sign_in(api.decide(approval_id, as_user="alice"), maxAgeSeconds=300)
    # A token without auth_time proves no sign-in time at all.
    refused_for_sign_in(api.decide(approval_id, as_user="alice", auth_time=None), maxAgeSeconds=300)
    refused_for_sign_in(api.decide(approval_id, "reject", as_user="bob"), maxAgeSeconds=300)
    view = api.get(approval_id, as_user="alice").json()
    assert view["status"] == "pending" and view["progress"]["approvals"] == 0 and view["decisions"] == [], view
    assert workflows.status(arn) == "RUNNING"

    # A fresh sign-in (auth_time at the worker's "now") decides: the vote, then the quorum.
    fresh = int(time.time()) + clock.seconds
    assert api.get(approval_id, as_user="alice", auth_time=fresh).json()["stepUp"] is False
    assert api.decide(approval_id, as_user="alice", auth_time=fresh).json()["status"] == "pending"
    r = api.decide(approval_id, as_user="bob", auth_time=fresh - 299)
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["decision"] == "approved"


def test_an_approval_without_a_requirement_takes_any_valid_sign_in(backend, workflows, clock):
    api = backend.api
    arn, token = workflows.start_paused()
    approval_id = api.register(token, timeoutSeconds=7200).json()["id"]
    clock.advance(3600)
    assert "requireSignIn" not in api.get(approval_id).json()
    r = api.decide(approval_id, auth_time=int(time.time()) - 86_400)
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text


def test_a_stale_approver_still_hands_the_seat_on_and_the_delegate_steps_up(stack, workflows, clock):
    # Handing a seat on decides nothing: the delegate's own verdict must meet the requirement.
    api = Api(stack)
    arn, token = workflows.start_paused()
    approval_id = api.register(token, approvers=[{"sub": "alice"}], requireSignIn=FIVE_MINUTES,
                               timeoutSeconds=3600).json()["id"]
    clock.advance(600)
    r = api.call("POST", f"/api/v1/approvals/{approval_id}/delegation", as_user="alice", body={"to": {"sub": "dan"}})
    assert r.status_code == 200, r.text
    refused_for_sign_in(api.decide(approval_id, as_user="dan"), maxAgeSeconds=300)
    r = api.decide(approval_id, as_user="dan", auth_time=int(time.time()) + clock.seconds)
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text


def test_acr_and_mfa_on_an_openid_connect_provider(generic_stack):
    s = generic_stack
    arn, token = Workflows(s).start_paused()
    body = {"taskToken": token, "approvers": [{"sub": "alice"}], "title": "Rotate the signing keys",
            "timeoutSeconds": 600, "requireSignIn": {"acr": ["urn:example:loa:2", "urn:example:loa:3"], "mfa": True}}
    r = requests.post(f"{s.base_url}/api/v1/approvals", json=body,
                      headers={"authorization": f"Bearer {s.api_key}"}, timeout=30)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]

    def decide(**claims):
        return requests.post(f"{s.base_url}/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"},
                             headers={"authorization": f"Bearer {s.mint('alice', **claims)}"}, timeout=60)

    needed = {"acr": ["urn:example:loa:2", "urn:example:loa:3"], "mfa": True}
    error = refused_for_sign_in(decide(), **needed)
    assert "sign in again" in error["message"]
    assert 'acr_values="urn:example:loa:2 urn:example:loa:3"' in decide().headers["www-authenticate"]
    refused_for_sign_in(decide(acr="urn:example:loa:1", amr=["pwd", "mfa"]), **needed)
    refused_for_sign_in(decide(acr="urn:example:loa:2", amr=["pwd"]), **needed)
    r = decide(acr="urn:example:loa:3", amr=["pwd", "otp"])
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    assert Workflows(s).wait_done(arn)["status"] == "SUCCEEDED"

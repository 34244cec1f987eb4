"""Step-up sign-in (`requireSignIn`): a registration asks that whoever decides signed in recently (`maxAge`), at an
authentication context (`acr`) or with a second factor (`mfa`); the worker checks the verified token's `auth_time`,
`acr` and `amr` at its own clock and refuses a decision without them with 401 `step_up_required` (RFC 9470's
`insufficient_user_authentication` challenge) before anything is recorded — also when the app is bypassed and an
old token is sent straight to the API. The API on both storage backends (`backend`: D1, then DynamoDB), with the
test clock aging a token's sign-in; `acr` and `mfa` on the generic OpenID Connect profile, whose tokens carry them
(a Cognito pool's do not: registration refuses them there). In Chromium on a phone-sized screen, in English and
Japanese and with both bearers (`TOKEN_USE`): the app sends the approver through the IdP stand-in with `prompt=login`
and `max_age` — before the click when the approval says the sign-in is too old, after a refused decision otherwise —
and comes back to the same approval with the answers kept."""
from __future__ import annotations

import json
import secrets
import time
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from playwright.sync_api import expect

from support import ARTIFACTS
from support.api import Api, Workflows
from support.pages import PASSWORD, HostedUi, Tab, sub
from test_first_load import with_session

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


def alices_approval(s, title: str, require_sign_in: dict):
    """An approval for alice on a provider stack asking `require_sign_in`: (execution ARN, decide), where
    `decide(**claims)` approves it with a token of alice's carrying those claims."""
    arn, token = Workflows(s).start_paused()
    body = {"taskToken": token, "approvers": [{"sub": "alice"}], "title": title, "timeoutSeconds": 600,
            "requireSignIn": require_sign_in}
    r = requests.post(f"{s.base_url}/api/v1/approvals", json=body,
                      headers={"authorization": f"Bearer {s.api_key}"}, timeout=30)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]

    def decide(**claims):
        return requests.post(f"{s.base_url}/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"},
                             headers={"authorization": f"Bearer {s.mint('alice', **claims)}"}, timeout=60)
    return arn, decide


def test_acr_and_mfa_on_an_openid_connect_provider(generic_stack):
    s = generic_stack
    arn, decide = alices_approval(s, "Rotate the signing keys",
                                  {"acr": ["urn:example:loa:2", "urn:example:loa:3"], "mfa": True})
    needed = {"acr": ["urn:example:loa:2", "urn:example:loa:3"], "mfa": True}
    error = refused_for_sign_in(decide(), **needed)
    assert "sign in again" in error["message"]
    assert 'acr_values="urn:example:loa:2 urn:example:loa:3"' in decide().headers["www-authenticate"]
    refused_for_sign_in(decide(acr="urn:example:loa:1", amr=["pwd", "mfa"]), **needed)
    refused_for_sign_in(decide(acr="urn:example:loa:2", amr=["pwd"]), **needed)
    r = decide(acr="urn:example:loa:3", amr=["pwd", "otp"])
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    assert Workflows(s).wait_done(arn)["status"] == "SUCCEEDED"


def test_entras_authentication_context_meets_an_acr_requirement(generic_stack):
    """Entra ID says which Conditional Access authentication contexts a sign-in satisfied in `acrs` (its `acr` is
    only "0"/"1"): a registration asking for `acr: c3` is met by a token with `acrs: ["c3"]`, not by another
    context nor by `acr` "1"."""
    s = generic_stack
    arn, decide = alices_approval(s, "Open the production vault", {"acr": "c3"})
    refused_for_sign_in(decide(acr="1", acrs=["c1", "c2"]), acr=["c3"])
    refused_for_sign_in(decide(acr="1"), acr=["c3"])
    assert Workflows(s).status(arn) == "RUNNING"
    r = decide(acr="1", acrs=["c1", "c3"])
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    assert Workflows(s).wait_done(arn)["status"] == "SUCCEEDED"


# ---------------------------------------------------------------- the app (Chromium, a phone-sized screen)

STEP_UP_NOTICE = {"en-US": "Deciding this request needs a recent sign-in", "ja-JP": "この申請の決裁には直近のサインインが必要です"}
DRAFT_RESTORED = {"en-US": "your answers were restored", "ja-JP": "入力内容を復元しました"}
FORM = [{"name": "ticket", "label": "Change ticket", "type": "text", "required": True}]


@pytest.mark.parametrize("token_use,locale", [("access", "en-US"), ("id", "ja-JP")])
def test_the_app_signs_in_again_as_the_approval_asks_and_keeps_the_answers(stack, workflows, browser, token_use,
                                                                           locale):
    """An approver whose sign-in at the provider is older than `maxAge` opens the link: the app (signing in silently
    on the provider's session) gets a token with that old `auth_time`, says the approval needs a recent sign-in, and
    on Approve sends them through the provider with `prompt=login` and `max_age`; back on the same approval, the
    answers are there, and the decision goes through with the new sign-in. Both bearers (`TOKEN_USE`)."""
    base = stack.base_url if token_use == "access" else stack.extra_worker("idtokens", {"TOKEN_USE": "id"},
                                                                           signs_in=True)
    arn, task_token = workflows.start_paused()
    r = Api(stack, base).register(task_token, approvers=[{"sub": sub("alice")}], title="Rotate the payment keys",
                                  form=FORM, requireSignIn=FIVE_MINUTES, timeoutSeconds=3600)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    link = f"{base}/a/{approval_id}"
    with Tab(browser, locale=locale) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}", base_url=base)
        expect(t.approval.by("step-up-notice")).to_contain_text(STEP_UP_NOTICE[locale])
        # Ten minutes on, in a fresh tab of the same browser: the provider's session signs in silently, with the
        # sign-in time it has.
        r = requests.post(f"{stack.idp_url}/test/age-sessions", data={"seconds": "600"}, timeout=10)
        assert r.status_code == 200 and r.json()["aged"] >= 1, r.text
        page.evaluate("sessionStorage.removeItem('ringi.session')")
        page.goto(link)
        page.wait_for_url(link, timeout=30_000)
        approval = t.approval
        expect(approval.title).to_have_text("Rotate the payment keys")
        old = bearer_claims(page)
        assert old["auth_time"] <= time.time() - 590, old
        approval.field("ticket").fill("CHG-4711")
        approval.comment.fill("Key ceremony log checked")
        approval.by("approve").click()
        # Straight to the provider (no confirmation yet): a new sign-in, at most five minutes old.
        HostedUi(page, stack).wait()
        authorize = [u for u in t.navigations if "/oauth2/authorize?" in u][-1]
        query = parse_qs(urlsplit(authorize).query)
        assert query["prompt"] == ["login"] and query["max_age"] == ["300"], query
        assert workflows.status(arn) == "RUNNING"
        HostedUi(page, stack).sign_in("alice")
        page.wait_for_url(link, timeout=30_000)
        expect(approval.by("draft-restored")).to_contain_text(DRAFT_RESTORED[locale], timeout=30_000)
        expect(approval.field("ticket")).to_have_value("CHG-4711")
        expect(approval.comment).to_have_value("Key ceremony log checked")
        fresh = bearer_claims(page)
        assert fresh["auth_time"] >= time.time() - 60 and fresh["token_use"] == token_use, fresh
        page.screenshot(path=str(ARTIFACTS / f"step-up-restored-{token_use}-mobile.png"), full_page=True)
        approval.decide("approve")
        approval.expect_result("approved")
        out = json.loads(workflows.wait_done(arn)["output"])["approval"]
        assert out["feedback"] == {"ticket": "CHG-4711"} and out["comment"] == "Key ceremony log checked", out
        assert not t.problems, t.problems


def test_a_refused_decision_steps_up_too(stack, workflows, browser):
    """The page said the sign-in was fresh, but the worker refuses the decision with `step_up_required` (it aged in
    between): the app signs in again as the refusal asks and comes back with the answers."""
    arn, task_token = workflows.start_paused()
    approval_id = Api(stack).register(task_token, approvers=[{"sub": sub("alice")}], form=FORM,
                                      requireSignIn=FIVE_MINUTES, timeoutSeconds=3600).json()["id"]
    with Tab(browser) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}")
        approval = t.approval
        approval.field("ticket").fill("CHG-9")
        refused = []

        def once(route):
            if refused:
                return route.continue_()
            refused.append(route.request.url)
            needed = {"maxAgeSeconds": 300}
            route.fulfill(status=401, content_type="application/json",
                          headers={"WWW-Authenticate": 'Bearer error="insufficient_user_authentication", max_age="300"'},
                          body=json.dumps({"error": {"code": "step_up_required", "message": "sign in again",
                                                     "requireSignIn": needed}}))

        page.route("**/api/v1/approvals/*/decision", once)
        approval.decide("approve")
        HostedUi(page, stack).sign_in("alice")
        page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
        expect(approval.by("draft-restored")).to_be_visible(timeout=30_000)
        expect(approval.field("ticket")).to_have_value("CHG-9")
        assert refused and workflows.status(arn) == "RUNNING"
        authorize = [u for u in t.navigations if "/oauth2/authorize?" in u][-1]
        assert parse_qs(urlsplit(authorize).query)["max_age"] == ["300"]
        approval.decide("approve")
        approval.expect_result("approved")


def test_okta_two_factors_asked_through_the_app(okta_stack, browser):
    """Okta as docs/deploy.md configures it (the ID token as the bearer, with `acr` and `amr`): the approval asks for
    Okta's two-factor level and a second factor; alice signed in with her password only. On Approve the app asks
    the provider for that level (`acr_values`, `prompt=login`), the provider wants her one-time code too, and back
    on the approval with the ID token saying so, her decision goes through."""
    s = okta_stack
    workflows = Workflows(s)
    arn, task_token = workflows.start_paused()
    r = Api(s).register(task_token, approvers=[{"email": "alice@example.com"}], title="Pay the supplier",
                        requireSignIn={"acr": "urn:okta:loa:2fa:any", "mfa": True})
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    link = f"{s.base_url}/a/{approval_id}"
    with Tab(browser) as t:
        page = t.open_signed_in(s, f"/a/{approval_id}")
        approval = t.approval
        expect(approval.by("step-up-notice")).to_be_visible()
        one = bearer_claims(page)
        assert (one["acr"], one["amr"]) == ("urn:okta:loa:1fa:pwd", ["pwd"]), one
        approval.comment.fill("Invoice matches the order")
        approval.by("approve").click()
        HostedUi(page, s).wait()
        authorize = [u for u in t.navigations if "/oauth2/authorize?" in u][-1]
        query = parse_qs(urlsplit(authorize).query)
        assert query["acr_values"] == ["urn:okta:loa:2fa:any"] and query["prompt"] == ["login"], query
        assert "max_age" not in query
        # The same level as Entra would be asked (the claims parameter), which this provider leaves aside.
        acrs = {"essential": True, "value": "urn:okta:loa:2fa:any"}
        assert json.loads(query["claims"][0]) == {"id_token": {"acrs": acrs}, "access_token": {"acrs": acrs}}, query
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", PASSWORD)
        page.fill("input[name=code]", "246810")
        page.click("input[name=signInSubmitButton]")
        page.wait_for_url(link, timeout=30_000)
        expect(approval.by("draft-restored")).to_be_visible(timeout=30_000)
        expect(approval.comment).to_have_value("Invoice matches the order")
        two = bearer_claims(page)
        assert two["acr"] == "urn:okta:loa:2fa:any" and "mfa" in two["amr"], two
        approval.decide("approve")
        approval.expect_result("approved")
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def bearer_claims(page) -> dict:
    token = page.evaluate("JSON.parse(sessionStorage.getItem('ringi.session')).bearer")
    return jwt.decode(token, options={"verify_signature": False})

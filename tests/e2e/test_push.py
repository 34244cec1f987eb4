"""Web Push (design.md §9 "Push"): a device subscribes through the API; when an approval names its person —
directly by sub or verified email, through a group their token named, by delegation, a reminder or the
escalation — the worker posts a message to the push service. The push stand-in (standins/pushbox.py) plays the
browser's push service for test subscriptions: it checks the VAPID JWT (ES256 under `k`, `aud` its origin, `exp`
within 24 h, `sub` mailto:/https:) and decrypts the payload with http_ece, so what these tests read is what a
phone would show. 410 drops the subscription, 500 is retried by the cron, every try is a `pushed` event naming the
device by a hash, never the endpoint; the task token is in no message.

Push runs on a worker of its own (VAPID_KEY set; the session's main worker has none and answers
`push_not_configured`)."""
from __future__ import annotations

import base64
import secrets
import time

import pytest
import requests

from support import ARTIFACTS, leaks
from support.api import Api
from support.pages import MOBILE, Tab, axe_check, sub as demo_sub

LINK_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def push(stack):
    """The push worker's URL (VAPID_KEY on, the stand-in running): its own D1, the stack's IdP."""
    stack.start_pushbox()
    # On the sign-in port: the browser test signs in to it.
    url = stack.extra_worker("push", stack.push_vars(), signs_in=True)
    return url


@pytest.fixture(scope="module")
def api(stack, push):
    return Api(stack, push)


def person(tag: str) -> tuple[str, str]:
    n = secrets.token_hex(3)
    return f"{tag}-{n}", f"{tag}-{n}@example.com"


def subscribe(stack, api, sub, email=None, groups=(), subscription=None):
    """A test device at the stand-in, stored for `sub` through the API as the settings page does."""
    subscription = subscription or stack.push_subscription()
    leaks.SEEN.push_endpoints.add(subscription["endpoint"])
    claims = {"email": email} if email else {}
    if groups:
        claims["groups"] = list(groups)
    r = api.call("PUT", "/api/v1/me/push", as_user=sub, body=subscription, **claims)
    assert r.status_code == 200, r.text
    assert r.json() == {"subscribed": True}
    return subscription


def register(api, approvers, **fields):
    token = "tok-" + secrets.token_hex(12)
    leaks.SEEN.task_tokens.add(token)
    r = api.register(token, approvers=approvers, title="Deploy payments v2.4", timeoutSeconds=3600,
                     context={"requestedBy": "ci@example.com"}, **fields)
    assert r.status_code == 201, r.text
    return r.json(), token


def messages_to(stack, subscription, want: int = 1, timeout: float = LINK_TIMEOUT) -> list:
    """The stand-in's messages to one subscription, once there are `want` (bounded wait, short polls)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [m for m in stack.push_messages() if m["endpoint"] == subscription["endpoint"]]
        if len(found) >= want or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def pushed(api, approval_id, as_user, n=1, timeout=20.0, **claims) -> list:
    deadline = time.monotonic() + timeout
    while True:
        view = api.get(approval_id, as_user=as_user, **claims)
        assert view.status_code == 200, view.text
        events = [e for e in view.json()["events"] if e["kind"] == "pushed"]
        if len(events) >= n or time.monotonic() > deadline:
            return events
        time.sleep(0.3)


def test_a_subscribed_device_gets_the_request_vapid_signed_encrypted_and_without_the_token(stack, api, push):
    config = requests.get(f"{push}/config.json", timeout=30).json()
    vapid_public = config["vapidPublicKey"]
    assert len(base64.urlsafe_b64decode(vapid_public + "=")) == 65
    assert "vapidPublicKey" not in requests.get(f"{stack.base_url}/config.json", timeout=30).json()
    sub, email = person("pat")
    device = subscribe(stack, api, sub, email=email)
    answer, token = register(api, [{"email": email}])
    [m] = messages_to(stack, device)
    # What the phone shows: the title, who asked, the deadline, the short link; nothing else, no token.
    assert m["payload"] == {"title": "Deploy payments v2.4", "requester": "ci@example.com",
                            "deadline": answer["expiresAt"], "url": answer["url"], "lang": "en"}
    assert token not in m["plaintext"] and "taskToken" not in m["plaintext"]
    assert m["plaintext"].startswith("{") and len(m["plaintext"]) < 3072
    # RFC 8292: the stand-in verified the JWT under k, which is the key the SPA subscribes with.
    assert m["vapid"]["k"] == vapid_public
    assert m["vapid"]["claims"]["aud"] == stack.push_url and m["vapid"]["claims"]["sub"] == "mailto:ops@example.com"
    assert 0 < int(m["ttl"]) <= 3600 and m["urgency"] == "high" and m["topic"] == answer["id"]
    # The audit trail: one `pushed` event naming the device by its hash, never the endpoint.
    [event] = pushed(api, answer["id"], sub, email=email)
    assert event["actor"] == {"type": "system"}
    assert event["detail"]["delivered"] is True and event["detail"]["mail"] == "request"
    assert len(event["detail"]["device"]) == 16 and device["endpoint"] not in str(event)
    assert device["endpoint"] not in (stack.state / "worker-push.log").read_text(errors="replace")


def test_group_members_who_signed_in_and_several_devices_each_get_it(stack, api):
    sub, email = person("gil")
    phone = subscribe(stack, api, sub, email=email, groups=["release-managers"])
    laptop = subscribe(stack, api, sub, email=email, groups=["release-managers"])
    stranger = subscribe(stack, api, *person("out"), groups=["other"])
    answer, _ = register(api, [{"group": "release-managers"}])
    assert [m["payload"]["url"] for m in messages_to(stack, phone)] == [answer["url"]]
    assert [m["payload"]["url"] for m in messages_to(stack, laptop)] == [answer["url"]]
    assert messages_to(stack, stranger, timeout=1) == []


def test_delegation_escalation_and_reminders_reach_the_devices_of_those_they_name(stack, api, clock):
    owner, owner_email = person("own")
    delegate, _ = person("dlg")
    boss, _ = person("boss")
    own_dev, dlg_dev, boss_dev = (subscribe(stack, api, s) for s in (owner, delegate, boss))
    subscribe_email = owner_email  # the owner's device is found by sub here
    answer, _ = register(api, [{"sub": owner}], reminders=["PT60S"],
                         escalation={"after": "PT120S", "to": [{"sub": boss}]})
    approval_id = answer["id"]
    assert len(messages_to(stack, own_dev)) == 1
    # The test clock, never a sleep: the reminder falls due, the cron pushes it to the one who decides.
    clock.advance(60)
    stack.run_cron(push_base(stack))
    assert len(messages_to(stack, own_dev, 2)) == 2
    # Delegation: the delegate's device is told (the hand-over), as the mail is.
    r = api.call("POST", f"/api/v1/approvals/{approval_id}/delegation", as_user=owner,
                 body={"to": {"sub": delegate}, "note": "on leave"}, email=subscribe_email)
    assert r.status_code == 200, r.text
    [handover] = messages_to(stack, dlg_dev)
    assert handover["payload"]["url"] == answer["url"]
    # The escalation adds the boss, whose device hears of it.
    clock.advance(60)
    stack.run_cron(push_base(stack))
    [escalated] = messages_to(stack, boss_dev)
    assert escalated["payload"]["url"] == answer["url"]
    kinds = sorted(e["detail"]["mail"] for e in pushed(api, approval_id, boss, n=4))
    assert kinds == ["escalation", "handover", "reminder", "request"], kinds


def test_gone_drops_the_subscription_and_a_failing_service_is_retried_by_the_cron(stack, api):
    sub, _ = person("gone")
    device = subscribe(stack, api, sub)
    stack.push_control("gone", {"endpoint": device["endpoint"]})
    answer, _ = register(api, [{"sub": sub}])
    [event] = pushed(api, answer["id"], sub)
    assert event["detail"]["dropped"] is True and event["detail"]["delivered"] is False
    assert event["detail"]["error"] == "HTTP 410"
    # Dropped: the next approval is not even tried.
    again, _ = register(api, [{"sub": sub}])
    assert pushed(api, again["id"], sub, timeout=2) == []

    sub, _ = person("retry")
    device = subscribe(stack, api, sub)
    stack.push_control("fail", {"count": 1, "status": 500})
    answer, _ = register(api, [{"sub": sub}])
    [failed] = pushed(api, answer["id"], sub)
    assert failed["detail"] == {"device": failed["detail"]["device"], "mail": "request", "delivered": False,
                                "error": "HTTP 500"}
    assert messages_to(stack, device, timeout=1) == []
    stack.run_cron(push_base(stack))
    [m] = messages_to(stack, device)
    assert m["payload"]["url"] == answer["url"]
    events = pushed(api, answer["id"], sub, n=2)
    assert [e["detail"]["delivered"] for e in events] == [False, True]
    # Delivered: the outbox is empty, another run sends nothing more.
    stack.run_cron(push_base(stack))
    assert len(messages_to(stack, device, timeout=1)) == 1


def test_invalid_subscriptions_are_typed_400s_and_push_off_is_a_typed_501(stack, api):
    good = stack.push_subscription()
    cases = [
        ({**good, "endpoint": "http://push.example.net/x"}, "endpoint"),
        ({**good, "endpoint": "https://evil.example.net/push/x"}, "endpoint"),
        ({**good, "keys": {**good["keys"], "p256dh": good["keys"]["p256dh"][:40]}}, "keys.p256dh"),
        ({**good, "keys": {**good["keys"], "auth": "c2hvcnQ"}}, "keys.auth"),
        ({"endpoint": good["endpoint"]}, "keys"),
    ]
    for body, field in cases:
        r = api.call("PUT", "/api/v1/me/push", as_user="bad-sub", body=body)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_request" and r.json()["error"]["field"] == field
    r = requests.put(f"{api.base}/api/v1/me/push", json=good, timeout=30)
    assert r.status_code == 401
    # At most 10 devices a person.
    sub, _ = person("many")
    for _ in range(10):
        subscribe(stack, api, sub)
    r = api.call("PUT", "/api/v1/me/push", as_user=sub, body=stack.push_subscription())
    assert r.status_code == 409 and r.json()["error"]["code"] == "too_many_devices", r.text
    # The main worker has no VAPID_KEY: push is off, and says so.
    r = Api(stack).call("PUT", "/api/v1/me/push", as_user="x", body=good)
    assert r.status_code == 501 and r.json()["error"]["code"] == "push_not_configured", r.text


def test_unsubscribing_stops_the_messages_and_touches_nobody_elses_device(stack, api):
    sub, _ = person("uns")
    device = subscribe(stack, api, sub)
    other = api.call("DELETE", "/api/v1/me/push", as_user="someone-else", body={"endpoint": device["endpoint"]})
    assert other.status_code == 200 and other.json() == {"subscribed": False}
    kept, _ = register(api, [{"sub": sub}])
    assert [m["payload"]["url"] for m in messages_to(stack, device)] == [kept["url"]], "still the owner's device"
    r = api.call("DELETE", "/api/v1/me/push", as_user=sub, body={"endpoint": device["endpoint"]})
    assert r.status_code == 200 and r.json() == {"subscribed": False}
    answer, _ = register(api, [{"sub": sub}])
    assert pushed(api, answer["id"], sub, timeout=2) == []
    assert len(messages_to(stack, device, timeout=1)) == 1


def push_base(stack) -> str:
    return f"http://127.0.0.1:{stack.extra_ports['push']}"


# The browser's own push service (FCM for Chromium) is out of reach here: the page's PushManager hands out a test
# subscription of the stand-in instead (kept across the page's navigations), so that the settings page's real code
# path — permission, subscribe with the applicationServerKey, PUT — runs against the stand-in.
STUB_PUSH_MANAGER = """
(() => {
  const sub = %s;
  const current = () => sessionStorage.getItem("stub-push") ? {
    endpoint: sub.endpoint, toJSON: () => sub,
    unsubscribe: async () => { sessionStorage.removeItem("stub-push"); return true; },
  } : null;
  PushManager.prototype.subscribe = async function (options) {
    const key = new Uint8Array(options.applicationServerKey);
    sessionStorage.setItem("stub-push-key", btoa(String.fromCharCode(...key)));
    sessionStorage.setItem("stub-push", "1");
    return current();
  };
  PushManager.prototype.getSubscription = async function () { return current(); };
})();
"""


def test_settings_turns_notifications_on_the_service_worker_shows_them_and_a_tap_opens_the_approval(
        stack, api, push, browser):
    """375×812: turn on in settings (notifications granted via CDP), the worker's message to the device delivered to
    the service worker (CDP ServiceWorker.deliverPushMessage) shows one notification, tapping it opens /a/{id};
    Japanese texts; sign-out removes the device. Screenshots: tests/artifacts/push-*.png."""
    from playwright.sync_api import expect

    import json as _json
    device = stack.push_subscription()
    leaks.SEEN.push_endpoints.add(device["endpoint"])
    with Tab(browser, viewport=MOBILE, bypass_csp=True) as t:
        t.ctx.add_init_script(STUB_PUSH_MANAGER % _json.dumps(device))
        page = t.open_signed_in(stack, "/settings", user="alice", base_url=push)
        # The service worker controls the page from its next load (the click below navigates this tab).
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        page.reload()
        expect(page.get_by_test_id("push-state")).to_have_attribute("data-state", "off")
        t.ctx.grant_permissions(["notifications"], origin=push)
        page.get_by_test_id("push-toggle").click()
        expect(page.get_by_test_id("push-state")).to_have_attribute("data-state", "on")
        vapid = requests.get(f"{push}/config.json", timeout=30).json()["vapidPublicKey"]
        sent_key = base64.b64decode(page.evaluate("sessionStorage.getItem('stub-push-key')"))
        assert sent_key == base64.urlsafe_b64decode(vapid + "="), "subscribed with the installation's VAPID key"
        axe_check(page, "settings, notifications on")
        page.screenshot(path=str(ARTIFACTS / "push-settings-on-mobile.png"), full_page=True)
        t.inbox.switch_language()
        expect(page.get_by_test_id("push-state")).to_contain_text("オン")
        expect(page.get_by_test_id("push-section")).to_contain_text("この端末への通知")
        t.inbox.switch_language()
        # Off (the worker forgets the device, then the browser does) and on again.
        page.get_by_test_id("push-toggle").click()
        expect(page.get_by_test_id("push-state")).to_have_attribute("data-state", "off")
        off, _ = register(api, [{"sub": demo_sub("alice")}])
        assert pushed(api, off["id"], demo_sub("alice"), timeout=2) == []
        page.get_by_test_id("push-toggle").click()
        expect(page.get_by_test_id("push-state")).to_have_attribute("data-state", "on")

        answer, token = register(api, [{"sub": demo_sub("alice")}])
        [m] = messages_to(stack, device)
        assert m["payload"]["url"] == answer["url"]
        # The push service hands the (decrypted) message to the browser's service worker.
        cdp = t.ctx.new_cdp_session(page)
        registrations, versions = [], []
        cdp.on("ServiceWorker.workerRegistrationUpdated", lambda e: registrations.extend(e["registrations"]))
        cdp.on("ServiceWorker.workerVersionUpdated", lambda e: versions.extend(e["versions"]))
        cdp.send("ServiceWorker.enable")

        def active_registration():
            # The latest state reported of the scope's registration (earlier events may describe one since
            # replaced), once a version of it is activated: a push to a registration without one is dropped.
            regs = [r["registrationId"] for r in registrations if r["scopeURL"] == push + "/" and not r.get("isDeleted")]
            ready = {v["registrationId"] for v in versions if v.get("status") == "activated"}
            return regs[-1] if regs and regs[-1] in ready else None

        deadline = time.monotonic() + 30
        while active_registration() is None and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        reg = active_registration()
        assert reg is not None, (registrations, versions)
        # Delivered again while nothing is shown, as a push service does until the browser takes the message (the
        # same tag: a second delivery replaces the first notification, it does not add one).
        shown, delivered = [], 0.0
        while not shown and time.monotonic() < deadline:
            if time.monotonic() - delivered > 5:
                cdp.send("ServiceWorker.deliverPushMessage", {"origin": push, "registrationId": reg, "data": m["plaintext"]})
                delivered = time.monotonic()
            page.wait_for_timeout(100)
            shown = page.evaluate("""async () => (await (await navigator.serviceWorker.ready).getNotifications())
                .map(n => ({title: n.title, body: n.body, tag: n.tag, data: n.data, lang: n.lang}))""")
        [n] = shown
        assert n["title"] == "Deploy payments v2.4" and "Requested by ci@example.com" in n["body"]
        assert n["tag"] == f"/a/{answer['id']}" and n["data"] == {"url": answer["url"]} and n["lang"] == "en"
        assert token not in _json.dumps(n)
        # A tap: the service worker's notificationclick opens the approval in this tab.
        [sw] = [w for w in t.ctx.service_workers if w.url.startswith(push)]
        sw.evaluate("""async () => {
            const [n] = await self.registration.getNotifications();
            self.dispatchEvent(new NotificationEvent("notificationclick", {notification: n}));
        }""")
        page.wait_for_url(answer["url"], timeout=15_000)
        expect(t.approval.title).to_have_text("Deploy payments v2.4")

        # Signing out forgets this device first: the next approval is not pushed to it.
        page.get_by_test_id("sign-out").click()
        page.wait_for_function("() => !sessionStorage.getItem('stub-push')", timeout=15_000)
        later, _ = register(api, [{"sub": demo_sub("alice")}])
        assert pushed(api, later["id"], demo_sub("alice"), timeout=2) == []
        assert len(messages_to(stack, device, timeout=1)) == 1
        assert not t.csp_problems(), t.problems


@pytest.fixture(scope="module")
def push_ddb(stack):
    """A push worker on the DynamoDB backend (a table of its own in moto)."""
    stack.start_pushbox()
    return stack.extra_worker("push-ddb", {**stack.dynamodb_vars("ringi-push-approvals"), **stack.push_vars()})


def test_on_dynamodb_devices_are_reached_retried_dropped_limited_and_unsubscribed(stack, push_ddb):
    api = Api(stack, push_ddb)
    sub, email = person("ddb")
    phone = subscribe(stack, api, sub, email=email, groups=["ddb-team"])
    # By email, by group, by sub: each reaches the device, VAPID checked and decrypted by the stand-in.
    by_email, token = register(api, [{"email": email}])
    [m] = messages_to(stack, phone)
    assert m["payload"]["url"] == by_email["url"] and m["payload"]["title"] == "Deploy payments v2.4"
    assert token not in m["plaintext"] and m["topic"] == by_email["id"]
    by_group, _ = register(api, [{"group": "ddb-team"}])
    assert [x["payload"]["url"] for x in messages_to(stack, phone, 2)][1] == by_group["url"]
    [event] = pushed(api, by_group["id"], sub, groups=["ddb-team"])
    assert event["detail"]["delivered"] is True and event["detail"]["mail"] == "request"
    # A failing push service: retried by the cron (its outbox Scan).
    stack.push_control("fail", {"count": 1, "status": 503})
    retried, _ = register(api, [{"sub": sub}])
    [failed] = pushed(api, retried["id"], sub)
    assert failed["detail"]["delivered"] is False and failed["detail"]["error"] == "HTTP 503"
    stack.run_cron(push_ddb)
    assert messages_to(stack, phone, 3)[2]["payload"]["url"] == retried["url"]
    assert [e["detail"]["delivered"] for e in pushed(api, retried["id"], sub, n=2)] == [False, True]
    # Gone: dropped, and not tried again.
    stack.push_control("gone", {"endpoint": phone["endpoint"]})
    gone, _ = register(api, [{"sub": sub}])
    [dropped] = pushed(api, gone["id"], sub)
    assert dropped["detail"]["dropped"] is True
    after, _ = register(api, [{"sub": sub}])
    assert pushed(api, after["id"], sub, timeout=2) == []
    # At most 10 devices; unsubscribing is the owner's alone.
    many, _ = person("ddbmany")
    devices = [subscribe(stack, api, many) for _ in range(10)]
    r = api.call("PUT", "/api/v1/me/push", as_user=many, body=stack.push_subscription())
    assert r.status_code == 409 and r.json()["error"]["code"] == "too_many_devices", r.text
    assert api.call("DELETE", "/api/v1/me/push", as_user="stranger", body={"endpoint": devices[0]["endpoint"]}).ok
    kept, _ = register(api, [{"sub": many}])
    assert [x["payload"]["url"] for x in messages_to(stack, devices[0])] == [kept["url"]]
    for d in devices:
        assert api.call("DELETE", "/api/v1/me/push", as_user=many, body={"endpoint": d["endpoint"]}).ok
    quiet, _ = register(api, [{"sub": many}])
    assert pushed(api, quiet["id"], many, timeout=2) == []

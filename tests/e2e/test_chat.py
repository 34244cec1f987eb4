"""Chat notifications: a registration's `notify` names channels configured server-side (CHAT_CHANNELS: the stack
points one Slack, one Teams and one signed-webhook channel at standins/chatbox.py). The stand-in receives the
payloads with the short link and no token; the webhook's signature verifies; an unknown channel is a 400; a
failing receiver is retried by the cron; every try is a `notified` event by channel name; no URL or secret
shows up in a response or a log."""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time

import requests

from support import ARTIFACTS, leaks
from support.api import round_trips
from support.pages import MOBILE, Tab, axe_check, sub

CHANNELS = [{"channel": "deploys"}, {"channel": "ops-teams"}, {"channel": "audit-hook"}]


def register(stack, notify, url=None, **fields):
    token = "tok-" + secrets.token_hex(12)
    leaks.SEEN.task_tokens.add(token)
    body = {"taskToken": token, "approvers": [{"email": "alice@example.com"}], "title": "Deploy payments v2.4",
            "timeoutSeconds": 3600, "notify": notify, "context": {"requestedBy": "ci@example.com"}, **fields}
    r = requests.post(f"{url or stack.base_url}/api/v1/approvals", json=body,
                      headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)
    return r, token


def messages_for(stack, link: str, want: int, timeout: float = 30.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        found = [m for m in stack.chat_messages() if link in m["raw"]]
        if len(found) >= want or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def notified(api, approval_id: str, as_user: str = "alice") -> list:
    view = api.get(approval_id, as_user=as_user, email="alice@example.com")
    assert view.status_code == 200, view.text
    return [e for e in view.json()["events"] if e["kind"] == "notified"]


def wait_notified(api, approval_id: str, n: int, timeout: float = 20.0, as_user: str = "alice") -> list:
    deadline = time.monotonic() + timeout
    while len(events := notified(api, approval_id, as_user)) < n and time.monotonic() < deadline:
        time.sleep(0.3)
    return events


def test_slack_teams_and_the_signed_webhook_get_the_link_and_no_token(stack, api):
    r, token = register(stack, [{"email": "alice@example.com"}, *CHANNELS])
    assert r.status_code == 201, r.text
    link = r.json()["url"]
    approval_id = r.json()["id"]
    got = {m["channel"]: m for m in messages_for(stack, link, 3)}
    assert set(got) == {"deploys", "ops-teams", "audit-hook"}, got.keys()
    for m in got.values():
        assert token not in m["raw"] and "taskToken" not in m["raw"]
        assert m["contentType"] == "application/json"

    slack = got["deploys"]["body"]
    assert [b["type"] for b in slack["blocks"]] == ["header", "section", "actions", "context"]
    assert slack["blocks"][0]["text"] == {"type": "plain_text", "text": "Deploy payments v2.4", "emoji": False}
    [button] = slack["blocks"][2]["elements"]
    assert button["type"] == "button" and button["url"] == link
    facts = json.dumps(slack["blocks"][1]["fields"])
    assert "Requested by: ci@example.com" in facts and "Registered by: api-key:" in facts and "Decide before" in facts

    card = got["ops-teams"]["body"]["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert card["content"]["type"] == "AdaptiveCard"
    assert card["content"]["actions"] == [{"type": "Action.OpenUrl", "title": "Open the request", "url": link}]

    hook = got["audit-hook"]
    assert hook["body"]["type"] == "approval.requested" and hook["body"]["channel"] == "audit-hook"
    assert hook["body"]["approval"]["id"] == approval_id and hook["body"]["approval"]["url"] == link
    assert hook["body"]["approval"]["requestedBy"] == "ci@example.com"
    # The stand-in verified it; and the documented recipe, done here with the channel's secret, agrees.
    assert hook["signature"]["verified"] is True, hook["signature"]
    t, v1 = (part.split("=", 1)[1] for part in hook["signatureHeader"].split(","))
    secret = stack.chat_channels["audit-hook"]["secret"]
    assert hmac.compare_digest(hmac.new(secret.encode(), f"{t}.{hook['raw']}".encode(), hashlib.sha256).hexdigest(), v1)
    assert abs(time.time() - int(t)) < 120
    # Slack and Teams are not signed.
    assert got["deploys"]["signature"] is None and got["ops-teams"]["signature"] is None

    # The mail still went to the email entry.
    mailed = stack.wait_mail(lambda ms: any(link in (m.get("body") or "") for m in ms), timeout=20)
    assert any(link in (m.get("body") or "") for m in mailed), "no request mail"

    # Each channel is in the audit trail by name, never by URL.
    events = wait_notified(api, approval_id, 3)
    assert sorted((e["detail"]["channel"], e["detail"]["via"], e["detail"]["delivered"]) for e in events) == [
        ("audit-hook", "webhook", True), ("deploys", "slack", True), ("ops-teams", "teams", True)], events
    assert all(e["actor"] == {"type": "system"} for e in events)
    view = api.get(approval_id, as_user="alice", email="alice@example.com").text
    assert not any(ch["url"] in view or ch["url"].rsplit("/", 1)[1] in view for ch in stack.chat_channels.values())


def test_only_configured_channels_may_be_named(stack):
    for notify, field in (([{"channel": "nope"}], "notify[0].channel"),
                          (["alice@example.com", {"channel": stack.chat_channels["deploys"]["url"]}], "notify[1].channel"),
                          ([{"channel": "deploys", "url": "https://attacker.example/hook"}], "notify[0]"),
                          ([{"webhook": "https://attacker.example/hook"}], "notify[0]")):
        r, _ = register(stack, notify)
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert (err["code"], err["field"]) == ("invalid_request", field), err
        # The refusal names no configured channel nor any URL of one.
        assert "ops-teams" not in r.text and "/hooks/" not in r.text


def test_a_failing_receiver_is_retried_by_the_cron_until_it_takes_the_message(stack, backend):
    """On both storage backends: the channels still due, the attempts and the `notified` events are the
    backend's."""
    api = backend.api
    refused = requests.get(f"{stack.chat_url}/messages.json", timeout=10).json()["refused"]
    stack.chat_fail(2)  # the delivery after the response and the first cron retry get a 500
    r, _ = register(stack, [{"channel": "deploys"}], url=backend.url)
    assert r.status_code == 201, r.text
    link, approval_id = r.json()["url"], r.json()["id"]
    events = wait_notified(api, approval_id, 1)
    assert [(e["detail"]["delivered"], e["detail"].get("error")) for e in events] == [(False, "HTTP 500")], events
    assert messages_for(stack, link, 1, timeout=1) == []

    backend.run_cron()
    events = wait_notified(api, approval_id, 2)
    assert [e["detail"]["delivered"] for e in events] == [False, False], events
    assert messages_for(stack, link, 1, timeout=1) == []

    backend.run_cron()
    [m] = messages_for(stack, link, 1)
    assert m["channel"] == "deploys"
    events = wait_notified(api, approval_id, 3)
    assert [e["detail"]["delivered"] for e in events] == [False, False, True], events
    assert requests.get(f"{stack.chat_url}/messages.json", timeout=10).json()["refused"] == refused + 2

    # Delivered: a further cron run posts nothing again.
    backend.run_cron()
    time.sleep(1)
    assert len(messages_for(stack, link, 2, timeout=1)) == 1
    assert len(notified(api, approval_id)) == 3


def test_registration_with_channels_stays_one_d1_round_trip(stack):
    """The channels are stored in the registration's one insert; the posts go after the response."""
    url = stack.extra_worker("chattrips", {"INJECT_LATENCY": "header"})
    token = "tok-" + secrets.token_hex(12)
    leaks.SEEN.task_tokens.add(token)
    r = requests.post(f"{url}/api/v1/approvals", json={
        "taskToken": token, "approvers": [{"sub": "alice"}], "title": "Counted", "timeoutSeconds": 600,
        "notify": CHANNELS}, headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)
    assert r.status_code == 201, r.text
    assert round_trips(r) == {"d1": 1, "sfn": 0, "ses": 0}
    assert len(messages_for(stack, r.json()["url"], 3)) == 3


def test_the_post_to_chat_shows_in_the_approval_timeline_on_a_phone(stack, api, browser):
    token = "tok-" + secrets.token_hex(12)
    leaks.SEEN.task_tokens.add(token)
    r = requests.post(f"{stack.base_url}/api/v1/approvals", json={
        "taskToken": token, "approvers": [{"sub": sub("alice")}], "title": "Rotate the signing key",
        "timeoutSeconds": 600, "notify": [{"channel": "deploys"}]},
        headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    assert len(messages_for(stack, r.json()["url"], 1)) == 1 and len(wait_notified(api, approval_id, 1, as_user=sub("alice"))) == 1
    with Tab(browser, viewport=MOBILE, bypass_csp=True) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}", "alice")
        t.approval.by("timeline").wait_for()
        events = t.approval.by("timeline-event")
        kinds = [e.get_attribute("data-kind") for e in events.all()]
        assert "notified" in kinds, kinds
        posted = events.nth(kinds.index("notified"))
        text = posted.inner_text()
        assert "Posted to chat" in text and "deploys" in text and "Slack" in text, text
        assert "/hooks/" not in page.content()
        posted.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "chat-timeline-mobile.png"), full_page=True)
        axe_check(page, "approval timeline with a chat post")
        t.approval.switch_language()
        assert "チャットに通知" in t.approval.by("timeline-event").nth(kinds.index("notified")).inner_text()


def test_no_webhook_url_or_secret_in_any_log(stack):
    logs = {p.name: p.read_text(errors="replace") for p in stack.state.iterdir() if leaks.ours(p)}
    assert "chatbox.log" in logs and "worker.log" in logs, sorted(logs)
    chat_secrets = {k: v for k, v in leaks.secrets_of(stack, leaks.Seen()).items() if k.startswith("chat channel")}
    assert len(chat_secrets) == 7, chat_secrets.keys()
    assert leaks.scan(logs, leaks.SEEN.responses, chat_secrets) == []
    # The worker did log its deliveries.
    assert '"event":"chat_sent"' in logs["worker.log"]

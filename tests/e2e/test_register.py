"""Registration (`POST /api/v1/approvals`): machine auth, validation with the failing field, idempotency."""
import hashlib
import json
import secrets
import socket
import threading
import time

import pytest
import requests

from ringi_stack import MACHINE_CLIENT_ID, REGISTER_SCOPE
from support.api import d1


def post(stack, body, credential=None):
    cred = stack.api_key if credential is None else credential
    return requests.post(f"{stack.base_url}/api/v1/approvals", json=body,
                         headers={"authorization": f"Bearer {cred}"} if cred else {}, timeout=30)


def body(**over):
    b = {"taskToken": "tok-" + secrets.token_hex(8), "approvers": [{"sub": "alice"}], "title": "Deploy",
         "timeoutSeconds": 600}
    b.update(over)
    return b


def test_api_key_registers_and_returns_the_short_link(stack):
    r = post(stack, body())
    assert r.status_code == 201, r.text
    j = r.json()
    assert len(j["id"]) == 22 and j["url"] == f"{stack.base_url}/a/{j['id']}"
    assert j["expiresAt"].endswith("Z")
    assert "taskToken" not in r.text


def test_machine_auth_is_required(stack):
    assert post(stack, body(), credential="").status_code == 401
    assert post(stack, body(), credential="rk_wrong").status_code == 401
    # A client-credentials token of a client in REGISTER_CLIENT_IDS with the scope registers.
    assert post(stack, body(), credential=stack.mint_machine()).status_code == 201
    # The same client without the scope: 403.
    assert post(stack, body(), credential=stack.mint_machine(scope="openid")).status_code == 403


def test_only_machine_tokens_register_never_a_persons(stack):
    """People sign in with COGNITO_CLIENT_ID, which is not a registering client: their tokens are refused even
    with the registration scope (401). A person's token from a registering client (it names a user) is 403."""
    scope = REGISTER_SCOPE
    assert post(stack, body(), credential=stack.mint("alice")).status_code == 401
    assert post(stack, body(), credential=stack.mint("alice", scope=scope)).status_code == 401
    assert post(stack, body(), credential=stack.mint("alice", scope=scope, username=None)).status_code == 401
    person = stack.mint("alice", client_id=MACHINE_CLIENT_ID, scope=scope)
    r = post(stack, body(), credential=person)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
    cognito_user = stack.mint("alice", client_id=MACHINE_CLIENT_ID, scope=scope, username=None,
                              **{"cognito:username": "alice"})
    assert post(stack, body(), credential=cognito_user).status_code == 403


def test_without_register_client_ids_no_token_registers(stack):
    """No fallback to COGNITO_CLIENT_ID: a worker without REGISTER_CLIENT_IDS takes API keys only."""
    url = stack.extra_worker("no-register-clients", {"REGISTER_CLIENT_IDS": ""})
    send = lambda cred: requests.post(f"{url}/api/v1/approvals", json=body(), timeout=30,  # noqa: E731
                                      headers={"authorization": f"Bearer {cred}"})
    assert send(stack.mint_machine()).status_code == 401
    # A client-credentials-shaped token of the SPA's own client, which the fallback used to accept.
    assert send(stack.mint_machine(client_id=stack.client_id)).status_code == 401
    assert send(stack.api_key).status_code == 201


def test_client_chosen_ids_must_be_unguessable(stack):
    for short in ["openapi-idem-0001", "wf-0000000000000000001", "a" * 30, "abcdefghijklmnopqrstu"]:
        r = post(stack, body(approvalId=short))
        assert r.status_code == 400 and r.json()["error"]["field"] == "approvalId", (short, r.text)
    chosen = secrets.token_urlsafe(16)
    r = post(stack, body(approvalId=chosen))
    assert r.status_code == 201 and r.json()["id"] == chosen


def test_one_line_fields_lose_bidi_and_zero_width_controls(stack, api):
    r = post(stack, body(title="Refund \u202e0001$\u202c to \u200bACME\ufeff", approvers=[{"sub": "alice"}],
                         form=[{"name": "risk", "label": "\u2067Risk\u2069", "type": "choice",
                                "options": ["lo\u200dw", "high\u061c"], "help": "pick \u200eone"}]))
    assert r.status_code == 201, r.text
    view = api.get(r.json()["id"]).json()
    assert view["title"] == "Refund 0001$ to ACME"
    assert view["form"] == [{"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"],
                             "help": "pick one", "required": False}]
    r = post(stack, body(form=[{"name": "a", "label": "A", "type": "text", "help": "h" * 501}]))
    assert r.status_code == 400 and r.json()["error"]["field"] == "form[0].help", r.text


def test_same_id_same_token_is_idempotent_and_a_different_token_conflicts(stack):
    b = body(approvalId="wf-" + secrets.token_urlsafe(16))
    first = post(stack, b)
    assert first.status_code == 201
    again = post(stack, b)
    assert again.status_code == 200 and again.json() == first.json()
    other = post(stack, {**b, "taskToken": "another-token"})
    assert other.status_code == 409 and other.json()["error"]["code"] == "duplicate_approval"


def test_one_task_token_is_one_approval(stack):
    """EventBridge delivers at least once and the workflow sends no ID: a redelivery of the same request is
    answered with the approval it made; a different request for the same task is a conflict."""
    b = body(approvers=[{"email": f"dedupe-{secrets.token_hex(4)}@example.com"}])
    first = post(stack, b)
    assert first.status_code == 201, first.text
    again = post(stack, b)
    assert again.status_code == 200 and again.json() == first.json()
    # The same detail in a new envelope (EventBridge's retry carries the same event).
    event = {"version": "0", "id": "e-1", "detail-type": "ringi.approval.requested", "source": "ringi.workflow",
             "time": "2026-12-01T00:00:00Z", "detail": b}
    redelivered = post(stack, event)
    assert redelivered.status_code == 200 and redelivered.json() == first.json()
    changed = post(stack, {**b, "title": "Something else"})
    assert changed.status_code == 409 and changed.json()["error"]["code"] == "duplicate_approval"
    other_id = post(stack, {**b, "approvalId": "wf-" + secrets.token_urlsafe(16)})
    assert other_id.status_code == 409, "the same task under another ID"
    fingerprint = hashlib.sha256(b["taskToken"].encode()).hexdigest()
    assert d1(stack, f"SELECT id FROM approvals WHERE token_sha256 = '{fingerprint}'") == [{"id": first.json()["id"]}]


def test_eventbridge_event_envelope_is_accepted(stack):
    event = {"version": "0", "id": "e1", "detail-type": "ringi.approval.requested", "source": "ringi.workflow",
             "detail": body()}
    assert post(stack, event).status_code == 201


@pytest.mark.parametrize("over,field", [
    ({"taskToken": ""}, "taskToken"),
    ({"taskToken": "x" * 2049}, "taskToken"),
    ({"approvers": []}, "approvers"),
    ({"approvers": [{"role": "x"}]}, "approvers[0]"),
    ({"quorum": 2}, "quorum"),
    ({"title": ""}, "title"),
    ({"timeoutSeconds": -1}, "timeoutSeconds"),
    ({"timeoutSeconds": 400 * 86400}, "timeoutSeconds"),
    ({"form": [{"name": "a", "label": "A", "type": "date"}]}, "form"),
    ({"unexpected": True}, "unexpected"),
])
def test_validation_names_the_field(stack, over, field):
    r = post(stack, body(**over))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert r.json()["error"]["field"] == field


def test_malformed_json_is_a_400(stack):
    r = requests.post(f"{stack.base_url}/api/v1/approvals", data="{nope",
                      headers={"authorization": f"Bearer {stack.api_key}", "content-type": "application/json"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_body"


def test_a_chunked_body_under_the_cap_is_read_whole(stack):
    raw = json.dumps(body()).encode()
    chunks = (raw[i:i + 7] for i in range(0, len(raw), 7))  # a generator: requests sends it chunked
    r = requests.post(f"{stack.base_url}/api/v1/approvals", data=chunks, timeout=30,
                      headers={"authorization": f"Bearer {stack.api_key}", "content-type": "application/json"})
    assert r.status_code == 201, r.text


def test_a_chunked_body_over_the_cap_is_refused_without_waiting_for_its_end(stack):
    """No Content-Length: the worker reads the stream and answers 413 once it passes 512 KiB, instead of
    buffering until the client finishes (this client sends 640 KiB and then never ends the body)."""
    with socket.create_connection(("127.0.0.1", stack.ports.worker), timeout=20) as s:
        s.sendall(f"POST /api/v1/approvals HTTP/1.1\r\nHost: 127.0.0.1:{stack.ports.worker}\r\n"
                  f"Authorization: Bearer {stack.api_key}\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n".encode())
        piece = b" " * 65536

        def feed():
            try:
                for _ in range(10):
                    s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            except OSError:
                pass  # the worker answered and closed

        threading.Thread(target=feed, daemon=True).start()
        t0 = time.monotonic()
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            assert chunk, "connection closed without an answer"
            head += chunk
        assert head.startswith(b"HTTP/1.1 413"), head[:200]
        assert time.monotonic() - t0 < 15
        assert b"payload_too_large" in head or b"payload_too_large" in s.recv(4096)


def test_notify_names_only_approvers_or_allowed_domains(stack):
    """A registrant cannot make ringi mail anyone: besides the approvers' own addresses, only domains the
    operator lists in MAIL_ALLOWED_DOMAINS."""
    approver = f"appr-{secrets.token_hex(4)}@example.com"
    ok = post(stack, body(approvers=[{"email": approver}], notify=[approver.upper()]))
    assert ok.status_code == 201, ok.text
    r = post(stack, body(approvers=[{"email": approver}], notify=[approver, "anyone@elsewhere.test"]))
    assert r.status_code == 400 and r.json()["error"]["field"] == "notify[1]", r.text
    url = stack.extra_worker("maildomains", {"MAIL_ALLOWED_DOMAINS": "elsewhere.test"})
    r = requests.post(f"{url}/api/v1/approvals", json=body(notify=["ops@elsewhere.test"]),
                      headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)
    assert r.status_code == 201, r.text
    r = requests.post(f"{url}/api/v1/approvals", json=body(notify=["ops@elsewhere.test.evil.example"]),
                      headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["field"] == "notify[0]"


def test_the_authenticated_registrant_is_recorded_and_shown(stack, api):
    key_label = "api-key:" + hashlib.sha256(stack.api_key.encode()).hexdigest()[:8]
    who = f"reg-{secrets.token_hex(4)}@example.com"
    # The free-text context claims someone else: approvers see both, apart.
    by_key = post(stack, body(approvers=[{"email": who}], context={"requestedBy": "ceo@example.com"}))
    assert by_key.status_code == 201, by_key.text
    view = api.get(by_key.json()["id"], as_user="reg-sub", email=who).json()
    assert view["registeredBy"] == key_label and view["context"]["requestedBy"] == "ceo@example.com"
    by_client = post(stack, body(approvers=[{"sub": "alice"}]), credential=stack.mint_machine())
    assert api.get(by_client.json()["id"]).json()["registeredBy"] == f"client:{MACHINE_CLIENT_ID}"
    from test_lifecycle import wait_mails
    [mail] = wait_mails(stack, who, 1)
    assert f"Registered by: {key_label}" in mail["body"] and "Requested by: ceo@example.com" in mail["body"]


def test_registrations_are_rate_limited_per_credential(stack, clock):
    url = stack.extra_worker("ratelimit", {"REGISTER_RATE_PER_MINUTE": "3"})

    def send(credential):
        return requests.post(f"{url}/api/v1/approvals", json=body(),
                             headers={"authorization": f"Bearer {credential}"}, timeout=30)

    # All inside one minute window (the counter's unit): near a window's end, the test clock moves to the next.
    if time.time() % 60 > 45:
        clock.advance(61 - time.time() % 60)
    assert [send(stack.api_key).status_code for _ in range(3)] == [201, 201, 201]
    limited = send(stack.api_key)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited", limited.text
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    # Another credential has its own budget; nothing of the refused one was stored.
    assert send(stack.mint_machine()).status_code == 201
    persist = stack.state / "worker-ratelimit-d1"
    assert d1(stack, "SELECT count(*) AS n FROM approvals", persist=persist) == [{"n": 4}]

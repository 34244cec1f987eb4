"""The EventBridge path and the `make dev` demo: the documented workflow (docs/workflow/approval.jsonpath.asl.json) runs
end to end in moto — putEvents.waitForTaskToken → rule → SQS → standins/relay.py → POST /api/v1/approvals →
mail (mailbox page) → decision → the execution resumes on the right branch with its input kept."""
import json
import re
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests
from playwright.sync_api import sync_playwright

from ringi_stack import EVENT_DETAIL_TYPE, EVENT_SOURCE, chromium, demo_input
from support import ROOT, program
from support.api import wait_execution_done

relay = program("standins/relay.py")

DOCS = ROOT / "docs" / "workflow"
ALICE = {"email": "alice@example.com"}


def alice(stack):
    return {"authorization": f"Bearer {stack.mint('any-sub', email='alice@example.com')}"}


def registered(stack, execution_arn, timeout=20.0) -> dict:
    """Polls alice's inbox until the relay has registered the execution's approval; returns the item."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = requests.get(f"{stack.base_url}/api/v1/approvals", headers=alice(stack), timeout=30)
        assert r.status_code == 200, r.text
        mine = [i for i in r.json()["items"] if i["context"].get("executionArn") == execution_arn]
        if mine:
            return mine[0]
        time.sleep(0.2)
    raise AssertionError(f"not registered within {timeout}s; relay log:\n{(stack.state / 'relay.log').read_text()}")


def wait_done(stack, arn, timeout=20.0) -> dict:
    return wait_execution_done(stack.aws("stepfunctions"), arn, timeout)


def states_entered(stack, arn) -> list:
    events = stack.aws("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def decide(stack, approval_id, body):
    return requests.post(f"{stack.base_url}/api/v1/approvals/{approval_id}/decision", json=body,
                         headers=alice(stack), timeout=60)


def mailbox(stack, containing: str | None = None) -> str:
    """The mailbox page; with `containing`, once that text is on it (mail goes out after the registration's
    response)."""
    deadline = time.monotonic() + 15
    while True:
        r = requests.get(f"{stack.mailbox_url}/", timeout=30)
        assert r.status_code == 200
        if containing is None or containing in r.text or time.monotonic() > deadline:
            return r.text
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------------- the docs


def test_both_documented_workflows_send_the_same_registration(stack):
    path = json.loads((DOCS / "approval.jsonpath.asl.json").read_text())
    ata = json.loads((DOCS / "approval.jsonata.asl.json").read_text())
    assert ata["QueryLanguage"] == "JSONata" and "QueryLanguage" not in path
    p, a = path["States"]["RequestApproval"], ata["States"]["RequestApproval"]
    for task in (p, a):
        assert task["Resource"] == "arn:aws:states:::events:putEvents.waitForTaskToken"
        assert [c["ErrorEquals"] for c in task["Catch"]] == [["Rejected"], ["States.Timeout"]]
        assert [c["Next"] for c in task["Catch"]] == ["Rejected", "TimedOut"] and task["Next"] == "Approved"
    [pe], [ae] = p["Parameters"]["Entries"], a["Arguments"]["Entries"]
    for entry in (pe, ae):
        assert (entry["Source"], entry["DetailType"], entry["EventBusName"]) == (EVENT_SOURCE, EVENT_DETAIL_TYPE, "default")
    strip = lambda d: {k.removesuffix(".$") for k in d}  # noqa: E731
    assert strip(pe["Detail"]) == strip(ae["Detail"]) == {
        "taskToken", "approvers", "quorum", "title", "summary", "details", "form", "timeoutSeconds", "context"}
    assert pe["Detail"]["taskToken.$"] == "$$.Task.Token"
    assert pe["Detail"]["timeoutSeconds"] == p["TimeoutSeconds"] == ae["Detail"]["timeoutSeconds"] == a["TimeoutSeconds"]
    assert strip(pe["Detail"]["context"]) == strip(ae["Detail"]["context"]) == {"executionArn", "stateName"}
    assert pe["Detail"]["form"] == ae["Detail"]["form"] and pe["Detail"]["approvers"] == ae["Detail"]["approvers"]
    assert p["ResultPath"] == "$.approval"
    # moto cannot run JSONata (a stub), but its ASL parser checks the JSONata file's structure.
    sfn = stack.aws("stepfunctions")
    arn = sfn.create_state_machine(name=f"ringi-docs-jsonata-{secrets.token_hex(3)}", roleArn="arn:aws:iam::123456789012:role/x",
                                   definition=json.dumps(ata))["stateMachineArn"]
    assert sfn.describe_state_machine(stateMachineArn=arn)["status"] == "ACTIVE"


# ---------------------------------------------------------------------------------------------- end to end


def test_documented_workflow_approved_end_to_end(stack):
    body = demo_input(f"v9.{secrets.randbelow(10**6)}.0")
    arn = stack.start_demo_execution(body)
    item = registered(stack, arn)
    approval_id = item["id"]
    assert item["title"] == f"Deploy payments-api {body['change']['version']} to production"
    assert item["context"] == {"executionArn": arn, "stateName": "RequestApproval"}
    view = requests.get(f"{stack.base_url}/api/v1/approvals/{approval_id}", headers=alice(stack), timeout=30).json()
    assert view["details"] == {k: body["change"][k] for k in ("service", "version", "environment", "requestedBy")}
    assert [f["name"] for f in view["form"]] == ["ticket", "risk", "notes"]
    assert "taskToken" not in json.dumps(view)
    # The mail (to alice, the email approver) is on the mailbox page with its short link clickable.
    short = f"{stack.base_url}/a/{approval_id}"
    page = mailbox(stack, containing=short)
    assert f'<a href="{short}"' in page
    assert page.index(short) < page.index("</article>"), "newest first"
    assert re.search(r"<dd>alice@example\.com</dd>", page)
    # Approve with feedback: the execution resumes with the decision in $.approval, the input kept.
    r = decide(stack, approval_id, {"decision": "approve", "comment": "Go ahead", "feedback": {"risk": "low", "ticket": "CHG-1"}})
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    done = wait_done(stack, arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["change"] == body["change"], "ResultPath keeps the input"
    assert out["approval"]["decision"] == "approved"
    assert out["approval"]["approvalId"] == approval_id
    assert out["approval"]["approvedBy"]["email"] == "alice@example.com"
    assert (out["approval"]["comment"], out["approval"]["feedback"]) == ("Go ahead", {"risk": "low", "ticket": "CHG-1"})
    assert states_entered(stack, arn) == ["RequestApproval", "Approved"]
    delivered = [json.loads(line) for line in (stack.state / "relay.log").read_text().splitlines()
                 if f'"executionArn": "{arn}"' in line]
    assert [(d["event"], d["status"], d["approvalId"]) for d in delivered] == [("delivered", 201, approval_id)]


def test_documented_workflow_rejected_takes_the_rejected_branch(stack):
    body = demo_input()
    arn = stack.start_demo_execution(body)
    approval_id = registered(stack, arn)["id"]
    r = decide(stack, approval_id, {"decision": "reject", "comment": "Not during the freeze"})
    assert r.status_code == 200 and r.json()["status"] == "rejected", r.text
    done = wait_done(stack, arn)
    assert done["status"] == "SUCCEEDED", done
    out = json.loads(done["output"])
    assert states_entered(stack, arn) == ["RequestApproval", "Rejected"]
    assert out["change"] == body["change"] and "approval" not in out
    assert out["rejection"]["error"] == "Rejected"
    cause = out["rejection"]["cause"]
    assert (cause["decision"], cause["comment"], cause["approvalId"]) == ("rejected", "Not during the freeze", approval_id)
    assert cause["rejectedBy"]["email"] == "alice@example.com"


def test_documented_workflow_times_out_and_ringi_refuses_a_late_decision(stack):
    machine = stack.create_workflow(f"ringi-demo-timeout-{secrets.token_hex(3)}", approvers=[ALICE], timeout_seconds=3)
    body = demo_input()
    arn = stack.start_demo_execution(body, state_machine_arn=machine)
    item = registered(stack, arn)
    done = wait_done(stack, arn, timeout=15)
    assert done["status"] == "SUCCEEDED"
    assert states_entered(stack, arn) == ["RequestApproval", "TimedOut"]
    out = json.loads(done["output"])
    assert out["timeout"]["Error"] == "States.Timeout" and out["change"] == body["change"]
    r = decide(stack, item["id"], {"decision": "approve"})
    assert r.status_code == 409, r.text


def test_the_relay_drops_an_invalid_registration_and_logs_why(stack):
    """An event ringi refuses (400) is not retried: one log line names the field, the message is gone."""
    marker = f"arn:aws:states:us-east-1:123456789012:execution:bad:{secrets.token_hex(6)}"
    detail = {"approvers": [ALICE], "title": "no token", "timeoutSeconds": 60, "context": {"executionArn": marker}}
    stack.aws("events").put_events(Entries=[{"Source": EVENT_SOURCE, "DetailType": EVENT_DETAIL_TYPE,
                                             "Detail": json.dumps(detail)}])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        lines = [json.loads(x) for x in (stack.state / "relay.log").read_text().splitlines() if marker in x]
        if lines:
            break
        time.sleep(0.2)
    assert [(x["event"], x["status"]) for x in lines] == [("dropped", 400)]
    assert "taskToken" in lines[0]["reason"]
    assert stack.api_key not in (stack.state / "relay.log").read_text()


class _Fake:
    """SQS calls the relay makes, recorded."""

    def __init__(self):
        self.calls = []

    def delete_message(self, **kw):
        self.calls.append(("delete", kw))

    def change_message_visibility(self, **kw):
        self.calls.append(("visibility", kw))


def test_relay_retries_5xx_and_connection_errors_with_backoff_and_drops_4xx():
    statuses = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            statuses.append(self.headers["authorization"])
            code = int(self.path.rsplit("/", 1)[1])
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b'{"id": "abc"}')

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    msg = lambda n: {"Body": json.dumps({"detail-type": "x", "detail": {}}), "ReceiptHandle": "rh",  # noqa: E731
                     "Attributes": {"ApproximateReceiveCount": str(n)}}
    try:
        cases = [(f"{base}/201", 1, "delivered", ("delete", None)),
                 (f"{base}/503", 1, "retry", ("visibility", 1)),
                 (f"{base}/503", 4, "retry", ("visibility", 8)),
                 (f"{base}/429", 2, "retry", ("visibility", 2)),
                 (f"{base}/401", 9, "retry", ("visibility", 60)),
                 (f"{base}/503", 20, "dropped", ("delete", None)),
                 (f"{base}/400", 1, "dropped", ("delete", None)),
                 (f"{base}/409", 1, "dropped", ("delete", None)),
                 ("http://127.0.0.1:9/closed", 3, "retry", ("visibility", 4))]
        for url, attempt, outcome, (call, timeout) in cases:
            sqs = _Fake()
            assert relay.handle(sqs, "q", msg(attempt), url, "rk_secret", max_attempts=20, timeout=5) == outcome, url
            assert [c[0] for c in sqs.calls] == [call], (url, sqs.calls)
            if timeout is not None:
                assert sqs.calls[0][1]["VisibilityTimeout"] == timeout
        assert set(statuses) == {"Bearer rk_secret"}
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------------- mailbox


def test_mailbox_escapes_a_hostile_title(stack, api):
    who = f"mallory-{secrets.token_hex(4)}@example.com"
    title = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    r = api.register("tok-" + secrets.token_hex(8), approvers=[{"email": who}], title=title)
    assert r.status_code == 201, r.text
    page = mailbox(stack, containing=f"<dd>{who}</dd>")
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;" in page
    assert f"<dd>{who}</dd>" in page


def test_mailbox_is_get_only_loopback_only_and_strict(stack):
    url = f"{stack.mailbox_url}/"
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        r = requests.request(method, url, data="x", timeout=10)
        assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD", method
    assert requests.get(f"{stack.mailbox_url}/nope", timeout=10).status_code == 404
    assert requests.get(url, headers={"host": "evil.example:80"}, timeout=10).status_code == 421, "DNS rebinding"
    h = requests.get(url, timeout=10).headers
    assert "default-src 'none'" in h["content-security-policy"] and "script-src" not in h["content-security-policy"]
    assert "frame-ancestors 'none'" in h["content-security-policy"]
    assert (h["x-content-type-options"], h["referrer-policy"], h["cache-control"]) == ("nosniff", "no-referrer", "no-store")


def test_mailbox_renders_the_mail_body_in_a_sandbox_without_running_it(stack):
    """A mail body with a script: shown in the sandboxed frame, never executed; the links stay clickable."""
    who = f"sandbox-{secrets.token_hex(4)}@example.com"
    link = f"{stack.base_url}/a/sandboxprobe{secrets.token_hex(4)}"
    stack.aws("sesv2").send_email(
        FromEmailAddress="ringi@example.com", Destination={"ToAddresses": [who]},
        Content={"Simple": {"Subject": {"Data": "sandbox probe"}, "Body": {"Html": {"Data": (
            f"<p id=probe>visible text</p><script>parent.document.title='pwned';document.title='ran'</script>"
            f"<img src=x onerror=\"parent.document.title='pwned'\"><a href=\"{link}\">open</a>"
            f"<a href=\"javascript:alert(1)\">js</a>")}}}})
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            page = browser.new_page()
            dialogs = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(f"{stack.mailbox_url}/", wait_until="load")
            article = page.locator("article", has_text=who)
            article.scroll_into_view_if_needed()  # the frames load lazily
            frame = article.locator("iframe").content_frame
            assert frame.locator("#probe").inner_text(timeout=10_000) == "visible text"
            time.sleep(0.3)
            assert frame.locator("body").evaluate("b => b.ownerDocument.title") != "ran", "the mail's script ran"
            assert page.title().startswith("ringi mailbox") and not dialogs
            links = article.locator("ul.links a")
            assert links.all_inner_texts() == [link], "javascript: links are not listed"
            assert links.first.get_attribute("href") == link
            assert article.locator("iframe").get_attribute("sandbox") == ""
        finally:
            browser.close()

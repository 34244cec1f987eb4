"""The `make dev` demo, end to end as a newcomer would do it: the demo workflow pauses on
events:putEvents.waitForTaskToken, the relay (API destination stand-in) registers it, the mail lands in the
mailbox page, alice opens the short link from there, signs in at the Hosted UI stand-in and approves."""
import json
import re
import time

import requests
from playwright.sync_api import expect

from support.pages import Tab


def short_link_in_mailbox(stack, execution_arn, timeout=30):
    """The /a/{id} link of the mail whose "Requested by" names this execution, read off the mailbox page."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = requests.get(f"{stack.mailbox_url}/", timeout=10).text
        for block in page.split("<article")[1:]:
            if execution_arn in block.replace("&#x27;", "'").replace("&quot;", '"'):
                m = re.search(re.escape(stack.base_url) + r"/a/[A-Za-z0-9_-]{16,64}", block)
                if m:
                    return m.group(0)
        time.sleep(0.5)
    raise AssertionError("no mail for the demo execution in the mailbox")


def test_demo_workflow_approved_in_the_browser(stack, workflows, browser):
    arn = stack.start_demo_execution()
    link = short_link_in_mailbox(stack, arn)
    with Tab(browser) as tab:
        # alice is in the demo's `finance` approver group.
        tab.open_signed_in(stack, link.removeprefix(stack.base_url), user="alice")
        approval = tab.approval
        expect(approval.title).to_contain_text("Deploy payments-api")
        assert workflows.status(arn) == "RUNNING", "opening the link decided nothing"
        approval.field("ticket").fill("CHG-42")
        approval.decide("approve")
        approval.expect_result("approved")
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["change"]["service"] == "payments-api", "ResultPath kept the workflow's input"
    assert out["approval"]["decision"] == "approved"
    assert out["approval"]["feedback"]["ticket"] == "CHG-42"

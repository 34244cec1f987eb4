"""Every approval answers the workflow where it runs: a worker configured with AWS_TARGETS keeps the account and
region a registration names (the EventBridge envelope's, or `aws` for direct callers), stores them on both
backends, and sends the callback to that region's Step Functions; anything it does not serve is refused, naming
the field. Real paused executions in two regions of moto."""
from __future__ import annotations

import json
import uuid

import pytest
import requests
from ringi_stack import ADMIN_KEY, REGION

from support.api import _definition, envelope, registration, start_paused, wait_execution_done
from support.backends import Backend

ACCOUNT = "123456789012"  # moto's default account: the worker's static key's
OTHER_REGION = "eu-west-1"
TARGETS = {ACCOUNT: {"regions": [REGION, OTHER_REGION]}, "210987654321": {"regions": ["ap-northeast-1"]}}


class RegionalWorkflows:
    """Paused executions of one region (the state machine, its queue and the execution all there)."""

    def __init__(self, stack, region: str):
        import boto3
        client = lambda s: boto3.client(s, endpoint_url=stack.moto_url, region_name=region,  # noqa: E731
                                        aws_access_key_id=ADMIN_KEY, aws_secret_access_key="admin")
        self.region, self.sfn, self.sqs = region, client("stepfunctions"), client("sqs")
        self.machine = self.sfn.create_state_machine(
            name=f"ringi-e2e-targets-{uuid.uuid4().hex[:6]}", definition=_definition(300),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/ringi-e2e")["stateMachineArn"]
        assert f":states:{region}:" in self.machine

    def start_paused(self):
        return start_paused(self.sfn, self.sqs, self.machine)


@pytest.fixture(scope="module", params=["d1", "dynamodb"])
def targets(request, stack, workflows):
    url = request.getfixturevalue("dynamodb_url") if request.param == "dynamodb" else stack.base_url
    backend = Backend(request.param, stack, url, workflows)
    backend.url = backend.extra_worker("targets", {"AWS_TARGETS": json.dumps(TARGETS)})
    return backend


@pytest.fixture(scope="module")
def regions(stack):
    return {r: RegionalWorkflows(stack, r) for r in (REGION, OTHER_REGION)}


def post(backend, body: dict):
    return requests.post(f"{backend.url}/api/v1/approvals", json=body,
                         headers={"authorization": f"Bearer {backend.stack.api_key}"}, timeout=30)


def stored_target(backend, approval_id: str) -> tuple:
    if backend.name == "d1":
        from support.api import d1
        [row] = d1(backend.stack, f"SELECT aws_account, aws_region FROM approvals WHERE id = '{approval_id}'",
                   persist=backend.stack.state / "worker-targets-d1")
        return row["aws_account"], row["aws_region"]
    from ringi_stack import DDB_TABLE
    item = backend.stack.aws("dynamodb").get_item(TableName=DDB_TABLE, Key={"approvalId": {"S": approval_id}},
                                                  ConsistentRead=True)["Item"]
    return item["awsAccount"]["S"], item["awsRegion"]["S"]


def decide(backend, approval_id: str, decision: str = "approve"):
    return requests.post(f"{backend.url}/api/v1/approvals/{approval_id}/decision", json={"decision": decision},
                         headers={"authorization": f"Bearer {backend.stack.mint('alice')}"}, timeout=60)


def test_each_callback_goes_to_the_region_its_registration_named(targets, regions):
    # Through an EventBridge envelope (another region than the worker's AWS_REGION) and directly (`aws`).
    eu_arn, eu_token = regions[OTHER_REGION].start_paused()
    us_arn, us_token = regions[REGION].start_paused()
    eu = post(targets, envelope(registration(eu_token), ACCOUNT, OTHER_REGION))
    us = post(targets, registration(us_token, aws={"accountId": ACCOUNT, "region": REGION}))
    assert (eu.status_code, us.status_code) == (201, 201), (eu.text, us.text)
    eu_id, us_id = eu.json()["id"], us.json()["id"]
    assert stored_target(targets, eu_id) == (ACCOUNT, OTHER_REGION)
    assert stored_target(targets, us_id) == (ACCOUNT, REGION)
    assert decide(targets, eu_id, "approve").status_code == 200
    assert decide(targets, us_id, "reject").status_code == 200
    assert wait_execution_done(regions[OTHER_REGION].sfn, eu_arn)["status"] == "SUCCEEDED"
    assert wait_execution_done(regions[REGION].sfn, us_arn)["status"] == "SUCCEEDED"
    assert "Rejected" in json.dumps(regions[REGION].sfn.get_execution_history(executionArn=us_arn)["events"],
                                    default=str)


def test_the_stored_region_is_the_one_answered(targets, regions):
    # The task lives in eu-west-1 but the registration says us-east-1: Step Functions there does not know the
    # token, so the callback really went to the named region (and the approval ends expired, its task unknown).
    arn, token = regions[OTHER_REGION].start_paused()
    r = post(targets, envelope(registration(token), ACCOUNT, REGION))
    assert r.status_code == 201, r.text
    d = decide(targets, r.json()["id"])
    assert d.status_code in (409, 410), d.text
    assert regions[OTHER_REGION].sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    regions[OTHER_REGION].sfn.stop_execution(executionArn=arn)


@pytest.mark.parametrize("body, field", [
    (envelope(registration("t-unknown-account"), "999999999999", REGION), "account"),
    (envelope(registration("t-other-region"), ACCOUNT, "ap-northeast-1"), "region"),
    (registration("t-no-target"), "account"),
    (registration("t-direct", aws={"accountId": "210987654321", "region": REGION}), "aws.region"),
    # A direct field contradicting the event's origin, and a role or endpoint a registrant may never give.
    (envelope(registration("t-spoof", aws={"accountId": "210987654321", "region": "ap-northeast-1"}), ACCOUNT,
              REGION), "aws.accountId"),
    (registration("t-role", aws={"accountId": ACCOUNT, "region": REGION,
                                 "roleArn": f"arn:aws:iam::{ACCOUNT}:role/admin"}), "aws.roleArn"),
    (registration("t-endpoint", aws={"accountId": ACCOUNT, "region": REGION, "endpoint": "http://127.0.0.1:1"}),
     "aws.endpoint"),
])
def test_a_target_this_ringi_does_not_serve_is_refused_naming_the_field(targets, body, field):
    r = post(targets, body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["field"] == field, r.text


def test_without_targets_the_one_account_is_answered_and_aws_is_refused(stack, paused, workflows):
    # The session's worker has no AWS_TARGETS: an envelope from anywhere is answered in AWS_REGION, as before.
    arn, token = workflows.start_paused()
    r = post(Backend("d1", stack, stack.base_url, workflows), envelope(registration(token), "999999999999", "eu-west-3"))
    assert r.status_code == 201, r.text
    assert decide(Backend("d1", stack, stack.base_url, workflows), r.json()["id"]).status_code == 200
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    refused = post(Backend("d1", stack, stack.base_url, workflows),
                   registration("t-aws", aws={"accountId": ACCOUNT, "region": REGION}))
    assert (refused.status_code, refused.json()["error"]["field"]) == (400, "aws"), refused.text

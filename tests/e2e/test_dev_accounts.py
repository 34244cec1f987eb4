"""`make dev`'s stack as it runs (Stack(federated=True, demo=True)): the worker holds no AWS key; the demo
workflow runs in ringi's home account and in a member account in another region, each reaches ringi through its
relay with the envelope naming its account and region, each approval is mailed (through the worker's own role)
and decided, and each execution resumes in its own account and region through that account's callback role."""
import json

import pytest
import requests

from support.api import wait_execution_done
from test_demo import alice, registered

from ringi_stack import (HOME_ACCOUNT, MEMBER_ACCOUNT, MEMBER_REGION, REGION, Ports, Stack,
                         free_port, fresh_state)


@pytest.fixture(scope="module")
def dev_stack(stack):
    ports = Ports(worker=free_port(), moto=free_port(), idp=free_port(), mailbox=free_port(), chat=0)
    s = Stack(state=fresh_state(stack.state.with_name(f"{stack.state.name}-dev")), ports=ports, demo=True,
              federated=True, say=lambda *_: None)
    with s:
        yield s


def test_the_dev_stack_answers_two_accounts_without_any_access_key(dev_stack):
    s = dev_stack
    env = (s.state / "worker.env").read_text()
    assert 'AWS_ACCESS_KEY_ID=""' in env and 'AWS_SECRET_ACCESS_KEY=""' in env, "the worker is given no access key"
    home = s.start_demo_execution()
    member = s.start_member_demo_execution()
    assert f":states:{REGION}:{HOME_ACCOUNT}:" in home and f":states:{MEMBER_REGION}:{MEMBER_ACCOUNT}:" in member

    items = {arn: registered(s, arn) for arn in (home, member)}
    # Each request is mailed, signed with the worker's own role.
    s.wait_mail(lambda ms: all(any(i["id"] in m["body"] for m in ms) for i in items.values()))
    for arn, item in items.items():
        r = requests.post(f"{s.base_url}/api/v1/approvals/{item['id']}/decision", headers=alice(s), timeout=60,
                          json={"decision": "approve", "feedback": {"ticket": "CHG-1"}})
        assert r.status_code == 200, r.text
    assert wait_execution_done(s.aws("stepfunctions"), home)["status"] == "SUCCEEDED"
    member_sfn = s.account_aws("stepfunctions", MEMBER_ACCOUNT, MEMBER_REGION)
    assert wait_execution_done(member_sfn, member)["status"] == "SUCCEEDED"

    assumed = sorted({json.loads(line[line.index("{"):])["role"]
                      for line in s.log_lines("worker", '"event":"sts_assumed_role"', count=3)})
    assert assumed == sorted([f"arn:aws:iam::{HOME_ACCOUNT}:role/ringi-callback",
                              f"arn:aws:iam::{MEMBER_ACCOUNT}:role/ringi-callback",
                              f"arn:aws:iam::{HOME_ACCOUNT}:role/ringi-worker"])
    assert json.loads(requests.get(f"{s.base_url}/.well-known/jwks.json", timeout=10).text)["keys"]

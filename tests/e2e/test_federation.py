"""No long-lived AWS key at all: with SIGNING_KEY the worker is its own OpenID Connect issuer, trades a
JWT it signed for temporary credentials (sts:AssumeRoleWithWebIdentity) of each target account's callback role
and of its own role (AWS_ROLE_ARN: mail, the DynamoDB table), caches them per role, and signs with them. Two paused
executions in two accounts and two regions of moto, registered through EventBridge-shaped envelopes, both decided;
each callback lands in its own account and region; mail and a DynamoDB-backed worker go through the worker's
role. moto's STS accepts any token, so the test plays IAM's part: it reads the worker's discovery document and
keys as IAM would and verifies every token the worker sent (PyJWT, which the worker does not use)."""
from __future__ import annotations

import json
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from ringi_stack import DDB_ACTIONS, DDB_MOTO_ONLY_ACTIONS, DDB_TABLE, free_port

from support.api import _definition, envelope, registration, start_paused, wait_execution_done
from support.faultproxy import FaultProxy

HOME = ("123456789012", "us-east-1")  # moto's default account
MEMBER = ("210987654321", "eu-west-1")
ROLE = "ringi-callback"
WORKER_ROLE = f"arn:aws:iam::{HOME[0]}:role/ringi-worker"  # the worker's own (mail; DynamoDB for its table)


def role_arn(account: str) -> str:
    return f"arn:aws:iam::{account}:role/{ROLE}"


class StsRecorder:
    """Stands between the worker and moto's STS: keeps every form the worker posted, forwards it unchanged."""

    def __init__(self, upstream: str):
        self.calls: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                recorder.calls.append({k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()})
                r = requests.post(upstream + "/", data=body, headers={"content-type": self.headers["content-type"]},
                                  timeout=10)
                self.send_response(r.status_code)
                self.send_header("content-type", r.headers.get("content-type", "text/xml"))
                self.send_header("content-length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def log_message(self, *_):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def jwk(key, kid: str, private: bool) -> dict:
    out = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key if private else key.public_key()))
    return {**out, "kid": kid}


class Account:
    """One member account: the callback role (only the two callback actions) and a paused workflow in its region."""

    def __init__(self, stack, account: str, region: str):
        self.account, self.region = account, region
        stack.federated_role(account, ROLE, ["states:SendTaskSuccess", "states:SendTaskFailure"])
        self.sfn = stack.account_aws("stepfunctions", account, region)
        # The interpreter sends the task's message with moto's own key (the default account): its queue lives there.
        self.sqs = stack.account_aws("sqs", HOME[0], region)
        self.machine = self.sfn.create_state_machine(
            name=f"ringi-approval-{uuid.uuid4().hex[:6]}", definition=_definition(300),
            roleArn=f"arn:aws:iam::{account}:role/sfn")["stateMachineArn"]
        assert f":states:{region}:{account}:" in self.machine

    def start_paused(self):
        return start_paused(self.sfn, self.sqs, self.machine)


@pytest.fixture(scope="module")
def federated(stack):
    accounts = {a: Account(stack, a, r) for a, r in (HOME, MEMBER)}
    sts = StsRecorder(stack.moto_url)
    # Step Functions through a proxy that forwards everything unless a test scripts a fault.
    sfn = FaultProxy(int(stack.moto_url.rsplit(":", 1)[1])).start()
    sfn.mode = "ok"
    signing, following = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    # No access key: the worker's own role may only mail (a callback signed with it would be refused).
    federation = {
        "AWS_TARGETS": json.dumps({a: {"roleArn": role_arn(a), "regions": [r]} for a, r in (HOME, MEMBER)}),
        "SIGNING_KEY": json.dumps(jwk(signing, "ringi-1", private=True)),
        "PUBLISHED_KEYS": json.dumps([jwk(following, "ringi-2", private=False)]),
        "STS_ENDPOINT": sts.url,
        "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
    }
    url = stack.extra_worker("federated", {
        **federation,
        "AWS_ROLE_ARN": stack.federated_role(HOME[0], "ringi-worker", ["ses:SendEmail"]),
        "SFN_ENDPOINT": f"http://127.0.0.1:{sfn.port}",
        # A delivery may now also fetch credentials: the lease outlasts that too.
        "CLAIM_LEASE_SECONDS": "30",
    })
    yield url, accounts, sts, sfn, federation
    sts.server.shutdown()
    sfn.stop()


def post(stack, url: str, body: dict):
    return requests.post(f"{url}/api/v1/approvals", json=body,
                         headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)


def decide(stack, url: str, approval_id: str, decision: str):
    return requests.post(f"{url}/api/v1/approvals/{approval_id}/decision", json={"decision": decision},
                         headers={"authorization": f"Bearer {stack.mint('alice')}"}, timeout=60)


def test_each_callback_lands_in_its_account_with_temporary_credentials_of_its_role(stack, federated):
    url, accounts, sts, _, _ = federated
    paused = {a: acc.start_paused() for a, acc in accounts.items()}
    ids = {}
    for account, (_, token) in paused.items():
        body = registration(token, approvers=[{"sub": "alice"}, {"email": "ops@example.com"}])
        r = post(stack, url, envelope(body, account, accounts[account].region))
        assert r.status_code == 201, r.text
        ids[account] = r.json()["id"]
    # The request mails went out through SES, signed with the worker's own role (it holds no key).
    stack.wait_mail(lambda ms: all(any(i in m["body"] for m in ms) for i in ids.values()))
    assert decide(stack, url, ids[HOME[0]], "approve").status_code == 200
    assert decide(stack, url, ids[MEMBER[0]], "reject").status_code == 200
    for account, (arn, _) in paused.items():
        assert wait_execution_done(accounts[account].sfn, arn)["status"] == "SUCCEEDED"
    history = accounts[MEMBER[0]].sfn.get_execution_history(executionArn=paused[MEMBER[0]][0])["events"]
    assert "Rejected" in json.dumps(history, default=str)
    # One AssumeRoleWithWebIdentity per role: each account's callback role and the worker's own; nothing else.
    assert sorted(c["RoleArn"] for c in sts.calls) == sorted([WORKER_ROLE] + [role_arn(a) for a in accounts])
    assert {c["Action"] for c in sts.calls} == {"AssumeRoleWithWebIdentity"}
    assert all(c["RoleSessionName"].startswith("ringi-") for c in sts.calls)

    # IAM's part: the issuer's discovery document, its keys, and every token checked against them.
    discovery = requests.get(f"{url}/.well-known/openid-configuration", timeout=10).json()
    assert discovery["issuer"] == url and discovery["jwks_uri"] == f"{url}/.well-known/jwks.json"
    keys = requests.get(discovery["jwks_uri"], timeout=10).json()["keys"]
    assert [k["kid"] for k in keys] == ["ringi-1", "ringi-2"], "the next key is published before it signs"
    assert not any("d" in k for k in keys)
    by_kid = {k["kid"]: jwt.PyJWK(k) for k in keys}
    for call in sts.calls:
        token = call["WebIdentityToken"]
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, by_kid[header["kid"]].key, algorithms=["ES256"], audience="sts.amazonaws.com",
                            issuer=discovery["issuer"], options={"require": ["exp", "iat", "sub", "aud", "iss"]})
        account = call["RoleArn"].split(":")[4]
        purpose = "worker" if call["RoleArn"] == WORKER_ROLE else "callback"
        assert claims["sub"] == f"ringi-{purpose}:{account}", "each role trusts only its own subject"
        assert 0 < claims["exp"] - claims["iat"] <= 300
        # A token is not accepted under another key or audience (the check above can fail).
        with pytest.raises(jwt.InvalidTokenError):
            jwt.decode(token, by_kid["ringi-2"].key, algorithms=["ES256"], audience="sts.amazonaws.com")
        with pytest.raises(jwt.InvalidAudienceError):
            jwt.decode(token, by_kid["ringi-1"].key, algorithms=["ES256"], audience="another")

    # The credentials are cached: another decision in the home account needs no new STS call.
    arn, token = accounts[HOME[0]].start_paused()
    r = post(stack, url, envelope(registration(token), *HOME))
    assert decide(stack, url, r.json()["id"], "approve").status_code == 200
    assert wait_execution_done(accounts[HOME[0]].sfn, arn)["status"] == "SUCCEEDED"
    assert len(sts.calls) == 3
    assert len(stack.log_lines("worker-federated", '"event":"sts_assumed_role"', count=3)) == 3, "one session per role"
    log = (stack.state / "worker-federated.log").read_text(errors="replace")
    assert "AKIA" not in log and "ASIA" not in log, "no access key ID in the log"


def test_credentials_that_expire_mid_flight_are_renewed_and_the_decision_lands_once(stack, federated):
    url, accounts, sts, sfn, _ = federated
    home = accounts[HOME[0]]
    arn, token = home.start_paused()
    r = post(stack, url, envelope(registration(token), *HOME))
    assert r.status_code == 201, r.text
    before = sum(c["RoleArn"] == role_arn(HOME[0]) for c in sts.calls)
    sfn.script = ["expired"]  # the cached session is refused once
    assert decide(stack, url, r.json()["id"], "approve").status_code == 200
    assert wait_execution_done(home.sfn, arn)["status"] == "SUCCEEDED"
    assert sfn.injected["expired"] == 1
    assert sfn.forwarded[token] == 1, "delivered exactly once"
    assert sum(c["RoleArn"] == role_arn(HOME[0]) for c in sts.calls) == before + 1, "a new session was fetched"


def test_a_dynamodb_worker_without_any_access_key_keeps_its_table_with_its_own_role(stack, federated):
    _, accounts, sts, _, federation = federated
    role = stack.federated_role(HOME[0], "ringi-worker-table", ["ses:SendEmail", *DDB_ACTIONS, *DDB_MOTO_ONLY_ACTIONS])
    table = {k: v for k, v in stack.dynamodb_vars(DDB_TABLE).items() if not k.startswith("AWS_")}
    url = stack.extra_worker("federated-ddb", {**federation, **table, "AWS_ROLE_ARN": role, "CLAIM_LEASE_SECONDS": "30"})
    home = accounts[HOME[0]]
    arn, token = home.start_paused()
    body = registration(token, approvers=[{"sub": "alice"}, {"email": "ops@example.com"}])
    r = post(stack, url, envelope(body, *HOME))
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    assert requests.get(f"{url}/api/v1/approvals/{approval_id}", timeout=30,
                        headers={"authorization": f"Bearer {stack.mint('alice')}"}).status_code == 200
    stack.wait_mail(lambda ms: any(approval_id in m["body"] for m in ms))
    assert decide(stack, url, approval_id, "approve").status_code == 200
    assert wait_execution_done(home.sfn, arn)["status"] == "SUCCEEDED"
    item = stack.account_aws("dynamodb", *HOME).get_item(TableName=DDB_TABLE, Key={"approvalId": {"S": approval_id}})
    assert item["Item"]["status"]["S"] == "approved"
    assert any(c["RoleArn"] == role for c in sts.calls), "the table's worker assumed its own role"
    assert stack.log_lines("worker-federated-ddb", '"role":"%s"' % role)


def test_without_a_key_ring_there_is_no_issuer(stack):
    url = stack.extra_worker("nokeys", {"SIGNING_KEY": ""})
    try:
        assert requests.get(f"{url}/.well-known/jwks.json", timeout=10).status_code == 404
        assert requests.get(f"{url}/.well-known/openid-configuration", timeout=10).status_code == 404
    finally:
        stack.stop_component("worker-nokeys")

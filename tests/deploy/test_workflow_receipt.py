"""docs/workflow's receipt check, offline: the state machine that verifies a receipt before the approved work
(approval-receipt.jsonpath.asl.json) is the JSONPath example with one state more and passes cfn-lint's state
machine validation; its Lambda (verify_receipt.py) accepts a receipt signed with a key the issuer publishes and
saying what the workflow was told, and refuses anything else with ReceiptRefused, the error the state catches.
A real receipt from the worker is checked by it in tests/e2e/test_receipts.py."""
from __future__ import annotations

import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from aws_template import lint
from deploy_harness import ROOT

DOCS = ROOT / "docs" / "workflow"
CHECKED = DOCS / "approval-receipt.jsonpath.asl.json"


def load_lambda():
    spec = importlib.util.spec_from_file_location("verify_receipt_lambda", DOCS / "verify_receipt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def template(definition: dict) -> str:
    """A template holding the definition as a plain string: the form cfn-lint validates (E3601)."""
    block = "\n".join("        " + line for line in json.dumps(definition, indent=2).splitlines())
    return ("AWSTemplateFormatVersion: \"2010-09-09\"\nResources:\n  Machine:\n"
            "    Type: AWS::StepFunctions::StateMachine\n    Properties:\n"
            "      RoleArn: arn:aws:iam::123456789012:role/ringi-example\n"
            f"      DefinitionString: |-\n{block}\n")


def test_the_checked_workflow_is_the_example_with_the_check_before_the_approved_work():
    checked = json.loads(CHECKED.read_text(encoding="utf-8"))
    plain = json.loads((DOCS / "approval.jsonpath.asl.json").read_text(encoding="utf-8"))
    request = checked["States"]["RequestApproval"]
    assert request["Next"] == "VerifyReceipt"
    assert {**request, "Next": "Approved"} == plain["States"]["RequestApproval"]
    verify = checked["States"]["VerifyReceipt"]
    assert verify["Resource"] == "arn:aws:states:::lambda:invoke" and verify["Next"] == "Approved"
    assert verify["Parameters"]["Payload"]["approval.$"] == "$.approval"
    assert [c["ErrorEquals"] for c in verify["Catch"]] == [["ReceiptRefused"]]
    assert checked["States"]["ReceiptRefused"]["Type"] == "Fail"
    assert set(checked["States"]) - {"VerifyReceipt", "ReceiptRefused"} == set(plain["States"])


def test_cfn_lint_validates_the_checked_workflow():
    definition = json.loads(CHECKED.read_text(encoding="utf-8"))
    assert lint(template(definition)) == []
    # The check is live: a broken start, or a broken check state, is reported.
    for broken in ({"StartAt": "NoSuchState"}, {"States": {**definition["States"], "VerifyReceipt": {
            **definition["States"]["VerifyReceipt"], "Type": "Lambda"}}}):
        assert any(m.startswith("E3601") for m in lint(template({**definition, **broken}))), broken


@pytest.fixture(scope="module")
def issuer():
    """An issuer publishing one P-256 key at /.well-known/jwks.json: (url, private key, kid)."""
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="k1", alg="ES256", use="sig")
    body = json.dumps({"keys": [jwk]}).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path == "/.well-known/jwks.json"
            self.send_response(200 if ok else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body if ok else b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", key
    server.shutdown()


def receipt(issuer_url, key, kid="k1", typ="ringi-receipt+jwt", **claims) -> str:
    body = {"iss": issuer_url, "sub": "abcdefghijklmnopqrstuv", "iat": 1_796_461_200,
            "approvalId": "abcdefghijklmnopqrstuv", "decision": "approved", "decidedAt": "2026-12-05T09:00:00.123Z",
            "decidedBy": {"sub": "alice", "email": "alice@example.com", "username": None}, **claims}
    return jwt.encode(body, key, algorithm="ES256", headers={"kid": kid, "typ": typ})


def approval(r: str, **fields) -> dict:
    return {"decision": "approved", "approvalId": "abcdefghijklmnopqrstuv", "decidedAt": "2026-12-05T09:00:00.123Z",
            "receipt": r, **fields}


def test_the_lambda_returns_the_claims_of_a_receipt_that_holds(issuer):
    url, key = issuer
    claims = load_lambda().handler({"issuer": url + "/", "approval": approval(receipt(url, key))})
    assert claims["decidedBy"]["sub"] == "alice" and claims["iss"] == url
    # ringi's own outcome on expiry: the output says "expired", the receipt an approval by ringi.
    expired = approval(receipt(url, key, reason="expiry"), decision="expired", onExpiry="approve")
    assert load_lambda().handler({"issuer": url, "approval": expired})["reason"] == "expiry"


def test_the_lambda_refuses_anything_else_with_the_error_the_state_catches(issuer):
    url, key = issuer
    fn = load_lambda()
    other = ec.generate_private_key(ec.SECP256R1())
    head, payload, sig = receipt(url, key).split(".")
    cases = {
        "no receipt": approval(None),
        "not a JWS": approval("nope"),
        "another type": approval(receipt(url, key, typ="JWT")),
        "another signer": approval(receipt(url, other)),
        "an unknown key": approval(receipt(url, key, kid="k9")),
        "another issuer": approval(receipt("https://elsewhere.example.com", key)),
        "an altered signature": approval(f"{head}.{payload}.{sig[:-2]}{'A' if sig[-2] != 'A' else 'B'}{sig[-1]}"),
        "another approval's receipt": approval(receipt(url, key, approvalId="zzzzzzzzzzzzzzzzzzzzzz")),
        "a rejection's receipt": approval(receipt(url, key, decision="rejected")),
        "an output edited after signing": approval(receipt(url, key), decidedAt="2026-12-05T10:00:00.000Z"),
    }
    for case, a in cases.items():
        with pytest.raises(fn.ReceiptRefused):
            fn.handler({"issuer": url, "approval": a})
            pytest.fail(case)
    assert fn.ReceiptRefused.__name__ == json.loads(CHECKED.read_text())["States"]["VerifyReceipt"]["Catch"][0][
        "ErrorEquals"][0]

"""The decision path against workerd + moto executing real state machines (IAM auth on), on both storage
backends (`backend`: D1, then DynamoDB) but for the worker-configuration faults at the end."""
import json
import time

from support.api import Api, decide_concurrently
from support.backends import api, paused  # noqa: F401  (fixtures: the module's backend's)


def test_approve_resumes_the_execution_with_the_decision(backend, api, paused, workflows):
    form = [{"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"], "required": True},
            {"name": "ticket", "label": "Ticket", "type": "text"}]
    approval_id, arn = paused(form=form)
    r = api.decide(approval_id, body={"decision": "approve", "comment": "ship it",
                                      "feedback": {"risk": "low", "ticket": "OPS-1"}}, email="alice@example.com")
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "approved"
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["request"] == "deploy", "ResultPath keeps the state's input"
    decision = out["approval"]
    assert decision["decision"] == "approved"
    assert decision["approvedBy"]["sub"] == "alice"
    assert decision["approvedBy"]["email"] == "alice@example.com"
    assert decision["comment"] == "ship it"
    assert decision["feedback"] == {"risk": "low", "ticket": "OPS-1"}
    assert decision["approvalId"] == approval_id
    # Exactly one callback reached Step Functions.
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    # The approval shows the outcome and the audit trail; the token is gone from storage.
    view = api.get(approval_id).json()
    assert view["status"] == "approved"
    assert view["myDecision"]["decision"] == "approve"
    assert [d["comment"] for d in view["decisions"]] == ["ship it"]
    assert "taskToken" not in json.dumps(view)
    assert backend.stored(approval_id, "task_token", "status") == {"task_token": None, "status": "approved"}


def test_reject_takes_the_rejected_catch(api, paused, workflows):
    approval_id, arn = paused()
    r = api.decide(approval_id, body={"decision": "reject", "comment": "not during the freeze"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "rejected"
    done = workflows.wait_done(arn)
    out = json.loads(done["output"])
    assert out["rejection"]["Error"] == "Rejected"
    cause = json.loads(out["rejection"]["Cause"])
    assert cause["decision"] == "rejected" and cause["rejectedBy"]["sub"] == "alice"
    assert cause["comment"] == "not during the freeze"
    entered = [e["stateEnteredEventDetails"]["name"] for e in workflows.history(arn) if "stateEnteredEventDetails" in e]
    assert "Rejected" in entered and "Approved" not in entered


def test_second_decision_is_409_already_decided(api, paused):
    approval_id, _ = paused()
    assert api.decide(approval_id).status_code == 200
    for decision in ("approve", "reject"):
        r = api.decide(approval_id, decision)
        assert r.status_code == 409
        assert r.json()["error"]["code"] in ("already_decided", "already_voted")


def test_timed_out_task_gives_409_and_expired(api, paused, workflows):
    approval_id, arn = paused(timeout=3)
    done = workflows.wait_done(arn, timeout=15)  # the Catch on States.Timeout ends the execution
    assert "TimedOut" in [e["stateEnteredEventDetails"]["name"] for e in workflows.history(arn)
                          if "stateEnteredEventDetails" in e]
    assert done["status"] == "SUCCEEDED"
    r = api.decide(approval_id)
    assert r.status_code == 409, r.text
    assert r.json()["error"]["code"] == "expired"
    assert api.get(approval_id).json()["status"] == "expired"
    # Still expired (and no new callback) on a retry.
    assert api.decide(approval_id).json()["error"]["code"] == "expired"


def test_non_approver_and_unknown_id_get_the_same_404(api, paused):
    approval_id, _ = paused()
    unknown = "ZZZZZZZZZZZZZZZZZZZZZZ"
    responses = [api.get(approval_id, as_user="mallory"), api.get(unknown),
                 api.decide(approval_id, as_user="mallory"), api.decide(unknown),
                 api.get(approval_id, as_user="mallory", **{"cognito:groups": ["finance"]})]
    assert {r.status_code for r in responses} == {404}
    assert len({r.text for r in responses}) == 1, "not-yours must be indistinguishable from not-found"
    # And the approval is untouched: alice can still decide.
    assert api.get(approval_id).json()["status"] == "pending"


def test_group_and_email_approvers(api, paused):
    approval_id, _ = paused(approvers=[{"group": "finance"}, {"email": "Carol@Example.com"}])
    assert api.get(approval_id, as_user="dave", **{"cognito:groups": ["finance"]}).status_code == 200
    assert api.get(approval_id, as_user="carol", email="carol@example.com").status_code == 200
    # An unverified email does not count.
    assert api.get(approval_id, as_user="carol", email="carol@example.com", email_verified=False).status_code == 404


def test_twenty_concurrent_approvals_make_exactly_one_callback(stack, backend, paused, workflows):
    approval_id, arn = paused()
    results = decide_concurrently(stack, backend.url, approval_id)
    codes = sorted(r.status_code for r in results)
    assert codes == [200] + [409] * 19, [(r.status_code, r.text) for r in results]
    assert {r.json()["error"]["code"] for r in results if r.status_code == 409} <= {"in_progress", "already_decided", "already_voted"}
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    calls = backend.log_lines('"sfn_callback"', approval_id)
    assert len(calls) == 1, calls


def test_size_limits_are_checked_before_claiming(api, paused, workflows):
    approval_id, arn = paused()
    r = api.decide(approval_id, body={"decision": "approve", "feedback": {"blob": "x" * 300_000}})
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == "payload_too_large"
    r = api.decide(approval_id, body={"decision": "reject", "comment": "c" * 4_001})
    assert r.status_code == 400 and r.json()["error"]["field"] == "comment"
    r = api.decide(approval_id, body={"decision": "maybe"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "decision"
    assert api.get(approval_id).json()["status"] == "pending"
    assert workflows.status(arn) == "RUNNING"
    assert api.decide(approval_id).status_code == 200


def test_feedback_is_validated_against_the_form(api, paused):
    form = [{"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"], "required": True}]
    approval_id, _ = paused(form=form)
    r = api.decide(approval_id, body={"decision": "approve", "feedback": {}})
    assert r.status_code == 400 and r.json()["error"]["field"] == "feedback.risk"
    r = api.decide(approval_id, body={"decision": "approve", "feedback": {"risk": "medium"}})
    assert r.status_code == 400 and r.json()["error"]["field"] == "feedback.risk"


def test_refused_signature_gives_502_and_the_approval_stays_decidable(stack, workflows):
    """A worker whose AWS secret is wrong: moto checks the SigV4 signature and refuses. (D1 only: on DynamoDB
    the same secret signs the storage calls, so nothing registers.)"""
    bad = stack.extra_worker("badkey", {"AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    api = Api(stack, bad)
    arn, token = workflows.start_paused()
    approval_id = api.register(token).json()["id"]
    r = api.decide(approval_id)
    assert r.status_code == 502, r.text
    assert r.json()["error"]["code"] == "upstream_rejected"
    assert api.get(approval_id).json()["status"] == "pending"
    assert workflows.status(arn) == "RUNNING"
    assert stack.log_lines("worker-badkey", "sfn_refused", "SignatureDoesNotMatch")
    log = (stack.state / "worker-badkey.log").read_text()
    assert "not-the-secret" not in log and token not in log


def test_unavailable_step_functions_gives_503_and_stays_decidable(stack, workflows):
    """Step Functions unreachable (nothing listens): bounded retries, then 503 and still pending. (On DynamoDB:
    test_dynamodb.py's own dead-SFN worker.)"""
    dead = stack.extra_worker("nosfn", {"SFN_ENDPOINT": "http://127.0.0.1:9"})
    api = Api(stack, dead)
    arn, token = workflows.start_paused()
    approval_id = api.register(token).json()["id"]
    t0 = time.monotonic()
    r = api.decide(approval_id)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "sfn_unavailable"
    assert time.monotonic() - t0 < 15
    assert api.get(approval_id).json()["status"] == "pending"
    assert len(stack.log_lines("worker-nosfn", '"sfn_callback"', approval_id, count=3)) == 3, "three attempts"

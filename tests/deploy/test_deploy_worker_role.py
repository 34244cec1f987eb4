"""deploy/deploy.py and the worker's own AWS identity, against the aws / wrangler stand-ins: with federation (the
default) the stack's WorkerRole, AWS_ROLE_ARN and no access key anywhere; switching an access-key deployment to
federation retires the key before the stack update removes its user; the dry run of that switch.

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_deploy_worker_role.py
"""
from __future__ import annotations

import json

KEY_SECRETS = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
ROLE = "arn:aws:iam::123456789012:role/ringi-worker"


def line(call: dict) -> str:
    return f"{call['program']} {' '.join(call['argv'][:3])}"


def change_set_parameters(d, since: int = 0) -> list[dict]:
    return [{p["ParameterKey"]: p.get("ParameterValue") for p in json.loads(c["stdin"])}
            for c in d.calls()[since:] if line(c).startswith("aws cloudformation create-change-set")]


def worker(d) -> dict:
    return d.state()["cloudflare"]["workers"]["ringi"]


def test_federation_makes_and_stores_no_access_key(deployer):
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    calls = [line(c) for c in deployer.calls()]
    assert not [c for c in calls if c.startswith("aws iam")], "no IAM user key is listed, made or deleted"
    [params] = change_set_parameters(deployer)
    assert params["WorkerCredentials"] == "federation"
    # The home account's member stack (its OIDC provider, which WorkerRole trusts) comes before the central stack.
    member = next(i for i, c in enumerate(calls) if c.startswith("aws cloudformation deploy"))
    central = next(i for i, c in enumerate(calls) if c.startswith("aws cloudformation create-change-set"))
    assert member < central
    w = worker(deployer)
    assert not KEY_SECRETS & set(w["secrets"]) and "SIGNING_KEY" in w["secrets"]
    assert w["deployed"]["vars"]["AWS_ROLE_ARN"] == ROLE
    assert not KEY_SECRETS & set(w["deployed"]["vars"])
    assert "worker role " + ROLE in proc.stdout
    pushed = [json.loads(c["stdin"]) for c in deployer.calls() if line(c).startswith("wrangler secret bulk")]
    assert pushed and not [p for p in pushed if KEY_SECRETS & set(p)]


def test_the_access_key_fallback_is_unchanged(deployer):
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    [params] = change_set_parameters(deployer)
    assert params["WorkerCredentials"] == "access-key"
    w = worker(deployer)
    assert KEY_SECRETS <= set(w["secrets"]) and "AWS_ROLE_ARN" not in w["deployed"]["vars"]
    [key] = deployer.state()["aws"]["keys"]["ringi-worker"]
    assert w["secrets"]["AWS_ACCESS_KEY_ID"] != key["AccessKeyId"]  # a digest, never the value


def switched(deployer) -> tuple[int, list[str]]:
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    assert deployer.run().returncode == 0
    assert deployer.state()["aws"]["keys"]["ringi-worker"]
    deployer.settings["CALLBACK_CREDENTIALS"] = "federation"
    return len(deployer.calls()), []


def test_switching_to_federation_retires_the_key_before_the_user_goes(deployer):
    before, _ = switched(deployer)
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    later = deployer.calls()[before:]
    order = [line(c) + " " + " ".join(c["argv"][3:4]) for c in later]

    def first(prefix: str) -> int:
        return next(i for i, c in enumerate(order) if c.startswith(prefix))

    forget = [first("wrangler secret delete AWS_ACCESS_KEY_ID"), first("wrangler secret delete AWS_SECRET_ACCESS_KEY")]
    delete = first("aws iam delete-access-key")
    update = first("aws cloudformation execute-change-set")
    assert max(forget) < delete < update, order
    assert not [c for c in order if c.startswith("aws iam create-access-key")]
    state = deployer.state()
    assert "ringi-worker" not in state["aws"]["keys"], "the user and its keys are gone"
    assert "WorkerUserName" not in state["aws"]["stacks"]["ringi"]["Outputs"]
    assert state["aws"]["stacks"]["ringi"]["StackStatus"] == "UPDATE_COMPLETE"
    w = worker(deployer)
    assert not KEY_SECRETS & set(w["secrets"]) and "SIGNING_KEY" in w["secrets"]
    assert w["deployed"]["vars"]["AWS_ROLE_ARN"] == ROLE
    # A third run has nothing left to retire.
    again = len(deployer.calls())
    assert deployer.run().returncode == 0
    assert not [c for c in deployer.calls()[again:] if line(c).startswith(("wrangler secret delete", "aws iam"))]


def test_a_failed_key_deletion_stops_before_the_update_and_the_rerun_finishes(deployer):
    """The keys go first because CloudFormation cannot delete a user that has keys (the stand-in rolls such an
    update back too): a deletion that fails stops the run before any change set."""
    before, _ = switched(deployer)
    proc = deployer.run(fail="aws iam delete-access-key")
    assert proc.returncode == 1 and "step 4/11 (stack) failed: `aws iam delete-access-key" in proc.stderr
    state = deployer.state()
    assert state["aws"]["stacks"]["ringi"]["Outputs"]["WorkerUserName"] == "ringi-worker", "not updated yet"
    assert not KEY_SECRETS & set(worker(deployer)["secrets"])
    # The re-run deletes the key that is left, then the update goes through.
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert "ringi-worker" not in deployer.state()["aws"]["keys"]


def test_dry_run_of_the_switch_says_what_it_would_retire_and_changes_nothing(deployer):
    before, _ = switched(deployer)
    state = deployer.state()
    proc = deployer.run("--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "would switch to federation: remove AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY from worker ringi and " \
           "delete the 1 access key(s) of IAM user ringi-worker, before the stack update removes the user" \
           in proc.stdout
    assert "would update the stack by change set (WorkerCredentials changed" in proc.stdout
    assert "access key for" not in proc.stdout, "no new key is planned"
    mutating = [line(c) for c in deployer.calls()[before:]
                if line(c).startswith(("wrangler secret delete", "wrangler secret bulk", "aws iam delete",
                                       "aws iam create", "aws cloudformation create-change-set",
                                       "aws cloudformation deploy", "wrangler deploy"))]
    assert mutating == []
    assert deployer.state() == state

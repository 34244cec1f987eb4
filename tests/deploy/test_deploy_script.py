"""deploy/deploy.py against the aws / wrangler stand-ins: step order, idempotence, key rotation, secrecy,
dry run, recovery from a failure at every mutating step, the health check, the settings file.

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_deploy_script.py
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from deploy_harness import ROOT, STANDINS, sha256

READ_ONLY = {("aws", "sts get-caller-identity"), ("aws", "cloudformation describe-stacks"),
             ("aws", "cloudformation get-template"), ("aws", "iam list-access-keys"), ("wrangler", "whoami --json"),
             ("wrangler", "d1 list"), ("wrangler", "secret list")}
CREATES = ("cloudformation create-change-set", "iam create-access-key", "d1 create", "secret bulk",
           "cloudformation delete-stack", "iam delete-access-key")
STEP_LINE = re.compile(r"^==> \[(\d+)/11\] (\w+): ", re.M)



def command(call: dict) -> str:
    return " ".join(call["argv"][:3])


def is_read_only(call: dict) -> bool:
    return any(call["program"] == p and command(call).startswith(c) for p, c in READ_ONLY)


def migrations() -> list[str]:
    return sorted(p.name for p in (ROOT / "edge" / "migrations").glob("*.sql"))


def accepted_hashes(d) -> list[str]:
    """REGISTER_API_KEYS as the worker holds it, found among the values pushed (the state keeps a digest)."""
    held = d.state()["cloudflare"]["workers"]["ringi"]["secrets"]["REGISTER_API_KEYS"]
    pushed = [json.loads(c["stdin"]).get("REGISTER_API_KEYS") for c in d.calls()
              if command(c).startswith("secret bulk")]
    return next(v for v in pushed if v and sha256(v) == held).split(",")


def assert_converged(d) -> None:
    """The end state of every successful deployment, however it got there."""
    s = d.state()
    stack = s["aws"]["stacks"]["ringi"]
    assert stack["StackStatus"] in ("CREATE_COMPLETE", "UPDATE_COMPLETE")
    assert stack["ChangeSets"] == {}
    api_key = stack["Parameters"]["RegistrationApiKey"]
    assert stack["Tags"]["ringi:api-key-sha256"] == sha256(api_key)
    worker = s["cloudflare"]["workers"]["ringi"]
    assert worker["secrets"]["REGISTER_API_KEYS"] == sha256(sha256(api_key)), "worker accepts exactly the stack's key"
    federation = d.settings.get("CALLBACK_CREDENTIALS", "federation") == "federation"
    if federation:  # no IAM user, no access key anywhere: the worker assumes the stack's role
        assert "ringi-worker" not in s["aws"]["keys"] and "WorkerUserName" not in stack["Outputs"]
        assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} & set(worker["secrets"])
    else:
        [key] = s["aws"]["keys"]["ringi-worker"]  # one IAM key, the worker's
        assert worker["secrets"]["AWS_ACCESS_KEY_ID"] == sha256(key["AccessKeyId"])
        assert worker["secrets"]["AWS_SECRET_ACCESS_KEY"] == sha256(key["SecretAccessKey"])
    [db] = s["cloudflare"]["databases"]
    assert db["name"] == "ringi" and s["cloudflare"]["applied"][db["uuid"]] == migrations()
    deployed = worker["deployed"]
    assert deployed["d1_databases"][0]["database_id"] == db["uuid"]
    assert deployed["vars"]["COGNITO_CLIENT_ID"] == stack["Outputs"]["SpaClientId"]
    assert deployed["routes"] == [{"pattern": "approvals.example.com", "custom_domain": True}]
    # Either way, the key ring that signs every decision's receipt.
    assert "SIGNING_KEY" in worker["secrets"]
    if not federation:
        assert "AWS_ROLE_ARN" not in deployed["vars"] and "AWS_TARGETS" not in deployed["vars"]
        return
    # Federation by default: the stack's own account is a member, its callback role the worker's target, and the
    # stack's worker role its identity for mail and DynamoDB.
    assert "SIGNING_KEY" in worker["secrets"]
    assert json.loads(deployed["vars"]["AWS_TARGETS"]) == {
        "123456789012": {"roleArn": "arn:aws:iam::123456789012:role/ringi-callback", "regions": ["eu-central-1"]}}
    assert deployed["vars"]["AWS_ROLE_ARN"] == stack["Outputs"]["WorkerRoleArn"] == \
        "arn:aws:iam::123456789012:role/ringi-worker"


def assert_no_orphan_key(d) -> None:
    """Every IAM key of the worker user is the worker's or older than it: a key made but not stored is gone."""
    s = d.state()
    keys = s["aws"]["keys"].get("ringi-worker", [])
    stored = s["cloudflare"]["workers"].get("ringi", {}).get("secrets", {}).get("AWS_ACCESS_KEY_ID")
    held = [k for k in keys if sha256(k["AccessKeyId"]) == stored]
    assert len(keys) <= 2
    if keys:
        assert held, "the worker's key was deleted, or a new key was left behind"
        assert all(k["CreateDate"] <= held[0]["CreateDate"] for k in keys)


def test_first_deploy_creates_everything_in_order(deployer):
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert [int(n) for n, _ in STEP_LINE.findall(proc.stdout)] == list(range(1, 12))
    assert [name for _, name in STEP_LINE.findall(proc.stdout)] == [
        "preflight", "build", "members", "stack", "outputs", "d1", "config", "migrations", "secrets", "deploy", "check"]
    order = [f"{c['program']} {command(c)}" for c in deployer.calls()]
    milestones = ["aws sts get-caller-identity", "wrangler whoami --json", "aws cloudformation deploy",
                  "aws cloudformation create-change-set", "aws cloudformation execute-change-set", "wrangler d1 create",
                  "wrangler d1 migrations", "wrangler secret bulk", "wrangler deploy --config"]
    positions = [next(i for i, c in enumerate(order) if c.startswith(m)) for m in milestones]
    assert positions == sorted(positions), order
    assert not [c for c in order if c.startswith("aws iam")], "federation makes no IAM user key"
    assert "https://approvals.example.com" in proc.stdout and "ringi is live" in proc.stdout
    assert_converged(deployer)
    config = json.loads((deployer.root / "edge" / "wrangler.production.json").read_text())
    assert config["env"]["production"]["vars"]["PUBLIC_BASE_URL"] == "https://approvals.example.com"


def deployed_vars(d) -> dict:
    return d.state()["cloudflare"]["workers"]["ringi"]["deployed"]["vars"]


def test_operator_expiry_and_audit_settings_reach_the_worker(deployer):
    """ADMIN_GROUP (nobody is an operator without it), ON_EXPIRY_LEAD_SECONDS and AUDIT_RETENTION_DAYS go into the
    worker's vars; left out, the worker's defaults are written."""
    assert deployer.run().returncode == 0
    v = deployed_vars(deployer)
    assert (v["ADMIN_GROUP"], v["ON_EXPIRY_LEAD_SECONDS"], v["AUDIT_RETENTION_DAYS"]) == ("", "600", "400")
    deployer.settings.update(ADMIN_GROUP="ringi-operators", ON_EXPIRY_LEAD_SECONDS="900", AUDIT_RETENTION_DAYS="30")
    assert deployer.run().returncode == 0
    v = deployed_vars(deployer)
    assert (v["ADMIN_GROUP"], v["ON_EXPIRY_LEAD_SECONDS"], v["AUDIT_RETENTION_DAYS"]) == ("ringi-operators", "900", "30")
    config = json.loads((deployer.root / "edge" / "wrangler.production.json").read_text())
    assert config["env"]["production"]["vars"]["ADMIN_GROUP"] == "ringi-operators"


def test_an_oidc_provider_replaces_the_user_pool_in_the_worker(deployer):
    """With OIDC_ISSUER the worker signs people in with that provider: its issuer, client and claim mapping, the
    Cognito variables empty (the worker refuses both at once), and the health check expects that issuer."""
    deployer.settings.update(OIDC_ISSUER="https://login.microsoftonline.com/tid/v2.0", OIDC_CLIENT_ID="app-guid",
                             GROUPS_CLAIM="roles", SCOPE_CLAIM="scp", EMAIL_VERIFIED="trust", TOKEN_USE="access",
                             SIGN_IN_SCOPES='"openid profile email api://app-guid/approvals"')
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    v = deployed_vars(deployer)
    assert v["OIDC_ISSUER"] == "https://login.microsoftonline.com/tid/v2.0" and v["OIDC_CLIENT_ID"] == "app-guid"
    assert (v["GROUPS_CLAIM"], v["SCOPE_CLAIM"], v["EMAIL_VERIFIED"]) == ("roles", "scp", "trust")
    assert v["SIGN_IN_SCOPES"] == "openid profile email api://app-guid/approvals"
    assert v["COGNITO_ISSUER"] == v["COGNITO_CLIENT_ID"] == v["COGNITO_DOMAIN"] == ""
    assert "sign in with https://login.microsoftonline.com/tid/v2.0" in proc.stdout
    # Back to the user pool: the Cognito variables return, the OIDC ones are gone or empty.
    for key in ("OIDC_ISSUER", "OIDC_CLIENT_ID", "SCOPE_CLAIM", "EMAIL_VERIFIED"):
        deployer.settings.pop(key)
    assert deployer.run().returncode == 0
    v = deployed_vars(deployer)
    assert v["COGNITO_ISSUER"] and v["COGNITO_CLIENT_ID"] and not v.get("OIDC_ISSUER")
    assert_converged(deployer)


def test_d1_is_created_where_the_settings_say(deployer):
    """D1_LOCATION is the location hint of the database's primary (where the approvers are); empty: D1's own choice,
    near whoever deploys."""
    deployer.settings["D1_LOCATION"] = "apac"
    assert deployer.run().returncode == 0
    [create] = [c["argv"] for c in deployer.calls() if command(c).startswith("d1 create")]
    assert create[create.index("--location") + 1] == "apac", create


def test_d1_location_is_checked_before_anything_runs(deployer):
    deployer.settings["D1_LOCATION"] = "us-east-1"
    proc = deployer.run()
    assert proc.returncode != 0 and "D1_LOCATION" in proc.stderr
    assert not [c for c in deployer.calls() if not is_read_only(c)]


def test_every_wrangler_call_after_the_config_uses_it(deployer):
    assert deployer.run().returncode == 0
    scoped = [c for c in deployer.calls() if c["program"] == "wrangler"
              and c["argv"][:2] in (["d1", "migrations"], ["secret", "bulk"], ["secret", "list"], ["deploy"])]
    assert scoped
    for call in scoped:
        assert "--config" in call["argv"] and call["argv"][call["argv"].index("--config") + 1] == \
            "edge/wrangler.production.json", call["argv"]
        assert call["argv"][call["argv"].index("--env") + 1] == "production"
        assert call["cwd"] == str(deployer.root)


def test_second_run_creates_nothing_and_rotates_nothing(deployer):
    assert deployer.run().returncode == 0
    before, state = len(deployer.calls()), deployer.state()
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    second = deployer.calls()[before:]
    made = [command(c) for c in second if command(c).startswith(CREATES)]
    assert made == [], made
    mutating = sorted({command(c) for c in second if not is_read_only(c)})
    # Idempotent by themselves: the member stack (no changes, no change set), migrations, the worker's version.
    assert mutating == ["cloudformation deploy --stack-name", "d1 migrations apply",
                        "deploy --config edge/wrangler.production.json"], mutating
    after = deployer.state()
    assert after["aws"]["keys"] == state["aws"]["keys"]
    assert after["aws"]["stacks"]["ringi"]["Parameters"] == state["aws"]["stacks"]["ringi"]["Parameters"]
    assert "nothing to do" in proc.stdout and "nothing to rotate" in proc.stdout
    assert_converged(deployer)


def test_a_changed_setting_updates_the_stack_and_keeps_the_api_key(deployer):
    assert deployer.run().returncode == 0
    key = deployer.state()["aws"]["stacks"]["ringi"]["Parameters"]["RegistrationApiKey"]
    deployer.settings["API_DESTINATION_RATE_LIMIT"] = "20"
    before = len(deployer.calls())
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert "ApiDestinationRateLimit changed" in proc.stdout
    change_sets = [c for c in deployer.calls()[before:] if command(c).startswith("cloudformation create-change-set")]
    [params] = [json.loads(c["stdin"]) for c in change_sets]
    assert {"ParameterKey": "RegistrationApiKey", "UsePreviousValue": True} in params
    stack = deployer.state()["aws"]["stacks"]["ringi"]
    assert stack["Parameters"]["ApiDestinationRateLimit"] == "20"
    assert stack["Parameters"]["RegistrationApiKey"] == key
    assert_converged(deployer)


def change_set_parameters(d, since: int = 0) -> list[dict]:
    """The parameters of every change set created since call number `since` (they travel on stdin)."""
    return [{p["ParameterKey"]: p.get("ParameterValue") for p in json.loads(c["stdin"])}
            for c in d.calls()[since:] if command(c).startswith("cloudformation create-change-set")]


def test_identity_providers_reach_the_stack_once_the_pool_exists(deployer):
    """A provider can only be added to an existing pool, so a new stack takes COGNITO alone; afterwards the
    setting is a stack parameter like any other and a deploy keeps the providers."""
    deployer.settings["IDENTITY_PROVIDERS"] = "COGNITO,Corp"
    proc = deployer.run()
    assert proc.returncode == 1 and "step 4/11 (stack) failed: IDENTITY_PROVIDERS names Corp" in proc.stderr
    # Only the (idempotent) member stack of step 3 came first: nothing of the central stack.
    assert [command(c) for c in deployer.calls() if not is_read_only(c)] == ["cloudformation deploy --stack-name"]
    deployer.settings.pop("IDENTITY_PROVIDERS")
    assert deployer.run().returncode == 0
    [first] = change_set_parameters(deployer)
    assert first["IdentityProviders"] == "COGNITO"
    before = len(deployer.calls())
    deployer.settings["IDENTITY_PROVIDERS"] = "COGNITO, Corp"
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert "IdentityProviders changed" in proc.stdout
    [update] = change_set_parameters(deployer, before)
    assert update["IdentityProviders"] == "COGNITO,Corp"
    before = len(deployer.calls())
    assert deployer.run().returncode == 0
    assert change_set_parameters(deployer, before) == []  # as deployed: nothing to change
    assert_converged(deployer)


@pytest.mark.parametrize("client_credentials,example", [("false", "false"), ("true", "true")])
def test_optional_outputs_may_be_absent(deployer, client_credentials, example):
    """The stack lists RegisterClientIds and StateMachineArn only when it creates their resources."""
    deployer.settings.update(ENABLE_CLIENT_CREDENTIALS=client_credentials, CREATE_EXAMPLE_STATE_MACHINE=example)
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    outputs = deployer.state()["aws"]["stacks"]["ringi"]["Outputs"]
    assert ("RegisterClientIds" in outputs) == (client_credentials == "true")
    assert ("StateMachineArn" in outputs) == (example == "true")
    deployed = deployer.state()["cloudflare"]["workers"]["ringi"]["deployed"]["vars"]
    assert deployed["REGISTER_CLIENT_IDS"] == outputs.get("RegisterClientIds", "")
    assert ("example state machine: " in proc.stdout) == (example == "true")
    assert_converged(deployer)


def test_rotate_switches_both_keys_without_a_gap(deployer):
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    assert deployer.run().returncode == 0
    first = deployer.state()
    old_key = first["aws"]["stacks"]["ringi"]["Parameters"]["RegistrationApiKey"]
    [old_aws] = first["aws"]["keys"]["ringi-worker"]
    before = len(deployer.calls())
    proc = deployer.run("--rotate")
    assert proc.returncode == 0, proc.stderr
    assert_converged(deployer)
    s = deployer.state()
    new_key = s["aws"]["stacks"]["ringi"]["Parameters"]["RegistrationApiKey"]
    [new_aws] = s["aws"]["keys"]["ringi-worker"]
    assert new_key != old_key and new_aws["AccessKeyId"] != old_aws["AccessKeyId"]
    calls = deployer.calls()[before:]

    def position(predicate) -> int:
        return next(i for i, c in enumerate(calls) if predicate(c))

    def bulk_with(value: str):
        return lambda c: command(c).startswith("secret bulk") and \
            json.loads(c["stdin"]).get("REGISTER_API_KEYS") == value

    both = position(bulk_with(f"{sha256(new_key)},{sha256(old_key)}"))
    stack_update = position(lambda c: command(c).startswith("cloudformation create-change-set")
                            and {"ParameterKey": "RegistrationApiKey", "ParameterValue": new_key}
                            in json.loads(c["stdin"]))
    only_new = position(bulk_with(sha256(new_key)))
    assert both < stack_update < only_new
    # The new AWS key is stored before the old one is deleted.
    stored = position(lambda c: command(c).startswith("secret bulk") and
                      json.loads(c["stdin"]).get("AWS_ACCESS_KEY_ID") == new_aws["AccessKeyId"])
    deleted = position(lambda c: command(c).startswith("iam delete-access-key") and old_aws["AccessKeyId"] in c["argv"])
    assert stored < deleted


def test_secrets_never_on_argv_in_output_or_in_files(deployer):
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    assert deployer.run().returncode == 0
    assert deployer.run("--rotate").returncode == 0
    assert deployer.run("--rotate", fail="wrangler secret bulk").returncode == 1  # an error path too
    s = deployer.state()
    secrets = set(s["aws"]["api_keys"]) | set(s["aws"]["secret_keys"])
    key_ids = {k["AccessKeyId"] for keys in s["aws"]["keys"].values() for k in keys}
    assert len(secrets) >= 5
    calls = deployer.calls()
    assert all("WRANGLER_LOG_SANITIZE" in c["env"] for c in calls if c["program"] == "wrangler")
    # Positive control: the values did travel, on stdin.
    assert all(any(v in c["stdin"] for c in calls) for v in secrets)
    for call in calls:
        argv = " ".join(call["argv"])
        assert not [v for v in secrets if v in argv], call["argv"]
    for output in deployer.outputs:
        assert not [v for v in secrets | key_ids if v in output]
    for path in deployer.root.rglob("*"):
        if path.is_file():
            data = path.read_text(errors="replace")
            assert not [v for v in secrets | key_ids if v in data], path


def test_dry_run_first_deploy_prints_the_plan_and_changes_nothing(deployer):
    proc = deployer.run("--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert [c for c in deployer.calls() if not is_read_only(c)] == []
    for text in ("would create the stack", "would create D1 database ringi",
                 "would write edge/wrangler.production.json",
                 "would deploy worker ringi", f"would check {deployer.worker.url}/healthz",
                 "nothing was created, changed or deleted"):
        assert text in proc.stdout
    assert "access key" not in proc.stdout
    assert not (deployer.root / "edge" / "wrangler.production.json").exists()
    assert not (deployer.root / ".ringi").exists()
    assert deployer.state()["aws"]["stacks"] == {} and deployer.state()["cloudflare"]["databases"] == []


def test_dry_run_after_a_deploy_shows_what_would_change(deployer):
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    assert deployer.run().returncode == 0
    (deployer.root / "deploy" / "aws" / "ringi.yaml").write_text("Description: changed\nResources: {}\n")
    before = len(deployer.calls())
    proc = deployer.run("--dry-run", "--rotate")
    assert proc.returncode == 0, proc.stderr
    assert [command(c) for c in deployer.calls()[before:] if not is_read_only(c)] == []
    assert "would update the stack by change set (template changed" in proc.stdout
    assert "exists: " in proc.stdout
    assert "would create an access key for ringi-worker" in proc.stdout
    assert "rotate the registration API key" in proc.stdout


FIRST_DEPLOY_FAILURES = [
    ("aws cloudformation create-change-set", 4), ("aws cloudformation wait change-set-create-complete", 4),
    ("aws cloudformation execute-change-set", 4), ("aws cloudformation wait stack-create-complete", 4),
    ("aws cloudformation deploy", 3), ("wrangler d1 create", 6), ("wrangler d1 migrations apply", 8),
    ("wrangler secret bulk", 9), ("wrangler deploy", 10), ("aws iam create-access-key", 9)]


@pytest.mark.parametrize("fail,step", FIRST_DEPLOY_FAILURES, ids=[f for f, _ in FIRST_DEPLOY_FAILURES])
def test_first_deploy_failure_then_rerun_completes(deployer, fail, step):
    if fail.startswith("aws iam"):  # only the access-key fallback makes a key
        deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    proc = deployer.run(fail=fail)
    assert proc.returncode == 1
    assert f"step {step}/11 (" in proc.stderr and f"`{fail} " in proc.stderr
    assert "injected failure" in proc.stderr
    assert_no_orphan_key(deployer)
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert_converged(deployer)


ROTATION_FAILURES = ["aws iam create-access-key", "wrangler secret bulk", "aws iam delete-access-key",
                     "wrangler secret bulk#2", "aws cloudformation create-change-set",
                     "aws cloudformation wait stack-update-complete", "wrangler secret bulk#3"]


@pytest.mark.parametrize("fail", ROTATION_FAILURES)
def test_rotation_failure_then_rerun_completes(deployer, fail):
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    assert deployer.run().returncode == 0
    old = deployer.state()["aws"]["stacks"]["ringi"]["Parameters"]["RegistrationApiKey"]
    proc = deployer.run("--rotate", fail=fail)
    assert proc.returncode == 1
    assert "step 9/11 (secrets) failed" in proc.stderr
    assert_no_orphan_key(deployer)
    s = deployer.state()
    sent = s["aws"]["stacks"]["ringi"]["Parameters"]["RegistrationApiKey"]
    accepted = accepted_hashes(deployer)
    # Registrations never stop: the worker accepts the key the connection sends (and at most one other).
    assert sha256(sent) in accepted and len(accepted) <= 2
    if fail.startswith("aws cloudformation"):  # the stack kept the old key, and the worker is back to it alone
        assert sent == old and accepted == [sha256(old)]
    proc = deployer.run("--rotate")
    assert proc.returncode == 0, proc.stderr
    assert_converged(deployer)


def test_two_leftover_access_keys_end_as_one(deployer):
    """A run killed between creating and storing a key leaves two; the next run deletes the oldest first."""
    deployer.settings["CALLBACK_CREDENTIALS"] = "access-key"
    assert deployer.run().returncode == 0
    s = deployer.state()
    s["aws"]["keys"]["ringi-worker"].append({"UserName": "ringi-worker", "AccessKeyId": "AKIAORPHAN0000000000",
                                             "Status": "Active", "SecretAccessKey": "x" * 40,
                                             "CreateDate": "2026-12-01T01:00:00+00:00"})
    deployer.state_path.write_text(json.dumps(s))
    oldest = s["aws"]["keys"]["ringi-worker"][0]["AccessKeyId"]
    before = len(deployer.calls())
    assert deployer.run().returncode == 0
    calls = [command(c) + " " + " ".join(c["argv"]) for c in deployer.calls()[before:]]
    first_delete = next(i for i, c in enumerate(calls) if c.startswith("iam delete-access-key"))
    create = next(i for i, c in enumerate(calls) if c.startswith("iam create-access-key"))
    assert first_delete < create and oldest in calls[first_delete]
    assert_converged(deployer)


def test_a_stack_in_review_is_created_not_updated(deployer):
    """A CREATE change set that failed leaves the stack in REVIEW_IN_PROGRESS; the next run creates it."""
    assert deployer.run(fail="aws cloudformation wait change-set-create-complete").returncode == 1
    assert deployer.state()["aws"]["stacks"]["ringi"]["StackStatus"] == "REVIEW_IN_PROGRESS"
    before = len(deployer.calls())
    assert deployer.run().returncode == 0
    [change_set] = [c for c in deployer.calls()[before:] if command(c).startswith("cloudformation create-change-set")]
    assert change_set["argv"][change_set["argv"].index("--change-set-type") + 1] == "CREATE"


def test_a_rolled_back_first_create_is_deleted_and_created_again(deployer):
    assert deployer.run(fail="aws cloudformation wait stack-create-complete").returncode == 1
    assert deployer.state()["aws"]["stacks"]["ringi"]["StackStatus"] == "ROLLBACK_COMPLETE"
    proc = deployer.run(fail="aws cloudformation delete-stack")
    assert proc.returncode == 1 and "step 4/11 (stack) failed: `aws cloudformation delete-stack" in proc.stderr
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert "delete the failed stack ringi (ROLLBACK_COMPLETE)" in proc.stdout
    assert_converged(deployer)


def test_cli_input_json_from_stdin_is_not_used(deployer):
    """The CLI reads a --cli-input-json file twice (empty from a pipe the second time): parameters go via
    --parameters file:///dev/stdin and the template via --template-body file://."""
    assert deployer.run().returncode == 0
    [call] = [c for c in deployer.calls() if command(c).startswith("cloudformation create-change-set")]
    argv = call["argv"]
    assert "--cli-input-json" not in argv
    assert argv[argv.index("--parameters") + 1] == "file:///dev/stdin"
    body = argv[argv.index("--template-body") + 1]
    assert body.startswith("file:///") and body.endswith("/.ringi/deploy/ringi.yaml")


@pytest.mark.parametrize("mode,message", [("down", "/healthz answered 503"), ("stale", "clientId='stale-client'")])
def test_health_check_failure_names_the_problem(deployer, mode, message):
    deployer.worker.mode = mode
    proc = deployer.run(check_timeout=1)
    assert proc.returncode == 1
    assert "step 11/11 (check) failed" in proc.stderr and message in proc.stderr


def test_health_check_retries_until_the_domain_answers(deployer):
    deployer.worker.mode, deployer.worker.late = "late", 1
    proc = deployer.run(check_timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert deployer.worker.requests >= 3  # 503, then /healthz and /config.json


def test_preflight_failures_stop_before_any_change(deployer):
    proc = deployer.run(fail="aws sts get-caller-identity")
    assert proc.returncode == 1 and "step 1/11 (preflight) failed: `aws sts get-caller-identity" in proc.stderr
    proc = deployer.run(fail="wrangler whoami")
    assert proc.returncode == 1 and "wrangler is not signed in" in proc.stderr
    assert [c for c in deployer.calls() if not is_read_only(c)] == []


# ─── settings ──────────────────────────────────────────────────────────────────────────────────────────────


def settings_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ringi.env"
    path.write_text(text)
    return path


BASE = "AWS_REGION=eu-central-1\nPUBLIC_HOST=approvals.example.com\nCOGNITO_DOMAIN_PREFIX=acme-approvals\n" \
       "MAIL_FROM=ringi@mail.example.com\n"


def test_settings_defaults_and_quoting(deploy_module, tmp_path):
    s = deploy_module.load_settings(settings_file(tmp_path, BASE + "export DEFAULT_LOCALE='ja'\n"
                                                  'APPROVER_GROUPS="release-approvers, finance" # two\n'
                                                  "IDENTITY_PROVIDERS=COGNITO, Corp\n"))
    assert s["DEFAULT_LOCALE"] == "ja" and s["APPROVER_GROUPS"] == "release-approvers,finance"
    assert s["IDENTITY_PROVIDERS"] == "COGNITO,Corp"
    assert s["MAIL_IDENTITY"] == "mail.example.com" and s["WORKER_NAME"] == s["D1_DATABASE_NAME"] == "ringi"
    assert s["TOKEN_USE"] == "id" and s["STATE_MACHINE_NAME_PREFIX"] == "ringi-"
    assert (s["ON_EXPIRY_LEAD_SECONDS"], s["AUDIT_RETENTION_DAYS"], s["ADMIN_GROUP"], s["OIDC_ISSUER"]) == \
        ("600", "400", "", "")
    okta = deploy_module.load_settings(settings_file(tmp_path, BASE + "OIDC_ISSUER=https://acme.okta.com/oauth2/default\n"
                                                     "OIDC_CLIENT_ID=0oa1\nOIDC_AUDIENCE=api://default\n"
                                                     "TOKEN_USE=access\nSCOPE_CLAIM=scp\n"))
    assert okta["OIDC_AUDIENCE"] == "api://default" and okta["SCOPE_CLAIM"] == "scp"


@pytest.mark.parametrize("text,key", [
    ("AWS_REGION=eu-central-1\n", "PUBLIC_HOST"),
    (BASE.replace("approvals.example.com", "https://approvals.example.com"), "PUBLIC_HOST"),
    (BASE + "TOKEN_USE=both\n", "TOKEN_USE"),
    (BASE.replace("acme-approvals", "my-cognito-login"), "COGNITO_DOMAIN_PREFIX"),
    (BASE + "MAIL_IDENTITY=other.example\n", "MAIL_IDENTITY"),
    (BASE + "APPROVER_GROUPS=a,b,c,d,e,f\n", "APPROVER_GROUPS"),
    (BASE + "IDENTITY_PROVIDERS=COGNITO,Corp_SAML\n", "IDENTITY_PROVIDERS"),
    (BASE + "IDENTITY_PROVIDERS=COGNITO,,Corp\n", "IDENTITY_PROVIDERS"),
    (BASE + "IDENTITY_PROVIDERS=COGNITO,Corp,COGNITO\n", "IDENTITY_PROVIDERS"),
    (BASE + "API_DESTINATION_RATE_LIMIT=301\n", "API_DESTINATION_RATE_LIMIT"),
    (BASE + "CLOUDFLARE_API_TOKEN=abc\n", "CLOUDFLARE_API_TOKEN"),
    (BASE + "AWS_SECRET_ACCESS_KEY=abc\n", "AWS_SECRET_ACCESS_KEY"),
    (BASE + "PUBLIC_HOTS=x\n", "PUBLIC_HOTS"),
    (BASE + "DEFAULT_LOCALE=en\nDEFAULT_LOCALE=ja\n", "DEFAULT_LOCALE"),
    (BASE + "RINGI_NAME='ringi\n", "line 5"),
    (BASE + "ON_EXPIRY_LEAD_SECONDS=86401\n", "ON_EXPIRY_LEAD_SECONDS"),
    (BASE + "ON_EXPIRY_LEAD_SECONDS=0\n", "ON_EXPIRY_LEAD_SECONDS"),
    (BASE + "AUDIT_RETENTION_DAYS=3661\n", "AUDIT_RETENTION_DAYS"),
    (BASE + "ADMIN_GROUP=two groups\n", "ADMIN_GROUP"),
    (BASE + "DEAD_LETTER_QUEUE_READERS=arn:aws:iam::123:role/ops\n", "DEAD_LETTER_QUEUE_READERS"),
    (BASE + "DEAD_LETTER_QUEUE_READERS=arn:aws:sts::123456789012:assumed-role/ops/me\n", "DEAD_LETTER_QUEUE_READERS"),
    (BASE + "OIDC_ISSUER=http://login.example.com\nOIDC_CLIENT_ID=c\n", "OIDC_ISSUER"),
    (BASE + "OIDC_ISSUER=https://login.example.com\n", "OIDC_CLIENT_ID"),
    (BASE + "OIDC_CLIENT_ID=c\n", "OIDC_CLIENT_ID"),
    (BASE + "OIDC_AUDIENCE=api://default\n", "OIDC_AUDIENCE"),
    (BASE + "SCOPE_CLAIM=scp\n", "SCOPE_CLAIM"),
    (BASE + "EMAIL_VERIFIED=trust\n", "EMAIL_VERIFIED"),
    (BASE + "EMAIL_VERIFIED=maybe\n", "EMAIL_VERIFIED"),
    (BASE + "OIDC_ISSUER=https://o.example.com\nOIDC_CLIENT_ID=c\nOIDC_AUDIENCE=api://default\n", "OIDC_AUDIENCE"),
    (BASE + 'SIGN_IN_SCOPES="email profile"\n', "SIGN_IN_SCOPES"),
    (BASE + "OIDC_ISSUER=https://o.example.com\nOIDC_CLIENT_ID=c\nENABLE_CLIENT_CREDENTIALS=true\n",
     "ENABLE_CLIENT_CREDENTIALS"),
])
def test_invalid_settings_name_the_key(deploy_module, tmp_path, text, key):
    with pytest.raises(deploy_module.SettingsError, match=re.escape(key)):
        deploy_module.load_settings(settings_file(tmp_path, text))


def test_the_example_settings_document_every_key(deploy_module, tmp_path):
    example = (ROOT / "deploy" / "ringi.env.example").read_text()
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", example, re.M))
    assert documented == {k.name for k in deploy_module.KEYS}
    assert deploy_module.load_settings(settings_file(tmp_path, example))["RINGI_NAME"] == "ringi"


def test_a_bad_settings_file_stops_before_any_call(deployer):
    deployer.settings.pop("AWS_REGION")
    proc = deployer.run()
    assert proc.returncode == 2 and "AWS_REGION is required" in proc.stderr
    assert deployer.calls() == []


def test_make_deploy_passes_dry_run_and_rotate():
    out = subprocess.run(["make", "-n", "deploy", "DRY_RUN=1", "ROTATE=1"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    line = next(line for line in out.splitlines() if "deploy/deploy.py" in line)
    assert "--dry-run" in line and "--rotate" in line
    line = next(line for line in subprocess.run(["make", "-n", "deploy"], cwd=ROOT, capture_output=True, text=True,
                                                check=True).stdout.splitlines() if "deploy/deploy.py" in line)
    assert "--dry-run" not in line and "--rotate" not in line


# ─── the real template renderer against the names deploy.py passes and reads ─────────────────────────────


def template_section(text: str, section: str) -> set[str]:
    m = re.search(rf"^{section}:\n((?:[ #].*\n|\n)*)", text, re.M)
    assert m, f"no {section} section"
    return set(re.findall(r"^  ([A-Za-z0-9]+):", m[1], re.M))


def test_the_real_template_takes_our_parameters_and_gives_our_outputs(deploy_module):
    if not (ROOT / "deploy" / "aws" / "render.py").exists():
        pytest.skip("deploy/aws/render.py is not there yet")
    text = deploy_module.render_template(ROOT)
    assert len(text.encode()) <= deploy_module.TEMPLATE_BODY_LIMIT
    settings = {k.name: k.default or "x" for k in deploy_module.KEYS}
    d = deploy_module.Deploy(root=ROOT, s=settings, run=deploy_module.Runner(ROOT))
    assert template_section(text, "Parameters") == set(deploy_module.stack_parameters(d)) | {"RegistrationApiKey"}
    outputs = template_section(text, "Outputs")
    assert set(deploy_module.OUTPUTS) | set(deploy_module.OPTIONAL_OUTPUTS) == outputs
    # The optional ones are exactly those the template leaves out under a Condition.
    section = text.split("\nOutputs:\n")[1]
    conditional = set(re.findall(r"^  ([A-Za-z0-9]+):\n(?:    #.*\n)*    Condition:", section, re.M))
    assert conditional == set(deploy_module.OPTIONAL_OUTPUTS)


def test_standins_are_executable_scripts():
    for name in ("aws", "wrangler"):
        path = STANDINS / name
        assert path.read_text().startswith("#!/usr/bin/env python3\n") and path.stat().st_mode & 0o111


# ─── chat channels: CHAT_CHANNELS_FILE → the worker secret CHAT_CHANNELS ──────────────────────────────────


def chat_file(tmp_path: Path, channels: dict) -> Path:
    path = tmp_path / "chat-channels.json"  # outside the checkout, as an operator would keep it
    path.write_text(json.dumps(channels))
    return path


CHAT = {"deploys": {"kind": "slack", "url": "https://hooks.slack.com/services/T0/B0/slacktoken0123456789"},
        "audit-hook": {"kind": "webhook", "url": "https://hooks.example.com/ringi/hooktoken0123",
                       "secret": "whsec_signing_secret_0123456789"}}


def test_chat_channels_are_stored_from_stdin_and_never_shown(deployer, tmp_path):
    deployer.write_settings(CHAT_CHANNELS_FILE=str(chat_file(tmp_path, CHAT)))
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert "store CHAT_CHANNELS (2 channels from" in proc.stdout
    stored = deployer.state()["cloudflare"]["workers"]["ringi"]["secrets"]["CHAT_CHANNELS"]
    [pushed] = [json.loads(c["stdin"])["CHAT_CHANNELS"] for c in deployer.calls()
                if command(c).startswith("secret bulk") and "CHAT_CHANNELS" in json.loads(c["stdin"])]
    assert sha256(pushed) == stored and json.loads(pushed) == CHAT
    # Stored again on the next run (a changed file cannot be told from an unchanged one), still only on stdin.
    assert deployer.run().returncode == 0
    values = [CHAT["deploys"]["url"], CHAT["audit-hook"]["url"], CHAT["audit-hook"]["secret"], "slacktoken0123456789"]
    for call in deployer.calls():
        assert not [v for v in values if v in " ".join(call["argv"])], call["argv"]
    for output in deployer.outputs:
        assert not [v for v in values if v in output], output
    for path in deployer.root.rglob("*"):
        if path.is_file():
            assert not [v for v in values if v in path.read_text(errors="replace")], path
    rendered = json.loads((deployer.root / "edge" / "wrangler.production.json").read_text())
    assert "CHAT_CHANNELS" not in rendered["env"]["production"]["vars"]


@pytest.mark.parametrize("channels,says", [
    ([1], "must be a JSON object"),
    ({"Deploys": {"kind": "slack", "url": "https://hooks.slack.com/services/x"}}, "channel 'Deploys': a name"),
    ({"d": {"kind": "irc", "url": "https://hooks.slack.com/services/x"}}, "channel 'd': must be"),
    ({"d": {"kind": "slack", "url": "http://hooks.slack.com/services/x"}}, "url must be an https:// URL"),
    ({"d": {"kind": "webhook", "url": "https://hooks.example.com/x"}}, "needs a signing secret"),
    ({"d": {"kind": "teams", "url": "https://x.example/y", "secret": "0123456789abcdef"}}, "takes no secret"),
])
def test_a_bad_chat_channels_file_stops_before_any_call_and_hides_the_urls(deployer, tmp_path, channels, says):
    deployer.write_settings(CHAT_CHANNELS_FILE=str(chat_file(tmp_path, channels)))
    proc = deployer.run()
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert "hooks." not in proc.stderr and "x.example" not in proc.stderr
    assert deployer.calls() == []


def test_a_missing_chat_channels_file_is_named(deployer, tmp_path):
    deployer.write_settings(CHAT_CHANNELS_FILE="deploy/chat-channels.json")
    proc = deployer.run()
    assert proc.returncode == 2 and "CHAT_CHANNELS_FILE: cannot read" in proc.stderr
    assert deployer.calls() == []

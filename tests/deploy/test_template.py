"""deploy/aws/ringi.yaml without AWS: the renderer, cfn-lint, and what the template grants and wires.

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_template*.py
"""
import copy
import json
import re
import shutil
import subprocess
import sys
from fnmatch import fnmatchcase

import pytest

from aws_template import (MOTO_SKIPPED_TYPES, OUTPUTS, ROOT, PARAMETERS, README, RENDER, TEMPLATE, WORKER_ACTIONS,
                          EVENT_INDEXES, TABLE_INDEXES, WORKER_TABLE_ACTIONS, asl,
                          condition, decode, evaluate, lint, load_renderer, parameter_values, put_events_entries,
                          references, rendered, rendered_text)


def resources_of(template, type_):
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def statements(document) -> list:
    found = document["Statement"]
    return found if isinstance(found, list) else [found]


def as_set(value) -> set:
    return set(value) if isinstance(value, list) else {value}


# The committed template's definition marker (deploy/aws/render.py): indentation, path.
MARKER = re.compile(r'^( *)DefinitionString: "\{\{ringi:definition ([^"{}]+)\}\}"$', re.M)


def raw_marker() -> tuple[str, re.Match]:
    raw = TEMPLATE.read_text(encoding="utf-8")
    [marker] = MARKER.finditer(raw)
    return raw, marker


def deployed_definition(template, params) -> dict:
    """The example state machine's definition as CloudFormation resolves it for these parameter values."""
    props = template["Resources"]["ExampleStateMachine"]["Properties"]
    assert "DefinitionSubstitutions" not in props
    return json.loads(evaluate(props["DefinitionString"], template, params))


def docs_asl_on_bus(bus: str) -> dict:
    """The docs file with every putEvents entry's EventBusName replaced: the documented substitution."""
    expected = asl()
    for entry in put_events_entries(expected):
        entry["EventBusName"] = bus
    return expected


# ---------------------------------------------------------------------------------------------------- render
def test_render_cli_runs_on_the_standard_library_alone(tmp_path):
    """-I -S: no site-packages, no user site, no PYTHON* environment: what a user without our venv has."""
    out = tmp_path / "ringi.rendered.yaml"
    subprocess.run([sys.executable, "-I", "-S", str(RENDER), "--out", str(out)], check=True, timeout=60)
    assert out.read_text(encoding="utf-8") == rendered_text()
    stdout = subprocess.run([sys.executable, "-I", "-S", str(RENDER)], check=True, capture_output=True,
                            text=True, timeout=60).stdout
    assert stdout == rendered_text()


def test_rendering_replaces_the_marker_and_nothing_else():
    text, marker = raw_marker()
    assert marker[2] == "docs/workflow/approval.jsonpath.asl.json"
    raw = text.splitlines()
    at = text[:marker.start()].count("\n")
    out = rendered_text().splitlines()
    assert out[0].startswith("# Rendered by deploy/aws/render.py")
    out = out[1:]
    assert out[at] == marker[1] + "DefinitionString: !Sub |-"
    end = next(i for i in range(at + 1, len(out)) if not out[i].startswith(marker[1] + "  "))
    assert out[:at] + out[end:] == raw[:at] + raw[at + 1:]


def test_rendered_template_fits_an_inline_template_body():
    assert len(rendered_text().encode()) <= 51_200  # CreateStack/CreateChangeSet TemplateBody limit


def test_deployed_definition_is_the_docs_file():
    """Resolving the Fn::Sub as CloudFormation does gives the docs file back (bus default), and with another
    bus only the putEvents entries' EventBusName differ."""
    template = rendered()
    sub = template["Resources"]["ExampleStateMachine"]["Properties"]["DefinitionString"]["Fn::Sub"]
    assert set(re.findall(r"\$\{([^}]*)\}", sub)) == {"EventBusName"}
    for bus in ("default", "ringi-approvals"):
        assert deployed_definition(template, parameter_values(template, EventBusName=bus)) == docs_asl_on_bus(bus)
    assert docs_asl_on_bus("default") == asl()  # the docs file itself names the default bus


def test_renderer_keeps_other_dollar_braces_unicode_and_nested_entries(tmp_path):
    """A definition with a literal ${...}, non-ASCII text and putEvents in a Parallel branch survives the
    round trip template text -> YAML -> Fn::Sub."""
    (tmp_path / "deploy/aws").mkdir(parents=True)
    shutil.copy(TEMPLATE, tmp_path / "deploy/aws/ringi.yaml")
    (tmp_path / "docs/workflow").mkdir(parents=True)
    entry = {"EventBusName": "default", "Source": "ringi.workflow", "DetailType": "ringi.approval.requested",
             "Detail": {"title": "承認してください ${not.a.variable} 😀 \"quoted\" \\ back\nslash"}}
    task = {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents.waitForTaskToken",
            "Parameters": {"Entries": [entry]}, "End": True}
    doc = {"Comment": "日本語 ${x}", "StartAt": "P", "States": {"P": {
        "Type": "Parallel", "End": True, "Branches": [{"StartAt": "T", "States": {"T": task}}]}}}
    (tmp_path / "docs/workflow/approval.jsonpath.asl.json").write_text(json.dumps(doc, ensure_ascii=False),
                                                                       encoding="utf-8")
    text = load_renderer().render(tmp_path)
    assert text.isascii()
    template = decode(text)
    expected = copy.deepcopy(doc)
    expected["States"]["P"]["Branches"][0]["States"]["T"]["Parameters"]["Entries"][0]["EventBusName"] = "other-bus"
    assert deployed_definition(template, parameter_values(template, EventBusName="other-bus")) == expected


@pytest.mark.parametrize("marker, message", [
    (None, "expected definition markers"),
    ('"{{ringi:definition ../outside.asl.json}}"', "outside the repository"),
])
def test_renderer_refuses_a_template_without_a_usable_marker(tmp_path, marker, message):
    repo = tmp_path / "repo"
    (repo / "deploy/aws").mkdir(parents=True)
    (tmp_path / "outside.asl.json").write_text("{}")
    raw, found = raw_marker()
    (repo / "deploy/aws/ringi.yaml").write_text(
        raw.replace(found[0], f"{found[1]}DefinitionString: {marker or repr('{}')}"), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_renderer().render(repo)


# ---------------------------------------------------------------------------------------------------- lint
def test_cfn_lint_rendered_template_is_clean():
    assert lint(rendered_text()) == []


def test_cfn_lint_raw_template_is_clean():
    """The committed file lints too (the marker is an opaque string to cfn-lint)."""
    assert lint(TEMPLATE.read_text(encoding="utf-8")) == []


def resolved_definition_text(mutate=None) -> str:
    """The template with the definition as it is deployed for EventBusName=default, as a plain string:
    cfn-lint validates state machine definitions (E3601) only in that form, not inside Fn::Sub."""
    definition = docs_asl_on_bus("default")
    if mutate:
        mutate(definition)
    raw, marker = raw_marker()
    block = "\n".join(marker[1] + "  " + text for text in json.dumps(definition, indent=2).splitlines())
    return raw.replace(marker[0], f"{marker[1]}DefinitionString: |-\n{block}")


def test_cfn_lint_validates_the_deployed_definition():
    assert lint(resolved_definition_text()) == []
    # ...and the check is live: a broken definition in the same place is reported.
    broken = lint(resolved_definition_text(lambda d: d.update(StartAt="NoSuchState")))
    assert any(m.startswith("E3601") for m in broken), broken


# ---------------------------------------------------------------------------------------------------- contract
def test_parameters_and_outputs_are_the_deploy_contract():
    template = rendered()
    assert set(template["Parameters"]) == set(PARAMETERS)
    assert set(template["Outputs"]) == set(OUTPUTS)
    p = template["Parameters"]
    assert p["AppName"]["Default"] == "ringi" and p["StateMachineNamePrefix"]["Default"] == "ringi-"
    assert p["EventBusName"]["Default"] == "default" and p["ApproverGroups"]["Type"] == "CommaDelimitedList"
    assert p["ApiDestinationRateLimit"]["Type"] == "Number" and str(p["ApiDestinationRateLimit"]["Default"]) == "10"
    assert p["EnableClientCredentials"]["Default"] == "false" and p["CreateExampleStateMachine"]["Default"] == "true"
    assert p["IdentityProviders"]["Type"] == "CommaDelimitedList" and p["IdentityProviders"]["Default"] == "COGNITO"
    assert p["PublicBaseUrl"]["AllowedPattern"] == "^https://[^/]+$"
    for name in ("EnableClientCredentials", "CreateExampleStateMachine"):
        assert p[name]["AllowedValues"] == ["true", "false"]
    key = p["RegistrationApiKey"]
    assert key["NoEcho"] is True and key["MinLength"] >= 32 and "Default" not in key


def stack_outputs(template, params) -> dict:
    """The outputs CloudFormation would list for these parameter values: those whose Condition holds."""
    outputs = {k: v["Value"] for k, v in template["Outputs"].items()
               if "Condition" not in v or condition(v["Condition"], template, params)}
    return evaluate(outputs, template, params)


def test_outputs_with_example_values():
    template = rendered()
    assert template["Outputs"]["CognitoIssuer"]["Value"] == \
        {"Fn::Sub": "https://cognito-idp.${AWS::Region}.amazonaws.com/${UserPool}"}
    template["Outputs"].pop("CognitoIssuer")  # Fn::Sub of a resource: evaluate() does not resolve it
    out = stack_outputs(template, parameter_values(template))
    assert out == {
        "UserPoolId": {"Ref": "UserPool"},
        "CognitoDomain": "https://ringi-example.auth.ap-northeast-1.amazoncognito.com",
        "SpaClientId": {"Ref": "SpaClient"},
        "RegisterScope": "ringi/approvals.write",
        "WorkerRoleArn": {"Fn::GetAtt": ["WorkerRole", "Arn"]},
        "StateMachineArn": {"Ref": "ExampleStateMachine"},
        "EventBusName": "default",
        "ConnectionArn": {"Fn::GetAtt": ["RegistrationConnection", "Arn"]},
        "ApiDestinationArn": {"Fn::GetAtt": ["RegistrationApiDestination", "Arn"]},
        "DeadLetterQueueUrl": {"Ref": "RegistrationDeadLetterQueue"},
        "AwsRegion": "ap-northeast-1",
        "MailFrom": "ringi@example.com",
        # member.yaml's IssuerHost and Audience.
        "FederationIssuerHost": parameter_values(template)["PublicBaseUrl"].removeprefix("https://"),
        "FederationAudience": "sts.amazonaws.com",
    }
    flipped = stack_outputs(template, parameter_values(
        template, CreateExampleStateMachine="false", EnableClientCredentials="true"))
    assert "StateMachineArn" not in flipped and flipped["RegisterClientIds"] == {"Ref": "RegisterClient"}


def test_outputs_of_optional_resources_carry_their_condition():
    """An output naming a conditional resource is left out with it (a Condition, not an empty-string value)."""
    template = rendered()
    resources, outputs = template["Resources"], template["Outputs"]
    for name, output in outputs.items():
        conditions = {resources[r]["Condition"] for r in references(output["Value"])
                      if r in resources and "Condition" in resources[r]}
        assert conditions == ({output["Condition"]} if "Condition" in output else set()), name
        assert "Fn::If" not in json.dumps(output["Value"]), name
    conditional = {k for k, v in outputs.items() if "Condition" in v}
    assert conditional == {"RegisterClientIds", "StateMachineArn", "ApprovalsTableName", "DynamoDbStateMachineArn",
                           "WorkerUserName", "WorkerRoleArn"}


def test_no_output_exposes_a_secret():
    template = rendered()
    no_echo = {k for k, v in template["Parameters"].items() if v.get("NoEcho")}
    assert no_echo == {"RegistrationApiKey"}
    assert not resources_of(template, "AWS::IAM::AccessKey"), "access keys are created outside the stack"
    secret_attr = re.compile(r"secret|password|key", re.I)
    for name, output in template["Outputs"].items():
        assert not references(output) & no_echo, name
        for attr in re.findall(r'"Fn::GetAtt": \["\w+", "(\w+)"\]', json.dumps(output["Value"])):
            assert not secret_attr.search(attr), (name, attr)  # e.g. a client's ClientSecret
    # The key is used in exactly one place: the connection's Authorization header.
    users = [k for k, v in template["Resources"].items() if "RegistrationApiKey" in references(v)]
    assert users == ["RegistrationConnection"]


# ---------------------------------------------------------------------------------------------------- IAM
def policies_attached_to_user(template, user: str, params: dict | None = None) -> list[dict]:
    """Every policy document the template attaches to the user or role, however it is attached (with `params`:
    only those whose resource's Condition holds, and the Users / Roles lists as these values make them)."""
    spec = template["Resources"][user]
    assert spec["Type"] in ("AWS::IAM::User", "AWS::IAM::Role")
    props = spec.get("Properties", {})
    found = [p["PolicyDocument"] for p in props.get("Policies", [])]
    assert not props.get("ManagedPolicyArns") and not props.get("Groups") and not props.get("PermissionsBoundary")
    attach = "Users" if spec["Type"] == "AWS::IAM::User" else "Roles"
    for spec in template["Resources"].values():
        if params is not None and "Condition" in spec and not condition(spec["Condition"], template, params):
            continue
        p = spec.get("Properties", {})
        names = evaluate(p.get(attach, []), template, params) if params is not None else json.dumps(p.get(attach))
        if spec["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") and {"Ref": user} in names \
                or params is None and json.dumps({"Ref": user}) in names:
            found.append(p["PolicyDocument"])
        if spec["Type"] in ("AWS::IAM::UserPolicy", "AWS::IAM::RolePolicy") and \
                {"Ref": user} in (p.get("UserName"), p.get("RoleName")):
            found.append(p["PolicyDocument"])
    return found


def worker_identity(template, params) -> str:
    return "WorkerRole" if params["WorkerCredentials"] == "federation" else "WorkerUser"


def worker_policy(template, params) -> dict:
    """The worker's permissions for these parameter values: its policies' statements together."""
    documents = [evaluate(d, template, params)
                 for d in policies_attached_to_user(template, worker_identity(template, params), params)]
    return {"Version": "2012-10-17", "Statement": [s for d in documents for s in statements(d)]}


def test_federation_is_the_default_and_makes_no_user_and_no_key():
    template = rendered()
    p = template["Parameters"]["WorkerCredentials"]
    assert p["Default"] == "federation" and p["AllowedValues"] == ["federation", "access-key"]
    params = parameter_values(template)
    made = {k: v["Type"] for k, v in template["Resources"].items()
            if "Condition" not in v or condition(v["Condition"], template, params)}
    assert "AWS::IAM::User" not in made.values() and "AWS::IAM::AccessKey" not in made.values()
    assert made["WorkerRole"] == "AWS::IAM::Role"
    assert "AWS::IAM::AccessKey" not in {v["Type"] for v in template["Resources"].values()}, "never a key in the stack"
    out = stack_outputs(template, params)
    assert "WorkerUserName" not in out and out["WorkerRoleArn"] == {"Fn::GetAtt": ["WorkerRole", "Arn"]}
    # access-key: the user, and no role.
    fallback = parameter_values(template, WorkerCredentials="access-key")
    assert condition("WithAccessKey", template, fallback) and not condition("WithFederation", template, fallback)
    assert template["Resources"]["WorkerUser"]["Condition"] == "WithAccessKey"
    assert template["Resources"]["WorkerRole"]["Condition"] == "WithFederation"
    out = stack_outputs(template, fallback)
    assert "WorkerRoleArn" not in out and out["WorkerUserName"] == {"Ref": "WorkerUser"}


def test_worker_role_trusts_only_worker_tokens_of_this_account():
    template = rendered()
    params = parameter_values(template)
    props = template["Resources"]["WorkerRole"]["Properties"]
    trust = json.loads(evaluate(props["AssumeRolePolicyDocument"], template, params))
    [statement] = trust["Statement"]
    assert statement == {
        "Effect": "Allow",
        "Principal": {"Federated": "arn:aws:iam::123456789012:oidc-provider/approvals.example.com"},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {"approvals.example.com:aud": "sts.amazonaws.com",
                                       "approvals.example.com:sub": "ringi-worker:123456789012"}}}
    # The audience member.yaml's callback roles check too (the stack's FederationAudience output).
    assert template["Outputs"]["FederationAudience"]["Value"] == "sts.amazonaws.com"
    assert evaluate(props["RoleName"], template, params) == "ringi-worker"
    assert props["MaxSessionDuration"] == 3600 and not props.get("Policies")


def test_a_callback_token_is_not_a_worker_token():
    """member.yaml's callback role wants sub ringi-callback:ACCOUNT, the worker role ringi-worker:ACCOUNT."""
    member = (ROOT / "deploy/aws/member.yaml").read_text(encoding="utf-8")
    assert '"${IssuerHost}:sub": "ringi-callback:${AWS::AccountId}"' in member
    role = json.dumps(rendered()["Resources"]["WorkerRole"]["Properties"]["AssumeRolePolicyDocument"])
    assert "ringi-worker:${AWS::AccountId}" in role and "ringi-callback" not in role


def test_worker_role_may_only_mail_and_use_the_table():
    """Exactly the user's mail and table permissions; approval tasks go through the callback roles."""
    template = rendered()
    for storage in ("d1", "dynamodb"):
        role = worker_policy(template, parameter_values(template, ApprovalsStorage=storage))
        user = worker_policy(template, parameter_values(template, ApprovalsStorage=storage,
                                                        WorkerCredentials="access-key"))
        assert statements(role) == [s for s in statements(user) if s.get("Sid") != "AnswerApprovalTasks"]
        actions = {a for s in statements(role) for a in as_set(s["Action"])}
        assert actions == {"ses:SendEmail"} | ((WORKER_TABLE_ACTIONS | {"dynamodb:DeleteItem"})
                                               if storage == "dynamodb" else set())


def test_worker_user_may_only_answer_tasks_and_mail():
    template = rendered()
    params = parameter_values(template, WorkerCredentials="access-key")
    policy = worker_policy(template, params)
    assert {a for s in statements(policy) for a in as_set(s["Action"])} == WORKER_ACTIONS
    by_service = {}
    for s in statements(policy):
        assert s["Effect"] == "Allow" and "NotAction" not in s and "NotResource" not in s
        assert len({a.split(":")[0] for a in as_set(s["Action"])}) == 1, "one service per statement"
        by_service[next(iter(as_set(s["Action"]))).split(":")[0]] = s
    assert set(by_service) == {"states", "ses"}
    states, ses = by_service["states"], by_service["ses"]
    assert as_set(states["Resource"]) == {"arn:aws:states:ap-northeast-1:123456789012:stateMachine:ringi-*"}
    assert "Condition" not in states
    assert as_set(ses["Resource"]) == {"arn:aws:ses:ap-northeast-1:123456789012:identity/example.com"}
    assert ses["Condition"] == {"StringEquals": {"ses:FromAddress": "ringi@example.com"}}
    # The prefix, not a hard-coded name: another prefix moves the scope with it.
    other = worker_policy(template, parameter_values(template, StateMachineNamePrefix="ops-",
                                                     WorkerCredentials="access-key"))
    assert any(as_set(s["Resource"]) == {"arn:aws:states:ap-northeast-1:123456789012:stateMachine:ops-*"}
               for s in statements(other))


# ------------------------------------------------------------------------------- STORAGE=dynamodb
def test_the_approvals_table_exists_only_with_dynamodb_storage():
    template = rendered()
    assert template["Parameters"]["ApprovalsStorage"]["AllowedValues"] == ["d1", "dynamodb"]
    assert template["Parameters"]["ApprovalsStorage"]["Default"] == "d1"
    assert not condition("WithDynamoDb", template, parameter_values(template))
    assert condition("WithDynamoDb", template, parameter_values(template, ApprovalsStorage="dynamodb"))
    spec = template["Resources"]["ApprovalsTable"]
    assert spec["Condition"] == "WithDynamoDb" and spec["DeletionPolicy"] == "Retain"
    props = spec["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "approvalId", "KeyType": "HASH"}], "the seed's key"
    gsi, *events = props["GlobalSecondaryIndexes"]
    assert gsi == {"IndexName": "byApprover", "KeySchema": [{"AttributeName": "approverUserId", "KeyType": "HASH"}],
                   "Projection": {"ProjectionType": "KEYS_ONLY"}}
    assert events == [{"IndexName": name, "KeySchema": [{"AttributeName": hash_key, "KeyType": "HASH"},
                                                       {"AttributeName": "eventSort", "KeyType": "RANGE"}],
                       "Projection": {"ProjectionType": "ALL"}} for name, hash_key in EVENT_INDEXES.items()]
    assert props["AttributeDefinitions"] == [{"AttributeName": a, "AttributeType": "S"} for a in
                                             ("approvalId", "approverUserId", "eventOf", "eventMonth", "eventSort")]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["BillingMode"] == "PAY_PER_REQUEST"


def test_with_dynamodb_the_worker_gets_the_tables_item_actions_only():
    template = rendered()
    assert {a for s in statements(worker_policy(template, parameter_values(template, WorkerCredentials="access-key"))) for a in as_set(s["Action"])} \
        == WORKER_ACTIONS, "D1: no table, no table actions"
    policy = worker_policy(template, parameter_values(template, ApprovalsStorage="dynamodb", WorkerCredentials="access-key"))
    [table] = [s for s in statements(policy) if s.get("Sid") == "ApprovalsTableItems"]
    assert as_set(table["Action"]) == WORKER_TABLE_ACTIONS
    assert all(not a.endswith("*") and "Table" not in a.split(":")[1] for a in WORKER_TABLE_ACTIONS), \
        "item actions, no table management"
    assert table["Resource"] == [{"Fn::GetAtt": ["ApprovalsTable", "Arn"]}] + [
        f"${{ApprovalsTable.Arn}}/index/{i}" for i in TABLE_INDEXES], "the table and its indexes, nothing else"
    assert "Condition" not in table and table["Effect"] == "Allow"
    # Deleting: out-of-office items only (a person clears theirs), never an approval or its token.
    [clear] = [s for s in statements(policy) if s.get("Sid") == "ClearOutOfOffice"]
    assert clear["Action"] == "dynamodb:DeleteItem" and clear["Resource"] == {"Fn::GetAtt": ["ApprovalsTable", "Arn"]}
    assert clear["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["ooo#*"]}}
    assert {a for s in statements(policy) for a in as_set(s["Action"])} == \
        WORKER_ACTIONS | WORKER_TABLE_ACTIONS | {"dynamodb:DeleteItem"}


def test_the_dynamodb_state_machine_writes_the_seed_item_itself():
    template = rendered()
    params = parameter_values(template, ApprovalsStorage="dynamodb")
    assert condition("WithDynamoDbStateMachine", template, params)
    assert not condition("WithDynamoDbStateMachine", template, {**params, "CreateExampleStateMachine": "false"})
    props = template["Resources"]["DynamoDbStateMachine"]["Properties"]
    name = evaluate(props["StateMachineName"], template, params)
    assert fnmatchcase(f"arn:aws:states:ap-northeast-1:123456789012:stateMachine:{name}",
                       "arn:aws:states:ap-northeast-1:123456789012:stateMachine:ringi-*"), "the worker may answer it"
    definition = json.loads(evaluate(props["DefinitionString"], template, params))
    task = definition["States"]["RequestApproval"]
    assert task["Resource"] == "arn:aws:states:::aws-sdk:dynamodb:putItem.waitForTaskToken"
    assert task["Parameters"]["TableName"] == "${ApprovalsTable}"
    assert set(task["Parameters"]["Item"]) == {"approvalId", "approverUserId", "taskToken", "expiresAt"}
    assert task["Parameters"]["Item"]["taskToken"] == {"S.$": "$$.Task.Token"}
    assert task["TimeoutSeconds"] <= 8 * 24 * 3600, "paused no longer than the item lives"
    role = template["Resources"]["DynamoDbStateMachineRole"]["Properties"]
    [policy] = role["Policies"]
    [statement] = statements(policy["PolicyDocument"])
    assert statement["Action"] == "dynamodb:PutItem" and statement["Resource"] == {"Fn::GetAtt": ["ApprovalsTable", "Arn"]}


def test_example_state_machine_falls_under_the_worker_scope():
    template = rendered()
    params = parameter_values(template, WorkerCredentials="access-key")
    name = evaluate(template["Resources"]["ExampleStateMachine"]["Properties"]["StateMachineName"], template, params)
    assert name == "ringi-example-approval"
    arn = f"arn:aws:states:ap-northeast-1:123456789012:stateMachine:{name}"
    policy = worker_policy(template, params)
    [states] = [s for s in statements(policy) if "states:SendTaskSuccess" in as_set(s["Action"])]
    assert fnmatchcase(arn, next(iter(as_set(states["Resource"]))))


def test_readme_shows_the_worker_policy_as_deployed():
    """deploy/aws/README.md prints the policy for its example values; it must be what the template grants."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- worker-policy (\{.*?\}) -->\s*```json\n(.*?)```", text, re.S)
    assert block, "README lacks the worker-policy block"
    template = rendered()
    assert json.loads(block[2]) == worker_policy(template, parameter_values(template, **json.loads(block[1])))


def test_example_role_may_only_put_approval_events_on_the_bus():
    template = rendered()
    params = parameter_values(template, EventBusName="ringi-bus")
    role = evaluate(template["Resources"]["ExampleStateMachineRole"]["Properties"], template, params)
    [policy] = role["Policies"]
    [s] = statements(policy["PolicyDocument"])
    assert as_set(s["Action"]) == {"events:PutEvents"}
    assert as_set(s["Resource"]) == {"arn:aws:events:ap-northeast-1:123456789012:event-bus/ringi-bus"}
    [entry] = put_events_entries(asl())
    assert s["Condition"] == {"StringEquals": {"events:source": entry["Source"],
                                               "events:detail-type": entry["DetailType"]}}
    [trust] = statements(role["AssumeRolePolicyDocument"])
    assert trust["Principal"] == {"Service": "states.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": "123456789012"}


# ---------------------------------------------------------------------------------------------------- Cognito
def test_spa_client_is_public_code_flow_only():
    template = rendered()
    params = parameter_values(template)
    spa = template["Resources"]["SpaClient"]["Properties"]
    c = evaluate(spa, template, params)
    assert c["GenerateSecret"] is False and c["AllowedOAuthFlowsUserPoolClient"] is True
    assert c["AllowedOAuthFlows"] == ["code"]
    assert set(c["AllowedOAuthScopes"]) == {"openid", "email", "profile"}
    assert c["CallbackURLs"] == [params["PublicBaseUrl"] + "/auth/callback"]
    assert c["LogoutURLs"] == [params["PublicBaseUrl"] + "/"]
    assert spa["SupportedIdentityProviders"] == {"Ref": "IdentityProviders"}
    assert c["SupportedIdentityProviders"] == ["COGNITO"]  # the default
    federated = parameter_values(template, IdentityProviders="COGNITO, Corp")
    assert evaluate(spa, template, federated)["SupportedIdentityProviders"] == ["COGNITO", "Corp"]
    assert c["PreventUserExistenceErrors"] == "ENABLED"
    assert c["ExplicitAuthFlows"] == ["ALLOW_REFRESH_TOKEN_AUTH"]
    domain = template["Resources"]["UserPoolDomain"]["Properties"]
    assert domain["ManagedLoginVersion"] == 1 and domain["Domain"] == {"Ref": "CognitoDomainPrefix"}


def test_user_pool_signs_in_by_verified_email():
    pool = rendered()["Resources"]["UserPool"]
    props = pool["Properties"]
    assert props["UsernameAttributes"] == ["email"] and props["AutoVerifiedAttributes"] == ["email"]
    assert props["UserAttributeUpdateSettings"]["AttributesRequireVerificationBeforeUpdate"] == ["email"]
    assert props["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    assert props["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert pool["DeletionPolicy"] == pool["UpdateReplacePolicy"] == "Retain"


def test_client_credentials_exist_only_when_enabled():
    template = rendered()
    resources = template["Resources"]
    conditional = {k for k, v in resources.items() if v.get("Condition") == "WithClientCredentials"}
    assert conditional == {"RegisterClient", "RegisterResourceServer"}
    machine = {k for k, v in resources.items() if v["Type"] == "AWS::Cognito::UserPoolResourceServer"
               or "client_credentials" in v.get("Properties", {}).get("AllowedOAuthFlows", [])}
    assert machine == conditional
    for value, expected in (("true", True), ("false", False)):
        params = parameter_values(template, EnableClientCredentials=value)
        assert condition("WithClientCredentials", template, params) is expected
    server = resources["RegisterResourceServer"]["Properties"]
    client = resources["RegisterClient"]["Properties"]
    scopes = {f"{server['Identifier']}/{s['ScopeName']}" for s in server["Scopes"]}
    assert scopes == {"ringi/approvals.write"} == set(client["AllowedOAuthScopes"])
    assert template["Outputs"]["RegisterScope"]["Value"] in scopes
    assert client["GenerateSecret"] is True and client["AllowedOAuthFlows"] == ["client_credentials"]
    assert resources["RegisterClient"]["DependsOn"] == "RegisterResourceServer"


@pytest.mark.parametrize("groups, expected", [
    ("release-approvers", ["release-approvers"]),
    ("release-approvers, finance,ops", ["release-approvers", "finance", "ops"]),
    ("a,b,c,d,e", ["a", "b", "c", "d", "e"]),
    ("", []),
])
def test_approver_groups_fill_the_slots(groups, expected):
    template = rendered()
    params = parameter_values(template, ApproverGroups=groups)
    slots = sorted(k for k, v in template["Resources"].items() if v["Type"] == "AWS::Cognito::UserPoolGroup")
    created = [evaluate(template["Resources"][k]["Properties"]["GroupName"], template, params)
               for k in slots if condition(template["Resources"][k]["Condition"], template, params)]
    assert created == expected


# ---------------------------------------------------------------------------------------------------- EventBridge
def test_rule_matches_what_the_workflow_puts():
    template = rendered()
    entries = put_events_entries(asl())
    assert entries, "the docs workflow puts no event"
    rule = template["Resources"]["RegistrationRule"]["Properties"]
    assert rule["EventPattern"] == {"source": sorted({e["Source"] for e in entries}),
                                    "detail-type": sorted({e["DetailType"] for e in entries})}
    assert rule["EventBusName"] == {"Ref": "EventBusName"} and rule["State"] == "ENABLED"


def test_rule_target_retries_and_dead_letters_into_a_private_queue():
    template = rendered()
    [target] = template["Resources"]["RegistrationRule"]["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["RegistrationApiDestination", "Arn"]}
    assert target["RoleArn"] == {"Fn::GetAtt": ["RegistrationInvokeRole", "Arn"]}
    assert 60 <= target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 86400
    assert 0 < target["RetryPolicy"]["MaximumRetryAttempts"] <= 185
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["RegistrationDeadLetterQueue", "Arn"]}}
    assert "InputTransformer" not in target and "InputPath" not in target  # the worker reads the whole event
    queue = template["Resources"]["RegistrationDeadLetterQueue"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    [qp] = resources_of(template, "AWS::SQS::QueuePolicy").values()
    assert qp["Properties"]["Queues"] == [{"Ref": "RegistrationDeadLetterQueue"}]
    allows = [s for s in statements(qp["Properties"]["PolicyDocument"]) if s["Effect"] == "Allow"]
    assert allows == [{"Sid": "RegistrationRuleOnly", "Effect": "Allow",
                       "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage",
                       "Resource": {"Fn::GetAtt": ["RegistrationDeadLetterQueue", "Arn"]},
                       "Condition": {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["RegistrationRule", "Arn"]}}}}]


def test_only_named_readers_may_read_the_dead_letter_queue():
    """Its messages are registrations with their task tokens: receiving, deleting, purging and moving them is
    denied to every principal but the account root and the roles or users of DeadLetterQueueReaders."""
    template = rendered()
    [qp] = resources_of(template, "AWS::SQS::QueuePolicy").values()

    def deny(**overrides):
        params = parameter_values(template, **overrides)
        document = evaluate(qp["Properties"]["PolicyDocument"], template, params)
        [s] = [s for s in statements(document) if s["Effect"] == "Deny" and "sqs:ReceiveMessage" in as_set(s["Action"])]
        return s

    s = deny()
    assert s["Principal"] == "*" and s["Resource"] == {"Fn::GetAtt": ["RegistrationDeadLetterQueue", "Arn"]}
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:PurgeQueue",
            "sqs:StartMessageMoveTask"} <= as_set(s["Action"])
    assert "sqs:SendMessage" not in as_set(s["Action"]), "the rule still dead-letters into it"
    root = "arn:aws:iam::123456789012:root"
    assert s["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": [root]}}, "by default: the account root only"
    readers = "arn:aws:iam::123456789012:role/ringi-operators,arn:aws:iam::123456789012:role/oncall-*"
    assert deny(DeadLetterQueueReaders=readers)["Condition"]["ArnNotLike"]["aws:PrincipalArn"] == \
        [root, *readers.split(",")]


def test_invoke_role_may_only_call_the_api_destination():
    role = rendered()["Resources"]["RegistrationInvokeRole"]["Properties"]
    [trust] = statements(role["AssumeRolePolicyDocument"])
    assert trust["Principal"] == {"Service": "events.amazonaws.com"}
    [policy] = role["Policies"]
    assert statements(policy["PolicyDocument"]) == [{
        "Effect": "Allow", "Action": "events:InvokeApiDestination",
        "Resource": {"Fn::GetAtt": ["RegistrationApiDestination", "Arn"]}}]
    assert "ManagedPolicyArns" not in role


def test_connection_and_api_destination():
    template = rendered()
    params = parameter_values(template)
    conn = template["Resources"]["RegistrationConnection"]["Properties"]
    assert conn["AuthorizationType"] == "API_KEY"
    auth = conn["AuthParameters"]["ApiKeyAuthParameters"]
    assert auth["ApiKeyName"] == "Authorization"
    assert auth["ApiKeyValue"] == {"Fn::Sub": "Bearer ${RegistrationApiKey}"}
    dest = evaluate(template["Resources"]["RegistrationApiDestination"]["Properties"], template, params)
    assert dest["InvocationEndpoint"] == "https://approvals.example.com/api/v1/approvals"
    assert dest["HttpMethod"] == "POST" and dest["InvocationRateLimitPerSecond"] == "10"
    assert dest["ConnectionArn"] == {"Fn::GetAtt": ["RegistrationConnection", "Arn"]}


def test_readme_lists_what_moto_skips():
    text = README.read_text(encoding="utf-8")
    for type_ in MOTO_SKIPPED_TYPES:
        assert f"`{type_}`" in text, type_

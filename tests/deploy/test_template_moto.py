"""The rendered deploy/aws/ringi.yaml deployed into moto 5.2.5 (in process, no server, no network), and the example
workflow run up to its approval wait.

Two moto limits shape the test (the first is also reported in pytest's warnings summary):
  * moto's CloudFormation has no model for some resource types (MOTO_SKIPPED_TYPES: Cognito, the EventBridge
    connection and API destination, the SQS queue policy). Left in, a GetAtt of one fails the whole stack, so
    those resources are removed and every reference to one becomes an ARN-shaped placeholder. Everything else
    is created by moto from the template as rendered; test_template.py checks the removed ones statically.
  * moto's CloudFormation creates state machines in its non-executing Step Functions backend, while the API
    with `execute_state_machine` serves the executing one. The test copies the state machine the stack
    created - name, definition and role exactly as CloudFormation resolved them - into the executing backend.
"""
import json
import os
import re
import time
import warnings

import boto3
import pytest
from moto import mock_aws
from moto.cloudformation.parsing import resource_class_from_type

from aws_template import (ASL, EVENT_INDEXES, MOTO_SKIPPED_TYPES, OUTPUTS, TABLE_INDEXES, WORKER_ACTIONS,
                          WORKER_TABLE_ACTIONS, asl,
                          put_events_entries, rendered)

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
API_KEY = "rk_" + "k" * 43
PARAMETERS = {
    "PublicBaseUrl": "https://approvals.example.com",
    "CognitoDomainPrefix": "ringi-moto",
    "MailFromAddress": "ringi@example.com",
    "MailIdentity": "example.com",
    "ApproverGroups": "release-approvers,finance",
    "RegistrationApiKey": API_KEY,
}
INPUT = {"change": {"service": "payments-api", "version": "v2.4.0", "environment": "production",
                    "summary": "Rolls out the settlement batch job.", "requestedBy": "ci@example.com"}}


class MotoSkipped(UserWarning):
    """Shown in pytest's warnings summary: which resources this run could not deploy (a limit, not a failure)."""


def without_unsupported(template: dict) -> tuple[dict, dict]:
    """The template minus the resources moto cannot create, references to them replaced by placeholders
    (ARNs of the right service and resource type, so moto's EventBridge accepts the rule target).
    Returns (template, {logical id: type} removed)."""
    skipped = {k: v["Type"] for k, v in template["Resources"].items() if resource_class_from_type(v["Type"]) is None}

    def placeholder(logical_id, attr=None):
        _, service, kind = skipped[logical_id].split("::")
        kind = re.sub(r"(?<!^)(?=[A-Z])", "-", kind).lower()  # ApiDestination -> api-destination
        arn = f"arn:aws:{service.lower()}:{REGION}:{ACCOUNT}:{kind}/{logical_id}"
        return f"{arn}/{attr}" if attr else f"{logical_id}-placeholder-id"

    def walk(node):
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if node.keys() == {"Ref"} and node["Ref"] in skipped:
            return placeholder(node["Ref"])
        if node.keys() == {"Fn::GetAtt"} and node["Fn::GetAtt"][0] in skipped:
            return placeholder(*node["Fn::GetAtt"])
        if node.keys() == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            return {"Fn::Sub": re.sub(r"\$\{(\w+)(?:\.(\w+))?\}",
                                      lambda m: placeholder(m[1], m[2]) if m[1] in skipped else m[0], node["Fn::Sub"])}
        return {k: walk(v) for k, v in node.items()}

    for logical_id in skipped:
        del template["Resources"][logical_id]
    for spec in template["Resources"].values():
        deps = spec.pop("DependsOn", [])
        if deps := [d for d in ([deps] if isinstance(deps, str) else deps) if d not in skipped]:
            spec["DependsOn"] = deps
    return walk(template), skipped


@pytest.fixture(scope="module")
def aws():
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith(("AWS_", "MOTO_"))]:
            mp.delenv(name)  # a real profile or endpoint must not leak in
        mp.setenv("AWS_DEFAULT_REGION", REGION)
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            yield lambda service: boto3.client(service, region_name=REGION)


def create_stack(aws, name: str, **overrides) -> dict:
    template, skipped = without_unsupported(rendered())
    cf = aws("cloudformation")
    params = {**PARAMETERS, **overrides}
    cf.create_stack(StackName=name, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"],
                    Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in params.items()])
    stack = cf.describe_stacks(StackName=name)["Stacks"][0]
    # moto also lists each resource a false condition left out, as an entry without a logical id.
    resources = {r["LogicalResourceId"]: r for r in cf.describe_stack_resources(StackName=name)["StackResources"]
                 if "LogicalResourceId" in r}
    return {"stack": stack, "skipped": skipped, "resources": resources,
            "outputs": {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}}


@pytest.fixture(scope="module")
def stack(aws):
    return create_stack(aws, "ringi")


def test_stack_reaches_create_complete(stack):
    skipped = stack["skipped"]
    warnings.warn(MotoSkipped(
        f"moto's CloudFormation cannot create {len(skipped)} of the template's resources, checked statically "
        "instead: " + ", ".join(f"{k} ({v})" for k, v in sorted(skipped.items())) + ". Created: "
        + ", ".join(f"{k} ({v['ResourceType']})" for k, v in sorted(stack["resources"].items()))))
    assert stack["stack"]["StackStatus"] == "CREATE_COMPLETE"
    assert set(skipped.values()) == MOTO_SKIPPED_TYPES, "moto changed: update MOTO_SKIPPED_TYPES and the README"
    wanted = {k for k, v in rendered()["Resources"].items()
              if v.get("Condition") not in ("WithClientCredentials", "WithDynamoDb", "WithDynamoDbStateMachine",
                                            "WithAccessKey")}
    assert "WorkerRole" in wanted and "WorkerUser" not in stack["resources"], "federation: a role, no user"
    assert set(stack["resources"]) == wanted - set(skipped)


def test_outputs(stack):
    out = stack["outputs"]
    # Their Conditions (client credentials, STORAGE=dynamodb) are false.
    assert set(out) == set(OUTPUTS) - {"RegisterClientIds", "ApprovalsTableName", "DynamoDbStateMachineArn",
                                       "WorkerUserName"}
    assert out["StateMachineArn"] == f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:ringi-example-approval"
    assert out["RegisterScope"] == "ringi/approvals.write"
    assert out["EventBusName"] == "default" and out["AwsRegion"] == REGION and out["MailFrom"] == "ringi@example.com"
    assert out["CognitoDomain"] == f"https://ringi-moto.auth.{REGION}.amazoncognito.com"
    assert out["DeadLetterQueueUrl"] == stack["resources"]["RegistrationDeadLetterQueue"]["PhysicalResourceId"]
    assert out["WorkerRoleArn"] == f"arn:aws:iam::{ACCOUNT}:role/ringi-worker"


def test_api_key_is_not_readable_from_the_stack(aws, stack):
    cf = aws("cloudformation")
    described = cf.describe_stacks(StackName="ringi")["Stacks"][0]
    # CloudFormation shows a NoEcho parameter as ****. moto 5.2.5 does not (parameter_list compares the value,
    # not the key, with its NoEcho list), so that one entry is left out here; nothing else may hold the key.
    others = {**described, "Parameters": [p for p in described["Parameters"]
                                          if p["ParameterKey"] != "RegistrationApiKey"]}
    assert API_KEY not in json.dumps(others, default=str)
    assert API_KEY not in json.dumps(stack["outputs"])
    assert API_KEY not in cf.get_template(StackName="ringi")["TemplateBody"]


def role_statements(iam, role: str) -> list[dict]:
    found = []
    for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        found += (json.loads(document) if isinstance(document, str) else document)["Statement"]
    return found


def test_worker_role_trusts_worker_tokens_and_may_only_mail(aws, stack):
    iam = aws("iam")
    role = iam.get_role(RoleName="ringi-worker")["Role"]
    assert role["Arn"] == stack["outputs"]["WorkerRoleArn"]
    trust = role["AssumeRolePolicyDocument"]
    trust = json.loads(trust) if isinstance(trust, str) else trust
    [statement] = trust["Statement"]
    assert statement["Principal"] == {"Federated": f"arn:aws:iam::{ACCOUNT}:oidc-provider/approvals.example.com"}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {"StringEquals": {"approvals.example.com:aud": "sts.amazonaws.com",
                                                       "approvals.example.com:sub": f"ringi-worker:{ACCOUNT}"}}
    assert iam.list_attached_role_policies(RoleName="ringi-worker")["AttachedPolicies"] == []
    statements = role_statements(iam, "ringi-worker")
    assert {s["Sid"]: s["Resource"] for s in statements} == {
        "MailApprovers": f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/example.com"}
    assert [s["Action"] for s in statements] == ["ses:SendEmail"]
    assert [u for u in iam.list_users()["Users"] if u["Path"] == "/ringi/"] == [], "no user, so no access key"


def test_worker_user_has_exactly_the_template_policy(aws):
    keyed = create_stack(aws, "ringi-keyed", AppName="ringikeyed", WorkerCredentials="access-key")
    assert keyed["stack"]["StackStatus"] == "CREATE_COMPLETE"
    assert "WorkerRoleArn" not in keyed["outputs"] and "WorkerRole" not in keyed["resources"]
    iam, user = aws("iam"), keyed["outputs"]["WorkerUserName"]
    assert user == keyed["resources"]["WorkerUser"]["PhysicalResourceId"]
    assert iam.list_attached_user_policies(UserName=user)["AttachedPolicies"] == []
    assert iam.list_groups_for_user(UserName=user)["Groups"] == []
    assert iam.list_access_keys(UserName=user)["AccessKeyMetadata"] == []  # created by the deploy script
    document = {"Statement": []}
    for name in iam.list_user_policies(UserName=user)["PolicyNames"]:
        part = iam.get_user_policy(UserName=user, PolicyName=name)["PolicyDocument"]
        document["Statement"] += (json.loads(part) if isinstance(part, str) else part)["Statement"]
    actions = {a for s in document["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str)
                                                            else s["Action"])}
    assert actions == WORKER_ACTIONS
    resources = {s["Sid"]: s["Resource"] for s in document["Statement"]}
    assert resources == {
        "AnswerApprovalTasks": f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:ringi-*",
        "MailApprovers": f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/example.com",
    }


def test_rule_as_created(aws, stack):
    events = aws("events")
    rule = events.describe_rule(Name=stack["resources"]["RegistrationRule"]["PhysicalResourceId"])
    [entry] = put_events_entries(asl())
    assert json.loads(rule["EventPattern"]) == {"source": [entry["Source"]], "detail-type": [entry["DetailType"]]}
    assert rule["EventBusName"] == "default" and rule["State"] == "ENABLED"
    [target] = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
    dlq_arn = aws("sqs").get_queue_attributes(QueueUrl=stack["outputs"]["DeadLetterQueueUrl"],
                                              AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert target["DeadLetterConfig"] == {"Arn": dlq_arn}
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
    assert ":api-destination/" in target["Arn"]  # the placeholder: moto has no API destination model


def created_state_machine(stack):
    """The state machine as moto's CloudFormation created it (in the backend the API does not serve)."""
    from moto.stepfunctions.models import stepfunctions_backends
    return stepfunctions_backends[ACCOUNT][REGION].describe_state_machine(stack["outputs"]["StateMachineArn"])


def executable_state_machine(aws, stack) -> str:
    """Copy the stack's state machine into moto's executing Step Functions backend (once); its ARN."""
    created = created_state_machine(stack)
    sfn = aws("stepfunctions")
    try:
        return sfn.describe_state_machine(stateMachineArn=created.arn)["stateMachineArn"]
    except sfn.exceptions.StateMachineDoesNotExist:
        return sfn.create_state_machine(name=created.name, definition=created.definition,
                                        roleArn=created.roleArn)["stateMachineArn"]


def test_deployed_definition_is_the_docs_file(stack):
    created = created_state_machine(stack)
    assert json.loads(created.definition) == json.loads(ASL.read_text(encoding="utf-8"))
    assert created.roleArn.split("/")[-1] == stack["resources"]["ExampleStateMachineRole"]["PhysicalResourceId"]


@pytest.fixture
def probe_queue(aws, stack):
    """A test-only second target on the stack's rule: what the rule matched, as the API destination gets it."""
    sqs, events = aws("sqs"), aws("events")
    url = sqs.create_queue(QueueName="ringi-probe")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = stack["resources"]["RegistrationRule"]["PhysicalResourceId"]
    events.put_targets(Rule=rule, Targets=[{"Id": "probe", "Arn": arn}])
    yield url
    events.remove_targets(Rule=rule, Ids=["probe"])
    sqs.delete_queue(QueueUrl=url)


def wait_for(check, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s")


def test_example_workflow_waits_for_the_approval_then_resumes(aws, stack, probe_queue):
    """Up to the approval wait, then the worker's SendTaskSuccess. (The reject path needs moto's SendTaskFailure
    to keep `cause`, which stock moto drops; tests/e2e runs it with standins/moto_server.py's fix.)"""
    sfn, sqs = aws("stepfunctions"), aws("sqs")
    arn = executable_state_machine(aws, stack)
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(INPUT))["executionArn"]

    # Paused on RequestApproval, and the stack's rule matched the event it put.
    messages = wait_for(lambda: sqs.receive_message(QueueUrl=probe_queue, WaitTimeSeconds=1).get("Messages"))
    event = json.loads(messages[0]["Body"])
    [entry] = put_events_entries(asl())
    assert (event["source"], event["detail-type"]) == (entry["Source"], entry["DetailType"])
    detail = event["detail"]
    assert detail["taskToken"] and detail["title"] == "Deploy payments-api v2.4.0 to production"
    assert detail["context"] == {"executionArn": execution, "stateName": "RequestApproval"}
    assert arn in event["resources"]
    assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
    # moto writes TaskSubmitted once the put returned, which may be after the event reached the queue.
    def paused():
        history = [e["type"] for e in sfn.get_execution_history(executionArn=execution)["events"]]
        return history if "TaskSubmitted" in history else None
    history = wait_for(paused)
    assert history[-2:] == ["TaskStarted", "TaskSubmitted"], history

    # The worker's answer to an approval; the execution resumes with the decision next to its input.
    sfn.send_task_success(taskToken=detail["taskToken"], output=json.dumps({"decision": "approved"}))
    done = wait_for(lambda: (d := sfn.describe_execution(executionArn=execution))["status"] != "RUNNING" and d)
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"]) == {**INPUT, "approval": {"decision": "approved"}}


def test_optional_parts_follow_their_parameters(aws):
    other = create_stack(aws, "ringi-options", EnableClientCredentials="true", CreateExampleStateMachine="false",
                         EventBusName="default", StateMachineNamePrefix="ops-", AppName="ringiopts",
                         WorkerCredentials="access-key")
    assert other["stack"]["StackStatus"] == "CREATE_COMPLETE"
    assert set(other["outputs"]) == set(OUTPUTS) - {"StateMachineArn", "ApprovalsTableName", "DynamoDbStateMachineArn",
                                                    "WorkerRoleArn"}
    assert other["outputs"]["RegisterClientIds"] == "RegisterClient-placeholder-id"  # Cognito is skipped
    assert "ExampleStateMachine" not in other["resources"] and "ExampleStateMachineRole" not in other["resources"]
    iam, user = aws("iam"), other["outputs"]["WorkerUserName"]
    documents = [iam.get_user_policy(UserName=user, PolicyName=n)["PolicyDocument"]
                 for n in iam.list_user_policies(UserName=user)["PolicyNames"]]
    assert "stateMachine:ops-*" in json.dumps(documents)
    assert {"RegisterClient", "RegisterResourceServer"} <= set(other["skipped"])


def test_dynamodb_storage_creates_the_table_the_policy_and_a_workflow_that_writes_its_item(aws):
    """ApprovalsStorage=dynamodb in moto: the table as the worker expects it, the worker's policy on it, and the
    state machine that writes the seed's item itself (putItem.waitForTaskToken) and resumes on the callback."""
    ddb = create_stack(aws, "ringi-ddb", ApprovalsStorage="dynamodb", AppName="ringiddb", StateMachineNamePrefix="ddb-")
    assert ddb["stack"]["StackStatus"] == "CREATE_COMPLETE"
    out = ddb["outputs"]
    assert {"ApprovalsTableName", "DynamoDbStateMachineArn"} <= set(out)
    dynamodb, table = aws("dynamodb"), out["ApprovalsTableName"]
    assert table == "ringiddb-approvals"
    described = dynamodb.describe_table(TableName=table)["Table"]
    assert described["KeySchema"] == [{"AttributeName": "approvalId", "KeyType": "HASH"}]
    indexes = {g["IndexName"]: g for g in described["GlobalSecondaryIndexes"]}
    assert set(indexes) == set(TABLE_INDEXES)
    gsi = indexes["byApprover"]
    assert gsi["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert gsi["KeySchema"] == [{"AttributeName": "approverUserId", "KeyType": "HASH"}]
    for name, hash_key in EVENT_INDEXES.items():
        assert indexes[name]["KeySchema"] == [{"AttributeName": hash_key, "KeyType": "HASH"},
                                              {"AttributeName": "eventSort", "KeyType": "RANGE"}]
        assert indexes[name]["Projection"] == {"ProjectionType": "ALL"}

    iam, role = aws("iam"), out["WorkerRoleArn"].rsplit("/", 1)[1]
    statements = role_statements(iam, role)
    [items] = [s for s in statements if s.get("Sid") == "ApprovalsTableItems"]
    assert set(items["Action"]) == WORKER_TABLE_ACTIONS
    assert items["Resource"] == [described["TableArn"]] + [f"{described['TableArn']}/index/{i}" for i in TABLE_INDEXES]
    actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == {"ses:SendEmail"} | WORKER_TABLE_ACTIONS | {"dynamodb:DeleteItem"}
    [clear] = [s for s in statements if s.get("Sid") == "ClearOutOfOffice"]
    assert clear["Resource"] == described["TableArn"], "deleting: out-of-office items of the table only"
    assert clear["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["ooo#*"]}}

    # The state machine, copied into moto's executing backend (as executable_state_machine does).
    from moto.stepfunctions.models import stepfunctions_backends
    created = stepfunctions_backends[ACCOUNT][REGION].describe_state_machine(out["DynamoDbStateMachineArn"])
    assert created.name == "ddb-example-approval-dynamodb"
    sfn = aws("stepfunctions")
    arn = sfn.create_state_machine(name=created.name + "-run", definition=created.definition,
                                   roleArn=created.roleArn)["stateMachineArn"]
    expires_at = str(int(time.time()) + 3600)
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(
        {"approvalId": "seed0123456789abcdef", "approverUserId": "user-1", "expiresAt": expires_at}))["executionArn"]
    key = {"approvalId": {"S": "seed0123456789abcdef"}}
    item = wait_for(lambda: dynamodb.get_item(TableName=table, Key=key).get("Item"))
    assert set(item) == {"approvalId", "approverUserId", "taskToken", "expiresAt"}
    assert item["expiresAt"] == {"N": expires_at} and item["approverUserId"] == {"S": "user-1"}
    [entry] = dynamodb.query(TableName=table, IndexName="byApprover", KeyConditionExpression="approverUserId = :u",
                             ExpressionAttributeValues={":u": {"S": "user-1"}})["Items"]
    assert entry["approvalId"] == key["approvalId"], "in the approver's index range as written"
    assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
    sfn.send_task_success(taskToken=item["taskToken"]["S"], output=json.dumps({"decision": "approved"}))
    done = wait_for(lambda: (d := sfn.describe_execution(executionArn=execution))["status"] != "RUNNING" and d)
    assert done["status"] == "SUCCEEDED"

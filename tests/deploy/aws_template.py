"""Shared by the deploy/aws template tests: render, decode, lint, and evaluate the few intrinsics the template uses.

The template is checked as CloudFormation receives it: the text deploy/aws/render.py produces.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy/aws/ringi.yaml"
RENDER = ROOT / "deploy/aws/render.py"
README = ROOT / "deploy/aws/README.md"
ASL = ROOT / "docs/workflow/approval.jsonpath.asl.json"

# The contract with deploy/deploy.py (names and meaning must not drift).
PARAMETERS = ("AppName", "PublicBaseUrl", "CognitoDomainPrefix", "MailFromAddress", "MailIdentity", "ApproverGroups",
              "IdentityProviders", "StateMachineNamePrefix", "EventBusName", "ApiDestinationRateLimit",
              "EnableClientCredentials", "CreateExampleStateMachine", "ApprovalsStorage", "DeadLetterQueueReaders",
              "WorkerCredentials",
           "RegistrationApiKey")
OUTPUTS = ("UserPoolId", "CognitoIssuer", "CognitoDomain", "SpaClientId", "RegisterClientIds", "RegisterScope",
           "WorkerUserName", "StateMachineArn", "EventBusName", "ConnectionArn", "ApiDestinationArn",
           "DeadLetterQueueUrl", "AwsRegion", "MailFrom", "ApprovalsTableName", "DynamoDbStateMachineArn",
           "FederationIssuerHost", "FederationAudience", "WorkerRoleArn")
# What the worker calls, nothing more (it never sends a task heartbeat, nor deletes an item).
WORKER_ACTIONS = {"states:SendTaskSuccess", "states:SendTaskFailure", "ses:SendEmail"}
# With ApprovalsStorage=dynamodb, on the approvals table and its indexes only (no table management).
WORKER_TABLE_ACTIONS = {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
                        "dynamodb:ConditionCheckItem", "dynamodb:Query", "dynamodb:Scan"}
TABLE_INDEXES = ("byApprover", "eventsByApproval", "eventsByMonth")
# The audit trail's indexes: hash key, sort key (the event's position), all attributes (the reads need no item).
EVENT_INDEXES = {"eventsByApproval": "eventOf", "eventsByMonth": "eventMonth"}

# Valid values for the parameters without a default (what a deploy passes), plus pseudo parameters.
REQUIRED_VALUES = {
    "PublicBaseUrl": "https://approvals.example.com",
    "CognitoDomainPrefix": "ringi-example",
    "MailFromAddress": "ringi@example.com",
    "MailIdentity": "example.com",
    "RegistrationApiKey": "rk_" + "x" * 43,
}
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "ap-northeast-1", "AWS::AccountId": "123456789012",
          "AWS::StackName": "ringi", "AWS::URLSuffix": "amazonaws.com"}

# Resource types moto 5.2.5's CloudFormation cannot create (documented in deploy/aws/README.md).
MOTO_SKIPPED_TYPES = {
    "AWS::Cognito::UserPool", "AWS::Cognito::UserPoolDomain", "AWS::Cognito::UserPoolClient",
    "AWS::Cognito::UserPoolGroup", "AWS::Cognito::UserPoolResourceServer",
    "AWS::Events::Connection", "AWS::Events::ApiDestination", "AWS::SQS::QueuePolicy",
}


def load_renderer():
    """deploy/aws/render.py as a module (it is a script, not a package member)."""
    spec = importlib.util.spec_from_file_location("ringi_render", RENDER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def rendered_text() -> str:
    return load_renderer().render(ROOT)


def decode(text: str) -> dict:
    """A template's YAML as plain data, short-form tags (!Sub, !Ref, ...) expanded: cfn-lint's own decoder."""
    from cfnlint.decode import decode_str
    template, errors = decode_str(text)
    assert not errors, [str(e) for e in errors]
    return json.loads(json.dumps(template))  # cfn-lint's node classes -> dict/list/str


@functools.cache
def _rendered() -> str:
    return json.dumps(decode(rendered_text()))


def rendered() -> dict:
    """A fresh copy of the rendered template (callers may modify it)."""
    return json.loads(_rendered())


def lint(text: str) -> list[str]:
    """cfn-lint errors and warnings (its default rule set) in the regions ringi is most likely deployed to."""
    from cfnlint.api import lint as cfn_lint
    matches = cfn_lint(text, regions=["us-east-1", "eu-west-1", "ap-northeast-1"])
    return [f"{m.rule.id} line {m.linenumber}: {m.message}" for m in matches]


def asl() -> dict:
    return json.loads(ASL.read_text(encoding="utf-8"))


def put_events_entries(node) -> list[dict]:
    """Every entry of every events:putEvents Task in an ASL document (JSONPath Parameters / JSONata Arguments)."""
    found = []
    if isinstance(node, dict):
        if node.get("Type") == "Task" and str(node.get("Resource", "")).startswith("arn:aws:states:::events:putEvents"):
            for key in ("Parameters", "Arguments"):
                found += (node.get(key) or {}).get("Entries", [])
        for value in node.values():
            found += put_events_entries(value)
    elif isinstance(node, list):
        for value in node:
            found += put_events_entries(value)
    return found


# ---------------------------------------------------------------------------------------------------- intrinsics
def parameter_values(template: dict, **overrides) -> dict:
    """Parameter values as CloudFormation resolves them: defaults, then REQUIRED_VALUES, then overrides;
    CommaDelimitedList split and trimmed. Pseudo parameters (PSEUDO, or overridden: **{"AWS::Region": ...})
    are included."""
    values = {k: overrides.get(k, v) for k, v in PSEUDO.items()}
    for name, spec in template["Parameters"].items():
        value = overrides.get(name, REQUIRED_VALUES.get(name, spec.get("Default")))
        assert value is not None, f"no value for parameter {name}"
        value = str(value)
        values[name] = [v.strip() for v in value.split(",")] if spec["Type"] == "CommaDelimitedList" else value
    return values


def evaluate(node, template: dict, params: dict):
    """Resolve the intrinsics this template uses, for parameter_values(). Resources are not evaluated: a Ref or
    GetAtt of a resource stays as it is (the assertions compare them structurally); Fn::Sub of one raises."""
    def ev(n):
        return evaluate(n, template, params)

    if isinstance(node, list):
        # An Fn::If branch of Ref AWS::NoValue drops the list entry, as CloudFormation does.
        return [v for v in (ev(v) for v in node) if v != {"Ref": "AWS::NoValue"}]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref" and arg in params:
            return params[arg]
        if fn == "Fn::Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], {k: ev(v) for k, v in arg[1].items()})
            return substitute(text, {**params, **extra}, set(template.get("Resources", {})))
        if fn == "Fn::Join":
            return arg[0].join(ev(arg[1]))
        if fn == "Fn::Split":
            return ev(arg[1]).split(arg[0])
        if fn == "Fn::Select":
            return ev(arg[1])[int(arg[0])]
        if fn == "Fn::Equals":
            return ev(arg[0]) == ev(arg[1])
        if fn == "Fn::Not":
            return not ev(arg[0])
        if fn == "Fn::And":
            return all(ev(a) for a in arg)
        if fn == "Fn::Or":
            return any(ev(a) for a in arg)
        if fn == "Condition":
            return condition(arg, template, params)
        if fn == "Fn::If":
            return ev(arg[1]) if condition(arg[0], template, params) else ev(arg[2])
    return {k: ev(v) for k, v in node.items()}


def condition(name: str, template: dict, params: dict) -> bool:
    return bool(evaluate(template["Conditions"][name], template, params))


def substitute(text: str, values: dict, resources: set = frozenset()) -> str:
    """Fn::Sub's string form: ${Name} -> values[Name], ${!Literal} -> ${Literal}. A reference to one of
    `resources` (or its attribute) stays as it is, for the assertions to compare; any other unknown name is an
    error."""
    def one(m):
        if m[1] == "!":
            return "${" + m[2] + "}"
        if m[2].split(".")[0] in resources:
            return m[0]
        if m[2] not in values:
            raise KeyError(f"Fn::Sub variable ${{{m[2]}}} is not a parameter")
        return str(values[m[2]])
    return re.sub(r"\$\{(!?)([^}]*)\}", one, text)


def references(node) -> set[str]:
    """Every name a fragment refers to: Ref targets, GetAtt resources, Fn::Sub variables (attributes dropped)."""
    found = set()
    if isinstance(node, dict):
        for fn, arg in node.items():
            if fn == "Ref":
                found.add(arg)
            elif fn == "Fn::GetAtt":
                found.add(arg[0] if isinstance(arg, list) else arg.split(".")[0])
            elif fn == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                found |= {v.split(".")[0] for v in re.findall(r"\$\{([^!}][^}]*)\}", text)}
                if not isinstance(arg, str):
                    found |= references(arg[1])
            else:
                found |= references(arg)
    elif isinstance(node, list):
        for value in node:
            found |= references(value)
    return found

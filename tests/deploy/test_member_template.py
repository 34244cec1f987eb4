"""deploy/aws/member.yaml without AWS: cfn-lint, and what a member account grants ringi — a role only ringi's
issuer can assume, with its audience and this account's subject, allowed only the two callback actions on this
account's approval state machines in the listed regions. (moto 5.2.5's CloudFormation has no model of
AWS::IAM::OIDCProvider, so this template is checked statically; the e2e suite plays the provider's part.)

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_member_template.py
"""
import json

import pytest

from aws_template import ROOT, decode, evaluate, lint, parameter_values, substitute

MEMBER = ROOT / "deploy/aws/member.yaml"
HOST = "approvals.example.com"


@pytest.fixture(scope="module")
def template():
    return decode(MEMBER.read_text(encoding="utf-8"))


def values(template, **overrides):
    return parameter_values(template, IssuerHost=HOST, Regions="eu-west-1, us-east-1", **overrides)


def trust(template, params) -> dict:
    return json.loads(evaluate(template["Resources"]["CallbackRole"]["Properties"]["AssumeRolePolicyDocument"],
                               template, params))


def test_cfn_lint_is_clean():
    assert lint(MEMBER.read_text(encoding="utf-8")) == []


def test_the_provider_is_ringis_issuer_for_its_audience_and_optional(template):
    provider = template["Resources"]["OidcProvider"]
    assert provider["Condition"] == "CreateProvider"
    props = evaluate(provider["Properties"], template, values(template))
    assert props == {"Url": f"https://{HOST}", "ClientIdList": ["sts.amazonaws.com"]}
    # When this stack makes the provider the role refers to it (created after it); else to the account's own.
    arn_var = template["Resources"]["CallbackRole"]["Properties"]["AssumeRolePolicyDocument"]["Fn::Sub"][1]
    assert arn_var["ProviderArn"]["Fn::If"][:2] == ["CreateProvider", {"Ref": "OidcProvider"}]


def test_only_tokens_of_the_issuer_for_this_account_may_assume_the_role(template):
    params = values(template, CreateOidcProvider="false")
    [statement] = trust(template, params)["Statement"]
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"] == {"Federated": f"arn:aws:iam::123456789012:oidc-provider/{HOST}"}
    # The worker's tokens: aud its audience, sub naming the account (core::federation::subject).
    assert statement["Condition"] == {"StringEquals": {f"{HOST}:aud": "sts.amazonaws.com",
                                                       f"{HOST}:sub": "ringi-callback:123456789012"}}
    other = trust(template, values(template, CreateOidcProvider="false", **{"AWS::AccountId": "210987654321"}))
    assert other["Statement"][0]["Condition"]["StringEquals"][f"{HOST}:sub"] == "ringi-callback:210987654321"


def test_the_role_may_only_answer_approval_tasks_of_this_account_in_the_listed_regions(template):
    role = template["Resources"]["CallbackRole"]["Properties"]
    params = values(template)
    assert role["RoleName"] == {"Ref": "RoleName"} and params["RoleName"] == "ringi-callback"
    assert "ManagedPolicyArns" not in role
    [policy] = role["Policies"]
    [statement] = evaluate(policy["PolicyDocument"], template, params)["Statement"]
    assert statement["Effect"] == "Allow"
    assert set(statement["Action"]) == {"states:SendTaskSuccess", "states:SendTaskFailure"}
    assert statement["Resource"] == "arn:aws:states:*:123456789012:stateMachine:ringi-*"
    assert statement["Condition"] == {"StringEquals": {"aws:RequestedRegion": ["eu-west-1", "us-east-1"]}}
    assert template["Parameters"]["StateMachineNamePrefix"]["AllowedPattern"].startswith("^[A-Za-z0-9_-]{1,")


def test_the_output_is_the_accounts_aws_targets_entry(template):
    text, extra = template["Outputs"]["AwsTargetsEntry"]["Value"]["Fn::Sub"]
    params = values(template)
    role = "arn:aws:iam::123456789012:role/ringi-callback"
    entry = substitute(text, {**params, "Arn": role, "List": evaluate(extra["List"], template, params)})
    # What the worker's AWS_TARGETS takes (core::aws_target::AwsTargets::parse): account -> roleArn, regions.
    assert json.loads("{" + entry + "}") == {"123456789012": {"roleArn": role, "regions": ["eu-west-1", "us-east-1"]}}
    assert template["Outputs"]["RoleArn"]["Value"] == {"Fn::GetAtt": ["CallbackRole", "Arn"]}

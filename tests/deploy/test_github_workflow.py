"""deploy/github/deploy.yml, parsed: it authenticates to AWS with GitHub's OIDC token (no stored AWS key), knows
MEMBER_ACCOUNTS' profiles, and passes only the Cloudflare credentials as secrets.

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_github_workflow.py
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "deploy/github/deploy.yml"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def deploy_steps() -> list[dict]:
    return workflow()["jobs"]["deploy"]["steps"]


def test_aws_credentials_come_from_githubs_oidc_token():
    job = workflow()["jobs"]["deploy"]
    assert job["permissions"]["id-token"] == "write"
    [aws] = [s for s in job["steps"] if str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials@")]
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_DEPLOY_ROLE_ARN }}"
    assert not {"aws-access-key-id", "aws-secret-access-key", "aws-session-token"} & set(aws["with"])
    text = WORKFLOW.read_text(encoding="utf-8")
    # No AWS key stored as a secret anywhere: the only secrets are Cloudflare's and the chat channels.
    assert set(re.findall(r"secrets\.(\w+)", text)) == {"CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "CHAT_CHANNELS"}
    names = [s.get("name") or s.get("uses") for s in job["steps"]]
    assert names.index(aws["uses"]) < names.index("make deploy")


def profiles_step() -> str:
    [step] = [s for s in deploy_steps() if "AWS_MEMBER_ROLES" in s.get("env", {})]
    return step["run"]


def run_profiles(tmp_path: Path, settings: str, roles: str) -> subprocess.CompletedProcess:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy/ringi.env").write_text(settings)
    env = {**os.environ, "HOME": str(tmp_path), "AWS_MEMBER_ROLES": roles}
    return subprocess.run(["bash", "-e", "-c", profiles_step()], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=30)


def test_member_profiles_are_made_from_aws_member_roles(tmp_path):
    proc = run_profiles(tmp_path, "RINGI_NAME=ringi\nMEMBER_ACCOUNTS=111122223333:eu-west-1+us-east-1@team-a,"
                        "444455556666:us-east-1@team-b\n",
                        "team-a=arn:aws:iam::111122223333:role/ringi-deploy\n"
                        "team-b=arn:aws:iam::444455556666:role/ringi-deploy\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = (tmp_path / ".aws/config").read_text()
    assert "[profile team-a]\nrole_arn = arn:aws:iam::111122223333:role/ringi-deploy\n" \
           "credential_source = Environment\n" in config
    assert "[profile team-b]\nrole_arn = arn:aws:iam::444455556666:role/ringi-deploy\n" in config


def test_a_profile_the_settings_name_but_the_variable_lacks_stops_the_job(tmp_path):
    proc = run_profiles(tmp_path, "MEMBER_ACCOUNTS=111122223333:eu-west-1@team-a,444455556666:us-east-1@team-b\n",
                        "team-a=arn:aws:iam::111122223333:role/ringi-deploy\n")
    assert proc.returncode == 1 and "AWS_MEMBER_ROLES lacks team-b=ROLE_ARN" in proc.stdout


def test_no_member_accounts_need_no_roles(tmp_path):
    proc = run_profiles(tmp_path, "RINGI_NAME=ringi\n", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / ".aws/config").read_text() == ""

"""deploy/deploy.py's default, web-identity federation, against the aws / wrangler stand-ins: a member stack
(deploy/aws/member.yaml) in each account of MEMBER_ACCOUNTS with the credentials of its profile, AWS_TARGETS
from their roles, the signing key made once and carried on stdin only; the access-key fallback; the dry run.

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_deploy_federation.py
"""
from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives.asymmetric import ec
from deploy_harness import sha256

CENTRAL = "123456789012"  # the aws stand-in's own account
MEMBERS = "111122223333:eu-west-1+us-east-1@team-a,444455556666:us-east-1@team-b"
PROFILES = {"team-a": "111122223333", "team-b": "444455556666", "wrong": "999999999999"}


def with_profiles(d, profiles=PROFILES) -> None:
    """The AWS CLI profiles the deployer has, and whose account each one's credentials are."""
    d.state_path.write_text(json.dumps({"aws": {"profiles": profiles}}))


def deploys(d) -> list[dict]:
    return [c for c in d.calls() if c["program"] == "aws" and c["argv"][:2] == ["cloudformation", "deploy"]]


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def signing_keys_pushed(d) -> list[str]:
    return [json.loads(c["stdin"])["SIGNING_KEY"] for c in d.calls()
            if c["program"] == "wrangler" and c["argv"][:2] == ["secret", "bulk"]
            and "SIGNING_KEY" in json.loads(c["stdin"])]


def integer(b64: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)), "big")


def test_each_member_account_gets_its_stack_and_becomes_a_target(deployer):
    with_profiles(deployer)
    deployer.settings.update(MEMBER_ACCOUNTS=MEMBERS, STATE_MACHINE_NAME_PREFIX="wf-")
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    stacks = deployer.state()["aws"]["member_stacks"]
    # One stack per account, in its first region (IAM is global), made with that account's profile.
    assert sorted(stacks) == sorted(["111122223333/eu-west-1/ringi-member", "444455556666/us-east-1/ringi-member",
                                     f"{CENTRAL}/eu-central-1/ringi-member"])
    want = {"111122223333": "eu-west-1,us-east-1", "444455556666": "us-east-1", CENTRAL: "eu-central-1"}
    for key, stack in stacks.items():
        # What the central stack's FederationIssuerHost / FederationAudience outputs say.
        assert stack["Parameters"] == {"IssuerHost": "approvals.example.com", "Audience": "sts.amazonaws.com",
                                       "Regions": want[key.split("/")[0]], "RoleName": "ringi-callback",
                                       "StateMachineNamePrefix": "wf-"}
        assert stack["Template"].startswith('AWSTemplateFormatVersion') and "CallbackRole" in stack["Template"]
    assert {option(c["argv"], "--profile") for c in deploys(deployer)} == {"team-a", "team-b", None}
    assert all("CAPABILITY_NAMED_IAM" in c["argv"] for c in deploys(deployer))
    targets = json.loads(deployer.state()["cloudflare"]["workers"]["ringi"]["deployed"]["vars"]["AWS_TARGETS"])
    assert targets == {
        CENTRAL: {"roleArn": f"arn:aws:iam::{CENTRAL}:role/ringi-callback", "regions": ["eu-central-1"]},
        "111122223333": {"roleArn": "arn:aws:iam::111122223333:role/ringi-callback",
                         "regions": ["eu-west-1", "us-east-1"]},
        "444455556666": {"roleArn": "arn:aws:iam::444455556666:role/ringi-callback", "regions": ["us-east-1"]}}


def test_the_signing_key_is_made_once_and_travels_only_on_stdin(deployer):
    assert deployer.run().returncode == 0
    [jwk_text] = signing_keys_pushed(deployer)
    jwk = json.loads(jwk_text)
    assert (jwk["kty"], jwk["crv"]) == ("EC", "P-256") and jwk["kid"].startswith("ringi-")
    # A real P-256 key pair: the public point is the private scalar's (checked with a library deploy.py lacks).
    public = ec.derive_private_key(integer(jwk["d"]), ec.SECP256R1()).public_key().public_numbers()
    assert (public.x, public.y) == (integer(jwk["x"]), integer(jwk["y"]))
    assert deployer.state()["cloudflare"]["workers"]["ringi"]["secrets"]["SIGNING_KEY"] == sha256(jwk_text)
    # A second run keeps it (a new key is rotated in by hand, published first).
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    assert len(signing_keys_pushed(deployer)) == 1
    # Never on a command line, in the output or in a file of the checkout.
    for value in (jwk_text, jwk["d"]):
        assert not any(value in " ".join(c["argv"]) for c in deployer.calls())
        assert not any(value in out for out in deployer.outputs)
        assert not any(value in p.read_text(errors="replace") for p in deployer.root.rglob("*") if p.is_file())


def test_a_profile_of_another_account_stops_the_deploy(deployer):
    with_profiles(deployer)
    deployer.settings.update(MEMBER_ACCOUNTS="111122223333:eu-west-1@wrong")
    proc = deployer.run()
    assert proc.returncode == 1
    assert "step 3/11 (members) failed: member account 111122223333: the credentials of profile wrong belong to " \
           "account 999999999999" in proc.stderr
    assert "111122223333/eu-west-1/ringi-member" not in deployer.state()["aws"].get("member_stacks", {})


def test_dry_run_plans_the_member_stacks_and_the_key_and_changes_nothing(deployer):
    with_profiles(deployer)
    deployer.settings.update(MEMBER_ACCOUNTS=MEMBERS)
    proc = deployer.run("--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "would deploy deploy/aws/member.yaml as stack ringi-member in 111122223333 (eu-west-1, us-east-1, " \
           "profile team-a)" in proc.stdout
    assert f"would deploy deploy/aws/member.yaml as stack ringi-member in {CENTRAL} (eu-central-1)" in proc.stdout
    assert "generate ringi's signing key (EC P-256) and store it as SIGNING_KEY" in proc.stdout
    assert deploys(deployer) == [] and signing_keys_pushed(deployer) == []
    assert "member_stacks" not in deployer.state()["aws"]


def test_the_access_key_fallback_deploys_no_member_stack_and_no_federation(deployer):
    deployer.settings.update(CALLBACK_CREDENTIALS="access-key")
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    worker = deployer.state()["cloudflare"]["workers"]["ringi"]
    # The key ring signs receipts only: no AWS_TARGETS, so nothing is federated.
    assert deploys(deployer) == [] and "SIGNING_KEY" in worker["secrets"]
    assert "AWS_TARGETS" not in worker["deployed"]["vars"]
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(worker["secrets"])
    deployer.settings.update(MEMBER_ACCOUNTS="111122223333:eu-west-1")
    proc = deployer.run()
    assert proc.returncode == 2 and "MEMBER_ACCOUNTS needs CALLBACK_CREDENTIALS=federation" in proc.stderr


def test_from_the_access_key_to_federation_the_signing_key_stays(deployer):
    """From the access-key fallback to federation: the key ring made in access-key mode stays (receipts it signed
    stay verifiable, nothing new is generated), the access key leaves the worker before the stack update, and the
    worker federates once `wrangler deploy` gives it AWS_TARGETS."""
    deployer.settings.update(CALLBACK_CREDENTIALS="access-key")
    assert deployer.run().returncode == 0
    key = signing_keys_pushed(deployer)
    assert len(key) == 1
    before = len(deployer.calls())
    deployer.settings.update(CALLBACK_CREDENTIALS="federation")
    proc = deployer.run()
    assert proc.returncode == 0, proc.stderr
    later = deployer.calls()[before:]
    assert not any(c["program"] == "wrangler" and c["argv"][:2] == ["secret", "bulk"]
                   and "SIGNING_KEY" in json.loads(c["stdin"]) for c in later), "the key is not replaced"
    removed = [i for i, c in enumerate(later) if c["program"] == "wrangler" and c["argv"][:2] == ["secret", "delete"]]
    deployed = next(i for i, c in enumerate(later) if c["program"] == "wrangler" and c["argv"][0] == "deploy")
    assert removed and max(removed) < deployed
    worker = deployer.state()["cloudflare"]["workers"]["ringi"]
    assert "SIGNING_KEY" in worker["secrets"] and not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} & set(worker["secrets"])
    assert CENTRAL in json.loads(worker["deployed"]["vars"]["AWS_TARGETS"])


def test_the_vapid_key_is_its_own_made_once_and_travels_only_on_stdin(deployer):
    """Web Push's key: generated once beside the signing key (a new one would unsubscribe every device), a real
    P-256 key pair of its own, only ever on `secret bulk`'s stdin."""
    assert deployer.run().returncode == 0
    bulk = [json.loads(c["stdin"]) for c in deployer.calls()
            if c["program"] == "wrangler" and c["argv"][:2] == ["secret", "bulk"] and "VAPID_KEY" in json.loads(c["stdin"])]
    [secrets] = bulk
    jwk = json.loads(secrets["VAPID_KEY"])
    assert (jwk["kty"], jwk["crv"]) == ("EC", "P-256") and jwk["kid"].startswith("ringi-vapid-")
    public = ec.derive_private_key(integer(jwk["d"]), ec.SECP256R1()).public_key().public_numbers()
    assert (public.x, public.y) == (integer(jwk["x"]), integer(jwk["y"]))
    assert jwk["d"] != json.loads(secrets["SIGNING_KEY"])["d"], "not the key ring's key"
    assert deployer.run().returncode == 0
    assert len([c for c in deployer.calls() if c["program"] == "wrangler" and c["argv"][:2] == ["secret", "bulk"]
                and "VAPID_KEY" in json.loads(c["stdin"])]) == 1, "made once"
    assert not any(jwk["d"] in " ".join(c["argv"]) for c in deployer.calls())
    assert not any(jwk["d"] in out for out in deployer.outputs)

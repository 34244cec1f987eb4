#!/usr/bin/env python3
"""`make demo`: starts another execution of the demo workflow on a running `make dev` stack (settings from
.ringi/dev.env), then says where the mail and the approval are. Optional: --version v3.1.0, --account member (the
member account's workflow, in its region)."""
import argparse
import json
import sys
import time

from dev import read_env
from ringi_stack import ROOT, demo_input, moto_client

DEV_ENV = ROOT / ".ringi" / "dev.env"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", help="the version the demo change deploys (default: a random one)")
    ap.add_argument("--account", choices=("home", "member"), default="home",
                    help="whose workflow: ringi's home account (default) or the member account")
    args = ap.parse_args()
    if not DEV_ENV.exists():
        print("ringi: no running `make dev` stack (.ringi/dev.env is missing): start `make dev` first", file=sys.stderr)
        return 1
    env = read_env(DEV_ENV.read_text())
    member = args.account == "member"
    sfn = moto_client(env["RINGI_MOTO_URL"], "stepfunctions", env["RINGI_MEMBER_REGION" if member else "RINGI_AWS_REGION"],
                      account=env["RINGI_MEMBER_ACCOUNT"] if member else None, key=env["RINGI_AWS_ADMIN_KEY"])
    body = demo_input(args.version)
    machine = env["RINGI_MEMBER_STATE_MACHINE_ARN" if member else "RINGI_DEMO_STATE_MACHINE_ARN"]
    try:
        arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps(body))["executionArn"]
    except Exception as e:
        print(f"ringi: could not start the demo workflow ({e}); is `make dev` still running?", file=sys.stderr)
        return 1
    print(f"started  {arn}\n         {body['change']['service']} {body['change']['version']} → {body['change']['environment']}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # paused on RequestApproval = the event is on its way to ringi
        events = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=5)["events"]
        if any(e["type"] in ("TaskSubmitted", "ExecutionFailed") for e in events):
            break
        time.sleep(0.2)
    print(f"mailbox  {env['RINGI_MAILBOX_URL']}/   (the mail with the link to the approval)")
    print(f"app      {env['RINGI_APP_URL']}/   sign in as alice or carol (password Passw0rd!) to decide")
    return 0


if __name__ == "__main__":
    sys.exit(main())

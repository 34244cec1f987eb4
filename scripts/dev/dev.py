#!/usr/bin/env python3
"""`make dev`: the whole ringi system on 127.0.0.1 through the same launcher the tests use, with the demo
(EventBridge relay, mailbox page, chat stand-in, demo workflow), federated as deployed by default: the worker holds
no AWS key and answers workflows in two accounts and regions (moto's), each through its own role. Starts one demo
execution in each account so the mailbox has two mails. Ctrl-C stops every process it started.

While it runs, an edit is rebuilt and reaches the browser without a restart: a watcher rebuilds the SPA or the
worker when a file that build is made from changes (`make spa` / `make worker`, which skip what is unchanged), wrangler
reloads the worker and its assets, and every open page reloads itself once the worker runs the new build
(`DEV_RELOAD`, a dev-only switch the worker refuses off loopback)."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from ringi_stack import (ADMIN_KEY, DEMO_APPROVERS, HOME_ACCOUNT, MEMBER_ACCOUNT, MEMBER_REGION, REGION,
                         ROOT, Ports, Stack, StackError, fresh_state)

DEV_ENV = ROOT / ".ringi" / "dev.env"

sys.path.insert(0, str(ROOT / "scripts" / "build"))
import uptodate  # noqa: E402  (scripts/build is not a package)


class Watcher:
    """Which builds an edit touched: the files each build is made from (uptodate.py's inputs) by name, time and
    size, polled. Cheap enough to run every second (git lists the files; nothing is read)."""

    def __init__(self, builds=tuple(uptodate.BUILDS)):
        self.builds = builds
        self.seen = {b: self.signature(b) for b in builds}

    @staticmethod
    def signature(build: str) -> frozenset:
        out = set()
        for f in uptodate.inputs(build):
            try:
                st = (ROOT / f).stat()
                out.add((f, st.st_mtime_ns, st.st_size))
            except FileNotFoundError:
                out.add((f, None, None))
        return frozenset(out)

    def changed(self) -> list:
        """The builds whose files changed since the last call (after a short settle: an editor's save is often
        several writes)."""
        first = [b for b in self.builds if self.signature(b) != self.seen[b]]
        if not first:
            return []
        time.sleep(0.3)
        for b in first:
            self.seen[b] = self.signature(b)
        return first


def rebuild(build: str, log_dir) -> bool:
    """`make <build>` (skipped by make when the inputs are as built), its output to a log; on failure the last
    lines of it, and the running system stays as it was."""
    log = log_dir / f"build-{build}.log"
    print(f"ringi: {build} changed, rebuilding…", flush=True)
    t0 = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(["make", "--no-print-directory", build], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-25:]
        print(f"ringi: {build} build failed (still running the previous one); {log}:\n  " + "\n  ".join(tail),
              file=sys.stderr, flush=True)
        return False
    # (The recipe itself is echoed too: only a line that starts with the message counts.)
    if any(line.startswith(f"{build}: unchanged since") for line in log.read_text(errors="replace").splitlines()):
        print(f"ringi: {build}: the same inputs as the running build (nothing to do)", flush=True)
    else:
        print(f"ringi: {build} rebuilt in {time.monotonic() - t0:.0f}s; open pages reload", flush=True)
    return True


def format_env(env: dict) -> str:
    """`KEY='value'` lines: valid for `source` in a shell and for dotenv readers alike. Single quotes keep
    every character literal in both; values therefore may not contain a single quote or a line break."""
    lines = []
    for k, v in env.items():
        v = str(v)
        if not k.isidentifier() or "'" in v or "\n" in v or "\r" in v:
            raise ValueError(f"{k}: cannot be written as a quoted env line")
        lines.append(f"{k}='{v}'\n")
    return "".join(lines)


def read_env(text: str) -> dict:
    """The inverse of format_env (also reads unquoted `KEY=value` lines)."""
    env = {}
    for line in text.splitlines():
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        k, v = line.split("=", 1)
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1]
        env[k.strip()] = v
    return env


def users() -> list:
    return json.loads((ROOT / "standins/oidc/users.json").read_text())


def demo_approvers() -> str:
    """Who may decide the demo workflow's approvals (DEMO_APPROVERS against the demo users)."""
    who = []
    for u in users():
        ways = [f"email {p['email']}" for p in DEMO_APPROVERS if p.get("email") == u["email"]]
        ways += [f"group {p['group']}" for p in DEMO_APPROVERS if p.get("group") in (u.get("groups") or [])]
        who.append(f"{u['username']} ({', '.join(ways)})" if ways else None)
    others = [u["username"] for u in users() if not any(p.get("email") == u["email"] or p.get("group") in (u.get("groups") or [])
                                                       for p in DEMO_APPROVERS)]
    return "; ".join(w for w in who if w) + (f"; not {', '.join(others)}" if others else "")


def subscribe_demo_devices(stack: Stack) -> None:
    """One test device per demo user at the push stand-in, stored through the API as the SPA's settings page would
    (the user's own token: sub, verified email, groups), so every push to them shows on the stand-in's page. A
    browser that turns notifications on adds its own device beside it (its browser's push service)."""
    for u in users():
        token = stack.mint(u["sub"], email=u["email"] if u.get("email_verified", True) else None,
                           groups=u.get("groups") or [])
        body = json.dumps({**stack.push_subscription(), "lang": "en"}).encode()
        req = urllib.request.Request(f"{stack.base_url}/api/v1/me/push", data=body, method="PUT",
                                     headers={"content-type": "application/json", "authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200, r.status


def demo_logins() -> str:
    rows = []
    for u in users():
        groups = ", ".join(u.get("groups") or []) or "no groups"
        note = "" if u.get("email_verified", True) else ", email unverified"
        rows.append(f"    {u['username']:<6} {u['password']:<10} {u['email']} ({groups}{note})")
    return "\n".join(rows)


def main() -> int:
    state = ROOT / ".ringi" / "dev"
    print("ringi: starting the local stack (state and logs in .ringi/dev/)")
    t0 = time.monotonic()
    # RINGI_IDP_PROFILE=generic or okta: the IdP stand-in's Entra-like or Okta-like OpenID Connect profile
    # (OIDC_ISSUER, discovery).
    stack = Stack(state=fresh_state(state), ports=Ports(), demo=True, federated=True, push=True,
                  profile=os.environ.get("RINGI_IDP_PROFILE", "cognito"), extra_vars={"DEV_RELOAD": "on"})
    watcher = Watcher()
    try:
        stack.start()
        subscribe_demo_devices(stack)
        first = stack.start_demo_execution()
        member_first = stack.start_member_demo_execution()
    except StackError as e:
        print(f"\nringi: could not start: {e}", file=sys.stderr)
        stack.stop()
        return 1
    except BaseException:
        stack.stop()
        raise
    env = {
        "RINGI_APP_URL": stack.base_url,
        "RINGI_API_KEY": stack.api_key,
        "RINGI_MOTO_URL": stack.moto_url,
        "RINGI_IDP_URL": stack.idp_url,
        "RINGI_ISSUER": stack.issuer,
        "RINGI_CLIENT_ID": stack.client_id,
        "RINGI_MAILBOX_URL": stack.mailbox_url,
        "RINGI_CHAT_URL": stack.chat_url,
        "RINGI_PUSH_URL": stack.push_url,
        "RINGI_AWS_REGION": REGION,
        "RINGI_AWS_ADMIN_KEY": ADMIN_KEY,  # moto's setup key (standins/moto_server.py); not a real credential
        "RINGI_DEMO_STATE_MACHINE_ARN": stack.demo_state_machine_arn,
        "RINGI_MEMBER_ACCOUNT": MEMBER_ACCOUNT,
        "RINGI_MEMBER_REGION": MEMBER_REGION,
        "RINGI_MEMBER_STATE_MACHINE_ARN": stack.member_state_machine_arn,
        "RINGI_DEMO_USERS": "alice,bob,carol (password Passw0rd!)",
    }
    DEV_ENV.write_text(format_env(env))
    DEV_ENV.chmod(0o600)
    print(f"""
ringi is ready in {time.monotonic() - t0:.1f}s
  app            {stack.base_url}/
  mailbox        {stack.mailbox_url}/   (mails sent through the local SES; one demo request of each account is already there)
  chat           {stack.chat_url}/   (Slack/Teams/webhook posts; channels {", ".join(stack.chat_channels)}:
                 notify [{{"channel": "deploys"}}] in a registration)
  push           {stack.push_url}/   (Web Push: each demo user has a test device there; VAPID checked, payload decrypted)
  sign-in        {stack.idp_url}/oauth2/authorize   demo logins (username or email, password):
{demo_logins()}
                 one-time code (the second factor a step-up can ask for): 246810
  demo approvers {demo_approvers()}
  another demo   make demo        (starts the demo workflow again: a new mail appears in the mailbox;
                 make demo ACCOUNT=member: in the member account)
  API            {stack.base_url}/api/v1/approvals   (register with: Authorization: Bearer $RINGI_API_KEY)
  AWS (moto)     {stack.moto_url}   no access key in the worker: each call with a role's temporary credentials
                 (sts:AssumeRoleWithWebIdentity with the worker's own token, {stack.base_url}/.well-known/jwks.json)
  accounts       home   {HOME_ACCOUNT} {REGION:<12} {stack.demo_state_machine_arn}
                 member {MEMBER_ACCOUNT} {MEMBER_REGION:<12} {stack.member_state_machine_arn}
  first demos    {first}
                 {member_first}
  settings       .ringi/dev.env     logs .ringi/dev/*.log
  edits          rebuilt while this runs (the SPA or the worker, whichever changed); open pages reload
Ctrl-C stops everything.""", flush=True)
    stopping = []
    # Explicit handlers: a shell that starts this in the background may have set SIGINT to "ignore".
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(1))
    try:
        while not stopping:
            for p in stack.procs:
                if p.popen.poll() is not None:
                    print(f"ringi: {p.name} exited ({p.popen.returncode}); see {p.log}", file=sys.stderr)
                    stopping.append(1)
            # The worker first: a page that reloads for it then finds the SPA that goes with it, if both changed.
            for build in sorted(watcher.changed(), key=lambda b: b != "worker"):
                if not stopping:
                    rebuild(build, state)
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    print("\nringi: stopping…", flush=True)
    stack.stop()
    DEV_ENV.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

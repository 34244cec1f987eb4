"""The one launcher of ringi's local stack, used by `make dev` (scripts/dev/dev.py) and by every end-to-end
test (tests/e2e/conftest.py):

  moto      AWS stand-in (standins/moto_server.py: Step Functions executing state machines, SES, IAM SigV4)
  idp       Cognito-shaped OIDC server (standins/oidc/cognito-oidc.mjs) signing with a key this stack made;
            with `Stack(..., profile="generic")` its Entra-like generic OpenID Connect profile, and the worker
            configured with OIDC_ISSUER (discovery, `aud`/`azp`, groups in `roles`, scopes in `scp`); with
            `profile="okta"` its Okta-like one (ID tokens as the bearer, `groups`, sign-out with `id_token_hint`)
  worker    the edge worker in workerd via `wrangler dev`, local D1 with migrations applied
and, with `Stack(..., demo=True)`:
  relay     standins/relay.py: stands in for "EventBridge rule → API destination". An EventBridge rule on the
            default bus sends ringi.approval.requested events to an SQS queue (moto), the relay POSTs each
            event envelope to the worker's POST /api/v1/approvals with the API key
  mailbox   standins/mailbox.py: a read-only page of the mails SES (moto) accepted
  chat      standins/chatbox.py: the chat channels' stand-in (Slack, Teams, signed webhook) the worker's
            CHAT_CHANNELS point at, listing what it received
and, with `Stack(..., push=True)` (`make dev`) or `start_pushbox()` (the tests' push worker):
  push      standins/pushbox.py: Web Push's stand-in: a push service for test subscriptions that checks the VAPID
            JWT, decrypts each message with http_ece and lists it; the worker gets a VAPID_KEY made here
  the demo state machine: docs/workflow/approval.jsonpath.asl.json with the demo users as approvers

Everything listens on 127.0.0.1. Each process runs in its own process group with its pid recorded under
<state>/pids, so `stop()` (or the next start after a crash) leaves nothing behind.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADMIN_KEY = "ringi-admin"  # standins/moto_server.py lets this key through IAM auth, for setup only
REGION = "us-east-1"
# standins/moto_server.py's list of the mail SES accepted (moto's data.json serialises all of its state).
SES_MESSAGES = "/moto-api/ringi/ses-messages.json"
POOL_ID = "local_RingiPool1"
CLIENT_ID = "ringi-local-client"
# The app client whose client-credentials tokens may register approvals (REGISTER_CLIENT_IDS); people sign in
# with CLIENT_ID, which may not register.
MACHINE_CLIENT_ID = "ringi-local-machine"
REGISTER_SCOPE = "ringi/approvals.write"
# The worker's floor for CLAIM_LEASE_SECONDS (core/src/config/limits.rs min_claim_lease_secs: 3 callback attempts ×
# 3 s + backoff + 2 s margin); a shorter lease is a configuration error.
MIN_CLAIM_LEASE_SECONDS = 12
WORKFLOW_DOCS = ROOT / "docs" / "workflow"
EVENT_SOURCE = "ringi.workflow"
EVENT_DETAIL_TYPE = "ringi.approval.requested"
RELAY_QUEUE = "ringi-approvals-relay"
RELAY_RULE = "ringi-approvals"
DEMO_ROLE_ARN = "arn:aws:iam::123456789012:role/ringi-demo-workflow"
# Stack(federated=True) (`make dev`): moto's default account is ringi's home; a second account in another region
# is a member whose workflows ringi answers too, each through its own callback role (deploy/aws/member.yaml).
HOME_ACCOUNT = "123456789012"
MEMBER_ACCOUNT, MEMBER_REGION = "210987654321", "eu-west-1"
MEMBER_QUEUE = "ringi-member-events"
# The demo users of standins/oidc/users.json: alice by verified email (the mail goes to her) and the group
# `finance` (alice, carol, dave; the Hosted UI stand-in's access tokens carry groups, not email). bob is none.
# STORAGE=dynamodb: the seed design's token table (hash key approvalId), its approver index and the audit
# trail's two indexes (an approval's timeline, the export by month).
DDB_TABLE = "ringi-approvals"
DDB_INDEX = "byApprover"
DDB_EVENT_INDEXES = {"eventsByApproval": "eventOf", "eventsByMonth": "eventMonth"}
# What the worker may do on the table (deploy/aws/ringi.yaml grants the same, on the table and its index ARNs):
# item reads and writes, the inbox's Query and BatchGetItem, the cron's Scans (expiry, mail retries) — no table
# management. moto authorizes a transaction as `dynamodb:TransactWriteItems` (AWS checks each item's
# PutItem/UpdateItem instead), and every non-S3 action against the resource "*" (so the policy here cannot name
# the table; tests/deploy checks the template's scoping).
DDB_ACTIONS = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
               "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:Scan"]
DDB_MOTO_ONLY_ACTIONS = ["dynamodb:TransactWriteItems"]
DEMO_APPROVERS = [{"email": "alice@example.com"}, {"group": "finance"}]
# The OpenID Connect profiles' claim mappings, as the worker is configured for the stand-in's Entra-like profile
# ("generic": access tokens, `roles`, `scp`, no `email_verified`) and its Okta-like one (docs/deploy.md's worked
# example: the ID token as the bearer, `groups`, `email_verified` required).
GENERIC_CLAIMS = {"GROUPS_CLAIM": "roles", "SCOPE_CLAIM": "scp", "EMAIL_VERIFIED": "trust", "TOKEN_USE": "access"}
OKTA_CLAIMS = {"GROUPS_CLAIM": "groups", "EMAIL_VERIFIED": "require", "TOKEN_USE": "id"}
PROFILES = ("cognito", "generic", "okta")
# The stand-in's PROFILE for each.
IDP_PROFILES = {"cognito": "cognito", "generic": "entra", "okta": "okta"}


def demo_definition(approvers=None, timeout_seconds: int | None = None) -> dict:
    """The documented JSONPath workflow (docs/workflow/approval.jsonpath.asl.json) with other approvers and,
    optionally, another TimeoutSeconds (kept equal to the registration's timeoutSeconds)."""
    asl = json.loads((WORKFLOW_DOCS / "approval.jsonpath.asl.json").read_text())
    task = asl["States"]["RequestApproval"]
    detail = task["Parameters"]["Entries"][0]["Detail"]
    detail["approvers"] = approvers or DEMO_APPROVERS
    if timeout_seconds is not None:
        task["TimeoutSeconds"] = detail["timeoutSeconds"] = timeout_seconds
    return asl


def member_definition(queue_url: str) -> dict:
    """The demo workflow as a member account runs it: its event reaches ringi through that account's EventBridge,
    which moto cannot route across accounts, so the task sends the event EventBridge would deliver (the envelope
    naming the member account and region, the same detail) to a queue that a relay forwards, as the home
    account's rule and relay do."""
    asl = demo_definition()
    task = asl["States"]["RequestApproval"]
    entry = task["Parameters"]["Entries"][0]
    task["Resource"] = "arn:aws:states:::sqs:sendMessage.waitForTaskToken"
    task["Parameters"] = {"QueueUrl": queue_url, "MessageBody": {
        "version": "0", "id.$": "$$.Execution.Name", "detail-type": entry["DetailType"], "source": entry["Source"],
        "account": MEMBER_ACCOUNT, "region": MEMBER_REGION, "time.$": "$$.State.EnteredTime", "resources": [],
        "detail": entry["Detail"]}}
    return asl


def demo_input(version: str | None = None) -> dict:
    """An input of the documented shape: what the demo workflow asks approval for."""
    return {"change": {
        "service": "payments-api",
        "version": version or f"v2.{secrets.randbelow(90) + 10}.0",
        "environment": "production",
        "summary": "Rolls out the new settlement batch job and adds an index to the ledger table.\n"
                   "Rollback: redeploy the previous version; the index can stay.",
        "requestedBy": "ci@example.com",
    }}


@dataclass
class Ports:
    worker: int = 8787
    moto: int = 5000
    idp: int = 9000
    mailbox: int = 8025
    chat: int = 8026  # 0: any free port
    push: int = 8027  # 0: any free port


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


# Ports this process handed out: a port chosen ahead of its use (the sign-in port, a worker to be restarted on
# its port) is not bound meanwhile, and the kernel would offer it again.
_HANDED_OUT: set[int] = set()


def _ephemeral_ports() -> range:
    """The kernel's range for the local ports of outgoing connections (Linux's default if unreadable)."""
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return range(lo, hi + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


_FREE_PORTS_PER_PROCESS = 1500


def d1_file(persist: Path) -> Path:
    """The SQLite file of the local D1 database a worker persists under `persist` (miniflare keeps one per
    database, next to its metadata.sqlite)."""
    files = [p for p in (persist / "v3" / "d1").glob("*/*.sqlite") if p.name != "metadata.sqlite"]
    if len(files) != 1:
        raise RuntimeError(f"expected one D1 database under {persist}, found {files}")
    return files[0]


def query_d1(persist: Path, sql: str) -> list[dict]:
    """Runs `sql` (one statement or several) on a local D1 database and returns the first statement's rows, as
    `wrangler d1 execute --local --json` does, without starting a runtime for it (seconds per call on a loaded
    machine). workerd keeps the database in WAL mode, so this connection reads and writes it safely while the
    worker runs; a write waits for the worker's (busy timeout)."""
    con = sqlite3.connect(d1_file(persist), timeout=30, isolation_level=None)
    con.row_factory = sqlite3.Row
    try:
        first, pending = None, ""
        for piece in sql.split(";"):
            pending += piece + ";"
            if not sqlite3.complete_statement(pending):
                continue
            if pending.strip(" \n\t;"):
                rows = [dict(r) for r in con.execute(pending)]
                first = rows if first is None else first
            pending = ""
        if pending.strip(" \n\t;"):
            raise ValueError(f"incomplete SQL statement: {pending!r}")
        return first or []
    finally:
        con.close()


MIGRATIONS = ROOT / "edge" / "migrations"
# The wrangler every tree's workers run with (PATH: this checkout's node_modules), whatever tree they run from.
WRANGLER_PACKAGE = ROOT / "node_modules" / "wrangler" / "package.json"


def apply_migrations(db: Path) -> list[str]:
    """Applies the migrations `db` lacks, in order, each with its row in d1_migrations (wrangler's own record,
    so `wrangler d1 migrations apply` agrees afterwards). Returns the names applied."""
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        done = {name for (name,) in con.execute("SELECT name FROM d1_migrations")}
        applied = []
        for migration in sorted(MIGRATIONS.glob("*.sql")):
            if migration.name not in done:
                con.executescript(f"BEGIN;\n{migration.read_text()}\n;INSERT INTO d1_migrations (name) "
                                  f"VALUES ('{migration.name}');\nCOMMIT;")
                applied.append(migration.name)
        return applied
    finally:
        con.close()


def d1_template() -> Path:
    """An empty D1 database at the current schema, laid out as wrangler lays it out: made once by `wrangler d1
    migrations apply` (a runtime started for it: seconds of CPU, on every stack start otherwise) and kept under
    RINGI_HOME, keyed by wrangler's version, the worker's wrangler.toml and the migrations. Every worker's
    database starts as a copy. Several processes may make it at once: one rename wins, the others' are dropped."""
    key = hashlib.sha256(json.loads(WRANGLER_PACKAGE.read_text())["version"].encode())
    for f in [ROOT / "edge" / "wrangler.toml", *sorted((ROOT / "edge" / "migrations").glob("*.sql"))]:
        key.update(f.name.encode() + b"\0" + f.read_bytes())
    home = Path(os.environ.get("RINGI_HOME") or Path.home() / ".cache" / "ringi")
    template = home / "d1-template" / key.hexdigest()[:16]
    if template.exists():
        return template
    staging = template.with_name(f"{template.name}.{os.getpid()}.new")
    shutil.rmtree(staging, ignore_errors=True)
    migrate = subprocess.run(["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", str(staging)],
                             cwd=ROOT / "edge", env={**os.environ, "CI": "true"}, capture_output=True, text=True)
    if migrate.returncode != 0:
        raise StackError(f"D1 migrations failed:\n{migrate.stdout}\n{migrate.stderr}")
    try:
        staging.rename(template)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return template


def moto_client(url: str, service: str, region: str = REGION, *, account: str | None = None, key: str = ADMIN_KEY,
                secret: str = "admin"):
    """A boto3 client of the moto at `url`; with `account`, the admin key acting in that account (moto's
    x-moto-account-id header: the admin key passes IAM, any account)."""
    import boto3
    c = boto3.client(service, endpoint_url=url, region_name=region, aws_access_key_id=key,
                     aws_secret_access_key=secret)
    if account:
        c.meta.events.register("before-send", lambda request, **_: request.headers.__setitem__(
            "x-moto-account-id", account))
    return c


def free_port() -> int:
    """A port nothing listens on, for a server about to start. Drawn below the ephemeral range: a port the kernel
    hands out for bind(0) is also one it hands out for the next outgoing connection (a suite makes thousands), which
    may hold it by the time the server binds. Each pytest-xdist worker draws from a slice of its own; a port is
    never handed out twice by one process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    ephemeral = _ephemeral_ports()
    lo = 20000 + _FREE_PORTS_PER_PROCESS * (index % 8)
    candidates = [p for p in range(lo, lo + _FREE_PORTS_PER_PROCESS) if p not in ephemeral and p not in _HANDED_OUT]
    for port in secrets.SystemRandom().sample(candidates, len(candidates)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise StackError(f"no free port in {lo}..{lo + _FREE_PORTS_PER_PROCESS}")


def log_tail(log: Path, lines: int = 15) -> str:
    """The end of a component's log, for an error raised where the log file itself is out of reach (CI output).
    The logs hold no secrets: the e2e leak check reads every one of them."""
    try:
        tail = log.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return ""
    return "; its last lines:\n" + "\n".join(re.sub(r"\x1b\[[0-9;]*m", "", line) for line in tail)


def http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= r.status < 300
    except Exception:
        return False


class StackError(RuntimeError):
    pass


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path
    seen: int = 0  # the log's length when it started (a restart appends to the same log)


@dataclass
class Stack:
    state: Path
    ports: Ports = field(default_factory=Ports)
    claim_lease_seconds: int = 30
    extra_vars: dict = field(default_factory=dict)
    say: callable = print
    demo: bool = False  # + relay, mailbox, the EventBridge rule and the demo state machine
    # No AWS key in the worker: callbacks to two accounts (HOME_ACCOUNT, MEMBER_ACCOUNT in MEMBER_REGION) and its
    # own calls (mail, DynamoDB) through web-identity federation, each with a role of its own in moto.
    federated: bool = False
    storage: str = "d1"  # or "dynamodb": the worker keeps approvals in DDB_TABLE in moto
    demo_state_machine_arn: str | None = None
    member_state_machine_arn: str | None = None
    procs: list = field(default_factory=list)
    # A port for one extra worker that users can sign in to (its callback is registered at the IdP).
    sign_in_port: int = 0
    # "cognito" (a user pool's shapes), "generic" (any OpenID Connect provider; the stand-in's Entra profile) or
    # "okta" (the stand-in's Okta profile: ID tokens as the bearer, sign-out needs `id_token_hint`).
    profile: str = "cognito"
    # extra_worker's name → port (filled by it; may be called from several threads at once).
    extra_ports: dict = field(default_factory=dict, repr=False)
    # Seconds the workers' test clock (TEST_CLOCK=header) runs ahead for the cron runs fired here (tests move it).
    clock_seconds: int = 0
    # Web Push on the main worker (VAPID_KEY) with the push stand-in (`make dev`); tests use push_vars() on a
    # worker of their own.
    push: bool = False

    # ------------------------------------------------------------------ derived settings
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.worker}"

    @property
    def moto_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.moto}"

    @property
    def idp_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.idp}"

    @property
    def mailbox_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.mailbox}"

    @property
    def generic(self) -> bool:
        return self.profile == "generic"

    @property
    def okta(self) -> bool:
        return self.profile == "okta"

    @property
    def chat_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.chat}"

    @property
    def push_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.push}"

    @property
    def issuer(self) -> str:
        if self.okta:
            return f"{self.idp_url}/oauth2/default"
        return f"{self.idp_url}/{POOL_ID}/v2.0" if self.generic else f"{self.idp_url}/{POOL_ID}"

    client_id = CLIENT_ID

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "Stack":
        if self.profile not in PROFILES:
            raise StackError(f"profile must be one of {PROFILES}, not {self.profile!r}")
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "pids").mkdir(exist_ok=True)
        self._reap_stale()
        self.demo_state_machine_arn = self.member_state_machine_arn = None  # made anew in this start's moto
        wanted = [("worker", self.ports.worker), ("moto", self.ports.moto), ("idp", self.ports.idp)]
        if self.demo:
            self.ports.chat = self.ports.chat or free_port()
            wanted += [("mailbox", self.ports.mailbox), ("chat", self.ports.chat)]
            self._make_chat_channels()
        for name, port in wanted:
            if not port_free(port):
                raise StackError(f"port {port} for {name} is in use on 127.0.0.1: stop whatever listens there "
                                 f"(`ss -ltnp 'sport = :{port}'`) and retry")
        try:
            self._start_moto()
            self._setup_aws()
            self._make_keys()
            self.sign_in_port = self.sign_in_port or free_port()
            self._start_idp()
            if self.push:
                self.start_pushbox()
            self._start_worker()
            if self.demo:
                self._start_demo_components()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Every component at once: all are signalled, then waited for together (the slowest sets the time)."""
        self._terminate_all(list(reversed(self.procs)))
        self.procs.clear()

    def _terminate_all(self, procs: list, sig=signal.SIGTERM, grace: float = 15) -> None:
        """Signals each component's whole process group; SIGKILL for any that has not gone after `grace` s.
        A component slower than a few seconds to stop is named on stderr (a shutdown that waits on something)."""
        t0 = time.monotonic()
        for p in procs:
            _kill_group(p.popen.pid, sig)
        for p in procs:
            waited = time.monotonic()
            try:
                p.popen.wait(timeout=max(0.1, t0 + grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(p.popen.pid, signal.SIGKILL)
                p.popen.wait(timeout=5)
            took = time.monotonic() - t0
            if took > 3 and time.monotonic() - waited > 1:
                # Also on file: a test run captures stderr of fixtures that pass.
                note = f"stack: {p.name} took {took:.1f}s to stop\n"
                print(note, end="", file=sys.stderr)
                with (self.state / "slow-stops.log").open("a") as f:
                    f.write(note)
            (self.state / "pids" / f"{p.name}.pid").unlink(missing_ok=True)

    def stop_component(self, *names: str, sig=signal.SIGTERM) -> None:
        """Stops these components together (all processes of each name) and forgets them."""
        named = [p for p in self.procs if p.name in names]
        self._terminate_all(named, sig)
        self.procs[:] = [p for p in self.procs if p not in named]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _reap_stale(self) -> None:
        """A crashed earlier run of this state dir may have left processes: stop them by their pid files."""
        for pidfile in (self.state / "pids").glob("*.pid"):
            try:
                pid = int(pidfile.read_text())
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
                if str(ROOT) in cmdline or "wrangler" in cmdline or "moto_server" in cmdline or "cognito-oidc" in cmdline:
                    self.say(f"  stopping stale {pidfile.stem} (pid {pid}) left by an earlier run")
                    _kill_group(pid, signal.SIGKILL)
            except (ValueError, FileNotFoundError, ProcessLookupError):
                pass
            pidfile.unlink(missing_ok=True)

    def _spawn(self, name: str, cmd: list, env: dict | None = None, cwd: Path = ROOT, drop=()) -> Proc:
        log = self.state / f"{name}.log"
        fh = open(log, "ab")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(tuple(drop))} if drop else dict(os.environ)
        full_env.update(env or {})
        popen = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=fh, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        (self.state / "pids" / f"{name}.pid").write_text(str(popen.pid))
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def _wait(self, proc: Proc, ready, timeout: float) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if proc.popen.poll() is not None:
                raise StackError(f"{proc.name} exited with {proc.popen.returncode}; see {proc.log}{log_tail(proc.log)}")
            if ready():
                self.say(f"  {proc.name:<7} ready in {time.monotonic() - t0:4.1f}s  (log: {proc.log})")
                return
            time.sleep(0.2)
        raise StackError(f"{proc.name} not ready after {timeout:.0f}s; see {proc.log}{log_tail(proc.log)}")

    # ------------------------------------------------------------------ moto
    def _start_moto(self) -> None:
        # A stray AWS_*/MOTO_PORT in the caller's environment would redirect moto's own interpreter calls.
        p = self._spawn("moto", [sys.executable, str(ROOT / "standins/moto_server.py"), "-H", "127.0.0.1",
                                 "-p", str(self.ports.moto)], env={"MOTO_ADMIN_ACCESS_KEY": ADMIN_KEY},
                        drop=("AWS_", "MOTO_"))
        self._wait(p, lambda: http_ok(self.moto_url + SES_MESSAGES), 60)

    def aws(self, service: str, key: str = ADMIN_KEY, secret: str = "admin"):
        return moto_client(self.moto_url, service, key=key, secret=secret)

    def _setup_aws(self) -> None:
        """The worker's own IAM user: only the callback and mail actions, like production (design.md §12)."""
        iam = self.aws("iam")
        iam.create_user(UserName="ringi-edge")
        iam.put_user_policy(UserName="ringi-edge", PolicyName="ringi-edge", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["states:SendTaskSuccess", "states:SendTaskFailure",
                                                         "ses:SendEmail"], "Resource": "*"}]}))
        key = iam.create_access_key(UserName="ringi-edge")["AccessKey"]
        self.edge_key = (key["AccessKeyId"], key["SecretAccessKey"])
        self.aws("sesv2").create_email_identity(EmailIdentity="ringi@example.com")
        if self.storage == "dynamodb":
            self.dynamodb_vars()
        if self.federated:
            self._setup_federation()
        if self.demo:
            self._setup_events()

    def account_aws(self, service: str, account: str, region: str = REGION):
        """An admin client of moto acting in `account`."""
        return moto_client(self.moto_url, service, region, account=account)

    def federated_role(self, account: str, name: str, actions: list) -> str:
        """A role in `account` that ringi's tokens assume (moto's STS checks no token), allowed `actions` only."""
        iam = self.account_aws("iam", account)
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity",
             "Principal": {"Federated": f"arn:aws:iam::{account}:oidc-provider/127.0.0.1"}}]}))
        iam.put_role_policy(RoleName=name, PolicyName=name, PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}))
        return f"arn:aws:iam::{account}:role/{name}"

    def _setup_federation(self) -> None:
        """The worker's federation settings (signed with the stack's key ring): the two accounts' callback roles as AWS_TARGETS,
        the worker's own role for mail (and the table), and no access key."""
        callback = ["states:SendTaskSuccess", "states:SendTaskFailure"]
        targets = {a: {"roleArn": self.federated_role(a, "ringi-callback", callback), "regions": [r]}
                   for a, r in ((HOME_ACCOUNT, REGION), (MEMBER_ACCOUNT, MEMBER_REGION))}
        own = ["ses:SendEmail"] + (DDB_ACTIONS + DDB_MOTO_ONLY_ACTIONS if self.storage == "dynamodb" else [])
        self.federation_vars = {
            "AWS_TARGETS": json.dumps(targets),
            "AWS_ROLE_ARN": self.federated_role(HOME_ACCOUNT, "ringi-worker", own), "STS_ENDPOINT": self.moto_url,
            "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
        }

    # ------------------------------------------------------------------ DynamoDB (STORAGE=dynamodb)
    def create_approval_table(self, table: str = DDB_TABLE) -> str:
        """The approvals table as deploy/aws/ringi.yaml makes it (hash key `approvalId`, the approver index on
        `approverUserId`, keys only, the event indexes on `eventOf` / `eventMonth` sorted by `eventSort`, TTL on
        `expiresAt`); made once per moto. Returns its ARN."""
        ddb = self.aws("dynamodb")
        try:
            return ddb.describe_table(TableName=table)["Table"]["TableArn"]
        except ddb.exceptions.ResourceNotFoundException:
            pass
        arn = ddb.create_table(
            TableName=table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"}
                                  for a in ("approvalId", "approverUserId", *DDB_EVENT_INDEXES.values(), "eventSort")],
            KeySchema=[{"AttributeName": "approvalId", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": DDB_INDEX, "KeySchema": [{"AttributeName": "approverUserId", "KeyType": "HASH"}],
                                     "Projection": {"ProjectionType": "KEYS_ONLY"}}] + [
                {"IndexName": name, "KeySchema": [{"AttributeName": hash_key, "KeyType": "HASH"},
                                                  {"AttributeName": "eventSort", "KeyType": "RANGE"}],
                 "Projection": {"ProjectionType": "ALL"}} for name, hash_key in DDB_EVENT_INDEXES.items()],
        )["TableDescription"]["TableArn"]
        ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"})
        return arn

    def dynamodb_vars(self, table: str = DDB_TABLE) -> dict:
        """Worker settings for STORAGE=dynamodb on `table` (made if missing), with an IAM user of its own allowed
        the table's item actions (and the callbacks and mail), nothing else of DynamoDB."""
        self._ddb_users = getattr(self, "_ddb_users", {})
        if table not in self._ddb_users:
            self.create_approval_table(table)
            iam, user = self.aws("iam"), f"ringi-edge-{table}"
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="ringi-edge", PolicyDocument=json.dumps({
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": ["states:SendTaskSuccess", "states:SendTaskFailure", "ses:SendEmail"],
                     "Resource": "*"},
                    {"Effect": "Allow", "Action": DDB_ACTIONS + DDB_MOTO_ONLY_ACTIONS, "Resource": "*"}]}))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            self._ddb_users[table] = (key["AccessKeyId"], key["SecretAccessKey"])
        key_id, secret = self._ddb_users[table]
        return {"STORAGE": "dynamodb", "DYNAMODB_TABLE": table, "DYNAMODB_INDEX": DDB_INDEX,
                "DYNAMODB_ENDPOINT": self.moto_url, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret}

    # ------------------------------------------------------------------ EventBridge → relay → worker (demo)
    def _setup_events(self) -> None:
        """The local half of "rule → API destination": a rule on the default bus matching ringi's events with
        an SQS target, and an IAM user for the relay that may only consume that queue."""
        sqs, events, iam = self.aws("sqs"), self.aws("events"), self.aws("iam")
        self.relay_queue_url = sqs.create_queue(QueueName=RELAY_QUEUE)["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.relay_queue_url,
                                             AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name=RELAY_RULE, EventBusName="default", State="ENABLED",
                        EventPattern=json.dumps({"source": [EVENT_SOURCE], "detail-type": [EVENT_DETAIL_TYPE]}))
        events.put_targets(Rule=RELAY_RULE, EventBusName="default", Targets=[{"Id": "ringi-relay", "Arn": queue_arn}])
        queues = [queue_arn]
        if self.federated:
            # moto's interpreter sends a task's message with its own (the home) account, in the machine's region.
            member_sqs = self.account_aws("sqs", HOME_ACCOUNT, MEMBER_REGION)
            self.member_queue_url = member_sqs.create_queue(QueueName=MEMBER_QUEUE)["QueueUrl"]
            queues.append(member_sqs.get_queue_attributes(QueueUrl=self.member_queue_url,
                                                          AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
        iam.create_user(UserName="ringi-relay")
        iam.put_user_policy(UserName="ringi-relay", PolicyName="ringi-relay", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Resource": queues, "Action": [
                "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"]}]}))
        key = iam.create_access_key(UserName="ringi-relay")["AccessKey"]
        self.relay_key = (key["AccessKeyId"], key["SecretAccessKey"])

    # ------------------------------------------------------------------ chat channels (demo)
    def _make_chat_channels(self) -> None:
        """CHAT_CHANNELS for the worker: one channel of each kind, all pointing at the chat stand-in. Each URL
        carries a random path and the webhook a random secret, as real ones do: both are secrets."""
        def url(name: str) -> str:
            return f"{self.chat_url}/hooks/{name}/{secrets.token_urlsafe(18)}"
        self.chat_channels = {
            "deploys": {"kind": "slack", "url": url("deploys")},
            "ops-teams": {"kind": "teams", "url": url("ops-teams")},
            "audit-hook": {"kind": "webhook", "url": url("audit-hook"), "secret": "whsec_" + secrets.token_urlsafe(24)},
        }

    # ------------------------------------------------------------------ idp
    def _make_keys(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa
        from jwt.algorithms import RSAAlgorithm

        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self.private_key))
        self.kid = "ringi-" + secrets.token_urlsafe(8)
        jwk.update(kid=self.kid, alg="RS256", use="sig")
        keys = self.state / "idp-keys.json"
        keys.write_text(json.dumps({"keys": [jwk]}))
        keys.chmod(0o600)

    def _start_idp(self) -> None:
        origins = [self.base_url, f"http://127.0.0.1:{self.sign_in_port}"]
        env = {"PORT": str(self.ports.idp), "POOL_ID": POOL_ID, "CLIENT_ID": CLIENT_ID,
               "REDIRECT_URIS": ",".join(f"{o}/auth/callback" for o in origins),
               "POST_LOGOUT_REDIRECT_URIS": ",".join(f"{o}/" for o in origins),
               "KEYS_FILE": str(self.state / "idp-keys.json"), "PROFILE": IDP_PROFILES[self.profile]}
        p = self._spawn("idp", ["node", str(ROOT / "standins/oidc/cognito-oidc.mjs")], env=env)
        self._wait(p, lambda: http_ok(f"{self.issuer}/.well-known/openid-configuration"), 30)

    def claims(self, sub: str = "user-1", *, groups=(), email=None, ttl: int = 3600, **overrides) -> dict:
        """The claims of a bearer of this stack's profile: Cognito's access token (`token_use`, `client_id`,
        `cognito:groups`, `scope`), the generic profile's Entra-like access token (`aud`/`azp`, `roles`, `scp`, an
        email without `email_verified`) or the Okta profile's ID token (`aud` the client, `groups`, `email` with
        `email_verified`). `None` in `overrides` removes a claim."""
        now = int(time.time())
        if self.okta:
            claims = {"sub": sub, "iss": self.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + ttl, "auth_time": now,
                      "ver": 1, "jti": "ID." + secrets.token_hex(8), "amr": ["pwd"], "preferred_username": sub}
            if groups:
                claims["groups"] = list(groups)
            if email:
                claims.update(email=email, email_verified=True)
        elif self.generic:
            claims = {"sub": sub, "iss": self.issuer, "aud": CLIENT_ID, "azp": CLIENT_ID, "scp": "openid email profile",
                      "preferred_username": sub, "iat": now, "nbf": now, "exp": now + ttl, "ver": "2.0",
                      "uti": secrets.token_hex(8)}
            if groups:
                claims["roles"] = list(groups)
            if email:
                claims["email"] = email
        else:
            claims = {"sub": sub, "iss": self.issuer, "client_id": CLIENT_ID, "token_use": "access",
                      "scope": "openid email profile", "username": sub, "iat": now, "auth_time": now,
                      "exp": now + ttl, "jti": secrets.token_hex(8), "version": 2}
            if groups:
                claims["cognito:groups"] = list(groups)
            if email:
                claims.update(email=email, email_verified=True)
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def mint(self, sub: str = "user-1", *, kid=None, key=None, headers=None, **claims) -> str:
        """An access token of this stack's profile signed with the stack's IdP key (what the worker trusts)."""
        import jwt
        hdr = {"kid": self.kid if kid is None else kid, **(headers or {})}
        return jwt.encode(self.claims(sub, **claims), key or self.private_key, algorithm="RS256", headers=hdr)

    def mint_machine(self, scope: str = REGISTER_SCOPE, client_id: str = MACHINE_CLIENT_ID, **overrides) -> str:
        """A client-credentials access token: `sub` is the app client, no user, the given scope (Cognito:
        `client_id` + `scope`; generic: `azp` + `scp`, `aud` ringi's client as the API)."""
        if self.okta:
            raise StackError("the Okta profile's workflows register with the API key (docs/deploy.md)")
        shape = ({"azp": client_id, "scp": scope, "preferred_username": None} if self.generic else
                 {"client_id": client_id, "scope": scope, "username": None, "auth_time": None})
        return self.mint(client_id, **{**shape, **overrides})

    # ------------------------------------------------------------------ worker
    @property
    def signing_key(self) -> dict:
        """This stack's key ring: a fresh private EC P-256 JWK (SIGNING_KEY), made on first use."""
        if not getattr(self, "_signing_key", None):
            import jwt
            from cryptography.hazmat.primitives.asymmetric import ec
            self._signing_key = {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()))),
                                 "kid": "ringi-local-" + secrets.token_hex(4)}
        return self._signing_key

    def worker_vars(self) -> dict:
        self.api_key = getattr(self, "api_key", None) or "rk_" + secrets.token_urlsafe(24)
        # OpenID Connect: the Cognito defaults of edge/wrangler.toml's [vars] blanked (empty counts as unset).
        provider = ({"OIDC_ISSUER": self.issuer, "OIDC_CLIENT_ID": CLIENT_ID,
                     **(OKTA_CLAIMS if self.okta else GENERIC_CLAIMS),
                     "COGNITO_ISSUER": "", "COGNITO_CLIENT_ID": "", "COGNITO_DOMAIN": ""}
                    if self.profile != "cognito" else
                    {"COGNITO_ISSUER": self.issuer, "COGNITO_CLIENT_ID": CLIENT_ID, "COGNITO_DOMAIN": self.idp_url,
                     "TOKEN_USE": "access"})
        v = {
            "PUBLIC_BASE_URL": self.base_url,
            **provider,
            "REGISTER_CLIENT_IDS": MACHINE_CLIENT_ID,
            "REGISTER_SCOPE": REGISTER_SCOPE,
            "REGISTER_API_KEYS": hashlib.sha256(self.api_key.encode()).hexdigest(),
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": self.edge_key[0],
            "AWS_SECRET_ACCESS_KEY": self.edge_key[1],
            # ringi's key ring: every decision's receipt (and, federated, the tokens for AWS) is signed with it.
            "SIGNING_KEY": json.dumps(self.signing_key),
            "SFN_ENDPOINT": self.moto_url,
            "SES_ENDPOINT": self.moto_url,
            "MAIL_FROM": "ringi@example.com",
            # The people of the demo and the tests live at example.com: delegates, stand-ins and escalations
            # there may be mailed (core::mail::may_mail); any other domain only as an approval's own approver.
            "MAIL_ALLOWED_DOMAINS": "example.com",
            "CLAIM_LEASE_SECONDS": str(self.claim_lease_seconds),
            # A local stack only (the worker refuses it off loopback): a request's `x-ringi-clock` or a cron
            # run's `clock=` moves its "now" forward, so tests skip leases and schedules instead of sleeping.
            "TEST_CLOCK": "header",
        }
        if self.storage == "dynamodb":
            v.update(self.dynamodb_vars())
        if getattr(self, "chat_channels", None):
            v["CHAT_CHANNELS"] = json.dumps(self.chat_channels)
        if self.push:
            v.update(self.push_vars())
        if self.federated:
            v.update(self.federation_vars)
        v.update(self.extra_vars)
        return v

    def _start_worker(self) -> None:
        if not (ROOT / "edge/build/worker/shim.mjs").exists() or not (ROOT / "dist/index.html").exists():
            raise StackError("the worker or the SPA is not built: run `make build` first")
        self._launch_worker("worker", self.ports.worker, self.worker_vars())

    def _launch_worker(self, name: str, port: int, variables: dict, assets: Path | None = None) -> str:
        persist = self.state / f"{name}-d1"
        env_file = self.state / f"{name}.env"
        # Secrets go through an env file: wrangler prints [vars] values but hides these.
        env_file.write_text("".join(f"{k}={env_quote(v)}\n" for k, v in variables.items()))
        env_file.chmod(0o600)
        t0 = time.monotonic()
        self._migrated_d1(persist)
        self.say(f"  {name:<7} D1 migrations applied in {time.monotonic() - t0:4.1f}s")
        # An inspector port of its own: left to itself every wrangler probes 9229 upwards and binds later, so two
        # starting at once (two test stacks, an extra worker) can both pick 9229 and one dies on EADDRINUSE.
        p = self._spawn(name, ["wrangler", "dev", "--local", "--ip", "127.0.0.1", "--port", str(port),
                               "--inspector-port", str(free_port()),
                               "--persist-to", str(persist), "--env-file", str(env_file),
                               "--show-interactive-dev-session=false", "--log-level", "log", "--test-scheduled",
                               *(["--assets", str(assets)] if assets else [])],
                        cwd=ROOT / "edge")
        url = f"http://127.0.0.1:{port}"
        self._wait(p, lambda: http_ok(f"{url}/healthz"), 120)
        return url

    _d1_template_lock = threading.Lock()

    def _migrated_d1(self, persist: Path) -> None:
        """Brings the D1 database under `persist` to the current schema: a copy of the template (`d1_template`),
        then any migration it lacks, applied as wrangler applies them."""
        if not persist.exists():
            with self._d1_template_lock:
                template = d1_template()
            shutil.copytree(template, persist)
        apply_migrations(d1_file(persist))

    def extra_worker(self, name: str, overrides: dict, signs_in: bool = False, assets: Path | None = None) -> str:
        """Another worker instance (own D1) with some settings changed, e.g. a wrong AWS secret. Calling it
        again with the same name restarts that worker on the same port and D1 (after `kill`). `signs_in`: on
        the port whose sign-in callback the IdP accepts (one such worker at a time). `assets`: the SPA from
        another directory than dist/ (a copy a test may change)."""
        port = self.extra_ports.get(name) or (self.sign_in_port if signs_in else free_port())
        # One worker at a time on the sign-in port: an earlier one there is stopped (its D1 stays on disk).
        for other, used in list(self.extra_ports.items()):
            if used == port and other != name:
                self.stop_component(f"worker-{other}")
                del self.extra_ports[other]
        self.extra_ports[name] = port
        return self._launch_worker(f"worker-{name}", port, {**self.worker_vars(), "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
                                                            **overrides}, assets)

    def restart_moto(self) -> None:
        """A fresh moto on the same port, set up as at the start (new keys: only workers started afterwards hold
        them). For benchmark phases that must not pay for what earlier ones left in moto's one process."""
        self.stop_component("moto")
        self._ddb_users = {}
        self._start_moto()
        self._setup_aws()

    def stop_extra_workers(self, names) -> None:
        """Stops these extra workers together and forgets their ports (a later `extra_worker` of the same name
        starts afresh on its D1, on a new port unless it signs in)."""
        names = set(names)
        self.stop_component(*(f"worker-{n}" for n in names))
        for n in names:
            self.extra_ports.pop(n, None)

    def kill(self, name: str) -> None:
        """SIGKILLs a component's whole process group (a crash, not a shutdown)."""
        self.stop_component(name, sig=signal.SIGKILL)

    # ------------------------------------------------------------------ demo: relay, mailbox, workflow
    def _start_demo_components(self) -> None:
        # Both processes start while this one creates the state machine; then both are waited for.
        relay = self._spawn_relay("relay", REGION, self.relay_queue_url)
        # The member account's events, through a relay of their own (its EventBridge, stood in for: member_definition).
        member_relay = self._spawn_relay("relay-member", MEMBER_REGION, self.member_queue_url) if self.federated else None
        mailbox = self._spawn("mailbox", [sys.executable, str(ROOT / "standins/mailbox.py"), "--port",
                                          str(self.ports.mailbox), "--moto", self.moto_url])
        # The channels (URLs, the webhook's secret) go in the environment, never on the command line.
        chat = self._spawn("chatbox", [sys.executable, str(ROOT / "standins/chatbox.py"), "--port", str(self.ports.chat)],
                           env={"RINGI_CHATBOX_CHANNELS": json.dumps(self.chat_channels), "PYTHONUNBUFFERED": "1"})
        self.setup_demo()
        for r in filter(None, (relay, member_relay)):
            self._wait(r, lambda r=r: b'"event": "started"' in r.log.read_bytes()[r.seen:], 30)
        if member_relay:
            self.setup_member_demo()
        self._wait(mailbox, lambda: http_ok(f"{self.mailbox_url}/healthz"), 30)
        self._wait(chat, lambda: http_ok(f"{self.chat_url}/healthz"), 30)

    def _spawn_relay(self, name: str, region: str, queue_url: str) -> Proc:
        """A relay (standins/relay.py) of one queue; `seen`: its log's length before (a restart appends)."""
        log = self.state / f"{name}.log"
        seen = log.stat().st_size if log.exists() else 0
        proc = self._spawn(name, [sys.executable, str(ROOT / "standins/relay.py"), "--endpoint", self.moto_url,
                                  "--region", region, "--queue-url", queue_url,
                                  "--target", f"{self.base_url}/api/v1/approvals"],
                           env={"RINGI_RELAY_API_KEY": self.api_key, "AWS_ACCESS_KEY_ID": self.relay_key[0],
                                "AWS_SECRET_ACCESS_KEY": self.relay_key[1], "PYTHONUNBUFFERED": "1"},
                           drop=("AWS_",))
        proc.seen = seen
        return proc

    def setup_member_demo(self) -> str:
        """The demo workflow in the member account and region (federated stacks): member_definition."""
        if not self.member_state_machine_arn:
            self.member_state_machine_arn = self.account_aws("stepfunctions", MEMBER_ACCOUNT, MEMBER_REGION) \
                .create_state_machine(name="ringi-demo-approval", type="STANDARD",
                                      roleArn=f"arn:aws:iam::{MEMBER_ACCOUNT}:role/ringi-demo-workflow",
                                      definition=json.dumps(member_definition(self.member_queue_url)))["stateMachineArn"]
            self.say(f"  demo    member state machine {self.member_state_machine_arn}")
        return self.member_state_machine_arn

    def start_member_demo_execution(self, input: dict | None = None) -> str:
        """Starts the member account's demo workflow; returns the executionArn."""
        return self.account_aws("stepfunctions", MEMBER_ACCOUNT, MEMBER_REGION).start_execution(
            stateMachineArn=self.setup_member_demo(), input=json.dumps(demo_input() if input is None else input))["executionArn"]

    def setup_demo(self) -> str:
        """Creates the demo state machine from docs/workflow/approval.jsonpath.asl.json (demo approvers)."""
        if self.demo_state_machine_arn:
            return self.demo_state_machine_arn
        self.demo_state_machine_arn = self.create_workflow("ringi-demo-approval")
        self.say(f"  demo    state machine {self.demo_state_machine_arn}")
        return self.demo_state_machine_arn

    def create_workflow(self, name: str, approvers=None, timeout_seconds: int | None = None) -> str:
        """A Standard state machine from the documented JSONPath workflow; returns its ARN."""
        return self.aws("stepfunctions").create_state_machine(
            name=name, type="STANDARD", roleArn=DEMO_ROLE_ARN,
            definition=json.dumps(demo_definition(approvers, timeout_seconds)))["stateMachineArn"]

    def start_demo_execution(self, input: dict | None = None, state_machine_arn: str | None = None) -> str:
        """Starts the demo workflow (default input: demo_input()); returns the executionArn."""
        arn = state_machine_arn or self.setup_demo()
        return self.aws("stepfunctions").start_execution(
            stateMachineArn=arn, input=json.dumps(demo_input() if input is None else input))["executionArn"]

    @property
    def d1_dir(self) -> Path:
        return self.state / "worker-d1"

    def run_cron(self, base_url: str | None = None, d1_fault: str | None = None, latency: str | None = None) -> None:
        """Fires the worker's scheduled handler now (wrangler dev --test-scheduled). `d1_fault`: a D1 fault spec
        for this run, honoured by a worker with D1_FAULTS=header; `latency`: delays (`d1=80,aws=80`), honoured
        with INJECT_LATENCY=header; `clock_seconds` ahead on the test clock (TEST_CLOCK=header). All three ride in
        the trigger's cron string."""
        cron = ("*/5 * * * *" + (f" d1-fault={d1_fault}" if d1_fault else "")
                + (f" latency={latency}" if latency else "") + (f" clock={self.clock_seconds}" if self.clock_seconds else ""))
        query = urllib.parse.urlencode({"cron": cron})
        with urllib.request.urlopen(f"{base_url or self.base_url}/__scheduled?{query}", timeout=60) as r:
            assert r.status == 200, r.status

    def sent_mail(self, after: int | None = None, wait: float = 0) -> list:
        """Every message SES (moto) accepted: {source, destinations, subject, body (HTML)}. With `after`: once
        there are more than `after` of them, or `wait` seconds later (a long poll, not a sleep)."""
        query = f"?after={after}&wait={wait:.2f}" if after is not None and wait > 0 else ""
        with urllib.request.urlopen(self.moto_url + SES_MESSAGES + query, timeout=30 + wait) as r:
            return json.load(r)["messages"]

    def wait_mail(self, done, timeout: float = 15.0) -> list:
        """The sent mail once `done(messages)` holds, else when `timeout` seconds have passed: each look waits
        for the next message to arrive instead of sleeping between looks."""
        deadline = time.monotonic() + timeout
        messages = self.sent_mail()
        while not done(messages) and (left := deadline - time.monotonic()) > 0:
            messages = self.sent_mail(after=len(messages), wait=min(left, 10.0))
        return messages

    def chat_messages(self) -> list:
        """Every message the chat stand-in accepted: {channel, kind, receivedAt, body, signature}."""
        with urllib.request.urlopen(f"{self.chat_url}/messages.json", timeout=30) as r:
            return json.load(r)["messages"]

    def chat_fail(self, count: int) -> None:
        """The chat stand-in answers the next `count` deliveries with 500."""
        req = urllib.request.Request(f"{self.chat_url}/control/fail", data=json.dumps({"count": count}).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200, r.status

    # ------------------------------------------------------------------ Web Push
    @property
    def vapid_key(self) -> dict:
        """This stack's VAPID key: a fresh private EC P-256 JWK (VAPID_KEY), made on first use; its own key, not
        the key ring's (a device's subscription is bound to it)."""
        if not getattr(self, "_vapid_key", None):
            import jwt
            from cryptography.hazmat.primitives.asymmetric import ec
            self._vapid_key = {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()))),
                               "kid": "ringi-vapid-" + secrets.token_hex(4)}
        return self._vapid_key

    def push_vars(self) -> dict:
        """What turns Web Push on in a worker: the VAPID key and the contact a push service may write to (the
        stand-in is on loopback, which the worker allows only because PUBLIC_BASE_URL is loopback too)."""
        return {"VAPID_KEY": json.dumps(self.vapid_key), "VAPID_SUBJECT": "mailto:ops@example.com"}

    def start_pushbox(self) -> str:
        """The push stand-in (standins/pushbox.py), started once; its URL."""
        if any(p.name == "pushbox" and p.popen.poll() is None for p in self.procs):
            return self.push_url
        self.ports.push = self.ports.push or free_port()
        p = self._spawn("pushbox", [sys.executable, str(ROOT / "standins/pushbox.py"), "--port", str(self.ports.push)],
                        env={"PYTHONUNBUFFERED": "1"})
        self._wait(p, lambda: http_ok(f"{self.push_url}/healthz"), 30)
        return self.push_url

    def push_subscription(self) -> dict:
        """A new test subscription at the push stand-in: {endpoint, keys: {p256dh, auth}} (it keeps the private key)."""
        req = urllib.request.Request(f"{self.push_url}/subscriptions", data=b"{}", method="POST",
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def push_messages(self) -> list:
        """Every message the push stand-in accepted (VAPID verified, decrypted): {subscription, endpoint, ttl,
        urgency, topic, vapid: {claims, k}, payload}."""
        with urllib.request.urlopen(f"{self.push_url}/messages.json", timeout=30) as r:
            return json.load(r)["messages"]

    def push_control(self, what: str, body: dict) -> None:
        """`fail` {count, status}: the next deliveries fail; `gone` {endpoint}: that subscription answers 410."""
        req = urllib.request.Request(f"{self.push_url}/control/{what}", data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200, r.status

    def log_lines(self, log: str, *markers: str, count: int = 1, timeout: float = 10.0) -> list[str]:
        """The lines of component `log`'s log holding every marker, once there are `count` of them (or when
        `timeout` has passed). workerd's console output reaches the log after the response that caused it, so a
        test reading it at once can miss the last line."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in (self.state / f"{log}.log").read_text(errors="replace").splitlines()
                     if all(m in line for m in markers)]
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)


def env_quote(value: str) -> str:
    """One value of an env file as wrangler reads it: double quotes, except for a value with double quotes in it
    (CHAT_CHANNELS' JSON), which goes in single quotes (taken literally; dotenv does not unescape `\\"`)."""
    if '"' in value and "'" not in value and "\n" not in value:
        return f"'{value}'"
    return json.dumps(value)


def _kill_group(pid: int, sig=signal.SIGTERM) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def fresh_state(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path

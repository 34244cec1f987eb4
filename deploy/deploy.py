#!/usr/bin/env python3
"""`make deploy`: ringi on Cloudflare (worker, D1, custom domain) and AWS (one CloudFormation stack).

    python3 deploy/deploy.py [--dry-run] [--rotate] [--settings deploy/ringi.env]

Reads deploy/ringi.env (documented in deploy/ringi.env.example and docs/deploy.md); credentials come from the
environment: the AWS CLI's usual chain, and CLOUDFLARE_API_TOKEN / CLOUDFLARE_ACCOUNT_ID for wrangler.
Every step is idempotent and a re-run finishes what a failed run left. The registration API key and the
worker's AWS secret key (and the chat channels' CHAT_CHANNELS, read from CHAT_CHANNELS_FILE) only ever travel on
a child's stdin: never on argv, in output, or in a file.
Python standard library only.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ROOT / "deploy" / "ringi.env"
WRANGLER_CONFIG = "edge/wrangler.production.json"  # in edge/: wrangler resolves main/assets/migrations from it
TEMPLATE_FILE = ".ringi/deploy/ringi.yaml"
TEMPLATE_BODY_LIMIT = 51_200  # CloudFormation's inline TemplateBody limit, in bytes
API_KEY_TAG = "ringi:api-key-sha256"  # stack tag: SHA-256 of the key the EventBridge connection holds
AWS_KEY_SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
SECRET_NAMES = (*AWS_KEY_SECRETS, "REGISTER_API_KEYS")
SIGNING_SECRET = "SIGNING_KEY"  # ringi's key ring (receipts; federation's tokens): made once, kept across deploys
# Web Push's VAPID key: made once, kept across deploys, never rotated with the ring (the devices' subscriptions are
# bound to it: a new one would silently unsubscribe every phone).
VAPID_SECRET = "VAPID_KEY"
MEMBER_TEMPLATE = "deploy/aws/member.yaml"
CALLBACK_ROLE = "ringi-callback"  # member.yaml's RoleName default: the same name in every account
CHAT_SECRET = "CHAT_CHANNELS"  # optional (CHAT_CHANNELS_FILE): stored when set, never required
OUTPUTS = ("UserPoolId", "CognitoIssuer", "CognitoDomain", "SpaClientId", "RegisterScope", "EventBusName", "ConnectionArn", "ApiDestinationArn", "DeadLetterQueueUrl", "AwsRegion", "MailFrom",
           "FederationIssuerHost", "FederationAudience")
# Absent when their resource is not created: "".
# WorkerRoleArn (federation) or WorkerUserName (access-key): the worker's AWS identity.
OPTIONAL_OUTPUTS = ("RegisterClientIds", "StateMachineArn", "ApprovalsTableName", "DynamoDbStateMachineArn",
                    "WorkerRoleArn", "WorkerUserName")
STABLE = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"}  # outputs readable, updates allowed
NO_CHANGES = ("didn't contain changes", "No updates are to be performed")

# ─── settings ──────────────────────────────────────────────────────────────────────────────────────────────

HOST = r"(?=.{4,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}"
EMAIL = r"[^@\s\"<>,]+@" + HOST
GROUP = r"[A-Za-z0-9_.@+=-]{1,128}"
PROVIDER = r"[^\s,_]{1,32}"  # Cognito's rule for provider names, plus no ','
REGION = r"[a-z]{2}(-[a-z]+)+-\d"
# ACCOUNT:REGION[+REGION…][@PROFILE]: the account's regions, and the AWS CLI profile that deploys its member stack
MEMBER = rf"\d{{12}}:{REGION}(\+{REGION})*(@[A-Za-z0-9_.-]{{1,64}})?"
IAM_ARN = r"arn:aws[a-z-]*:iam::\d{12}:(role|user)/[A-Za-z0-9+=.@_/*-]{1,512}"  # a role or user ('*': wildcard)


@dataclass(frozen=True)
class Key:
    name: str
    default: str | None  # None: required; "": may stay empty, or derive() fills it in
    pattern: str
    hint: str


KEYS = (
    Key("RINGI_NAME", "ringi", r"[a-z][a-z0-9-]{0,31}", "lower-case letters, digits and '-', at most 32"),
    Key("AWS_REGION", None, r"[a-z]{2}(-[a-z]+)+-\d", "an AWS region such as eu-central-1"),
    Key("AWS_ACCOUNT_ID", "", r"|\d{12}", "empty, or the 12-digit account the stack must go to"),
    Key("PUBLIC_HOST", None, HOST, "a lower-case host name on a Cloudflare zone, without https:// or a path"),
    Key("COGNITO_DOMAIN_PREFIX", None, r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?",
        "lower-case letters, digits and '-' (Cognito refuses 'aws', 'amazon' and 'cognito' in it)"),
    Key("MAIL_FROM", None, EMAIL, "the sender address, e.g. ringi@example.com"),
    Key("MAIL_IDENTITY", "", rf"|{HOST}|{EMAIL}", "the verified SES identity (domain or address); default: "
        "MAIL_FROM's domain"),
    Key("APPROVER_GROUPS", "release-approvers", rf"{GROUP}(,{GROUP}){{0,4}}",
        "1-5 Cognito group names, comma-separated"),
    Key("IDENTITY_PROVIDERS", "COGNITO", rf"{PROVIDER}(,{PROVIDER})*", "COGNITO and/or names of identity "
        "providers of the user pool (no spaces or '_'), comma-separated, e.g. COGNITO,Corp"),
    Key("STATE_MACHINE_NAME_PREFIX", "ringi-", r"[A-Za-z0-9_-]{1,64}", "letters, digits, '_' and '-'"),
    Key("EVENT_BUS_NAME", "default", r"[A-Za-z0-9._/-]{1,256}", "an event bus name (not an ARN)"),
    Key("API_DESTINATION_RATE_LIMIT", "10", r"[1-9]\d{0,2}", "registrations per second, 1-300"),
    Key("ENABLE_CLIENT_CREDENTIALS", "false", r"true|false", "true or false"),
    Key("CREATE_EXAMPLE_STATE_MACHINE", "true", r"true|false", "true or false"),
    Key("STORAGE", "d1", r"d1|dynamodb", "d1 or dynamodb (the approvals table the stack creates)"),
    Key("DEAD_LETTER_QUEUE_READERS", "", rf"|{IAM_ARN}(,{IAM_ARN})*", "empty (the account root only), or the ARNs "
        "of the IAM roles or users that may read the dead-letter queue, comma-separated ('*' as a wildcard)"),
    Key("D1_DATABASE_NAME", "", r"|[a-z0-9][a-z0-9-]{0,63}", "lower-case letters, digits and '-'; default: "
        "RINGI_NAME"),
    Key("WORKER_NAME", "", r"|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", "lower-case letters, digits and '-'; "
        "default: RINGI_NAME"),
    Key("D1_LOCATION", "", r"|wnam|enam|weur|eeur|apac|oc", "empty (near whoever deploys), or the D1 location hint "
        "where most approvers are: wnam, enam, weur, eeur, apac or oc"),
    Key("DEFAULT_LOCALE", "en", r"en|ja", "en or ja"),
    Key("MAIL_ALLOWED_DOMAINS", "", rf"|{HOST}(,{HOST})*", "empty, or domains separated by ',' (no spaces)"),
    Key("TOKEN_USE", "id", r"id|access", "id (email approvers work) or access"),
    # Sign-in with another OpenID Connect provider instead of the stack's user pool (docs/deploy.md).
    Key("OIDC_ISSUER", "", r"|https://[^\s]+", "empty (the stack's Cognito user pool), or the provider's issuer URL, "
        "https://…"),
    Key("OIDC_CLIENT_ID", "", r"|[^\s,]+", "the client (application) id registered at the provider"),
    Key("OIDC_AUDIENCE", "", r"|[^\s,]+", "empty (the client id), or what the access tokens' aud must contain"),
    Key("GROUPS_CLAIM", "", r"|[^\s]+", "empty (cognito:groups, or groups with OIDC_ISSUER), or a claim name or "
        "dotted path such as roles or https://example.com/groups"),
    Key("SCOPE_CLAIM", "", r"|scope|scp", "empty (scope), scope or scp"),
    Key("EMAIL_VERIFIED", "", r"|require|trust", "empty (require), require or trust"),
    Key("SIGN_IN_SCOPES", "", r"|[^\n]*\bopenid\b[^\n]*", "empty (openid email profile), or space-separated "
        "scopes including openid"),
    Key("ADMIN_GROUP", "", rf"|{GROUP}", "empty (nobody is an operator), or the operators' group"),
    Key("ON_EXPIRY_LEAD_SECONDS", "600", r"[1-9]\d{0,4}", "seconds, 1-86400"),
    Key("AUDIT_RETENTION_DAYS", "400", r"[1-9]\d{0,3}", "days, 1-3660"),
    # How the worker answers the workflows' tasks: federation (a token it signs, the accounts' callback roles) or
    # access-key (the fallback: the stack's IAM user key, one account, AWS_REGION).
    Key("CALLBACK_CREDENTIALS", "federation", r"federation|access-key", "federation or access-key"),
    Key("MEMBER_ACCOUNTS", "", rf"|{MEMBER}(,{MEMBER})*", "empty (the stack's account only), or "
        "ACCOUNT:REGION[+REGION…][@PROFILE] entries, comma-separated, e.g. 111122223333:eu-west-1+us-east-1@team-a"),
    Key("CHAT_CHANNELS_FILE", "", r"|[^\s'\"]+", "empty, or the path (absolute, or from the checkout) of the "
        "JSON file of chat channels stored as the worker secret CHAT_CHANNELS (docs/deploy.md)"),
)
# Only with OIDC_ISSUER: the worker refuses them for a Cognito user pool.
OIDC_ONLY = ("OIDC_CLIENT_ID", "OIDC_AUDIENCE")
LISTS = ("APPROVER_GROUPS", "IDENTITY_PROVIDERS")  # comma-separated: CommaDelimitedList parameters
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
               "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_KEY", "CLOUDFLARE_EMAIL")


class SettingsError(Exception):
    pass


def parse_dotenv(text: str) -> dict[str, str]:
    """KEY=value lines; '#' comments; values may be quoted ('…' literal, "…" with \\" and \\\\)."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)", line)
        if not m:
            raise SettingsError(f"line {number}: expected KEY=value")
        key, raw = m.groups()
        if key in values:
            raise SettingsError(f"line {number}: {key} is set twice")
        values[key] = unquote(raw, number)
    return values


def unquote(raw: str, number: int) -> str:
    """'…' is literal, "…" takes \\" and \\\\; a comment may follow the closing quote."""
    if m := re.fullmatch(r"'([^']*)'\s*(?:#.*)?", raw):
        return m[1]
    if m := re.fullmatch(r'"((?:[^"\\]|\\.)*)"\s*(?:#.*)?', raw):
        return re.sub(r"\\(.)", r"\1", m[1])
    if raw[:1] in ("'", '"'):
        raise SettingsError(f"line {number}: unterminated quote")
    return re.sub(r"\s+#.*$", "", raw).strip()


def load_settings(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise SettingsError(f"not found: copy deploy/ringi.env.example to {path} and fill it in")
    raw = parse_dotenv(path.read_text(encoding="utf-8"))
    if leaked := sorted(set(raw) & set(CREDENTIALS)):
        raise SettingsError(f"{', '.join(leaked)}: credentials come from the environment, never from this file")
    known = {k.name for k in KEYS}
    if unknown := sorted(set(raw) - known):
        raise SettingsError(f"unknown key {unknown[0]} (known: {', '.join(sorted(known))})")
    s = {}
    for k in KEYS:
        value = raw.get(k.name, "").strip()
        if k.name in LISTS:
            value = ",".join(item.strip() for item in value.split(","))
        if not value:
            if k.default is None:
                raise SettingsError(f"{k.name} is required: {k.hint}")
            value = k.default
        if not re.fullmatch(k.pattern, value):
            raise SettingsError(f"{k.name}={value!r} is invalid: {k.hint}")
        s[k.name] = value
    return derive(s)


def derive(s: dict[str, str]) -> dict[str, str]:
    """Defaults that depend on other keys, and the rules that span keys."""
    s["MAIL_IDENTITY"] = s["MAIL_IDENTITY"] or s["MAIL_FROM"].split("@", 1)[1]
    s["D1_DATABASE_NAME"] = s["D1_DATABASE_NAME"] or s["RINGI_NAME"]
    s["WORKER_NAME"] = s["WORKER_NAME"] or s["RINGI_NAME"]
    providers = s["IDENTITY_PROVIDERS"].split(",")
    if len(set(providers)) < len(providers):
        raise SettingsError("IDENTITY_PROVIDERS names a provider twice")
    for key, high in (("API_DESTINATION_RATE_LIMIT", 300), ("ON_EXPIRY_LEAD_SECONDS", 86_400),
                      ("AUDIT_RETENTION_DAYS", 3660)):
        if not 1 <= int(s[key]) <= high:
            raise SettingsError(f"{key} must be 1-{high}")
    if bad := re.search("aws|amazon|cognito", s["COGNITO_DOMAIN_PREFIX"]):
        raise SettingsError(f"COGNITO_DOMAIN_PREFIX must not contain {bad[0]!r} (Cognito refuses it)")
    if s["OIDC_ISSUER"]:
        if s["ENABLE_CLIENT_CREDENTIALS"] == "true":
            raise SettingsError("ENABLE_CLIENT_CREDENTIALS=true makes Cognito machine tokens, which a worker signing in "
                                "with OIDC_ISSUER does not accept: workflows register with the API key")
        if not s["OIDC_CLIENT_ID"]:
            raise SettingsError("OIDC_CLIENT_ID is required with OIDC_ISSUER (the client registered at the provider)")
        if s["TOKEN_USE"] == "id" and s["OIDC_AUDIENCE"] not in ("", s["OIDC_CLIENT_ID"]):
            raise SettingsError("OIDC_AUDIENCE must be empty with TOKEN_USE=id (an ID token's aud is the client)")
    else:
        for key in OIDC_ONLY:
            if s[key]:
                raise SettingsError(f"{key} is for OIDC_ISSUER; the stack's user pool has its own client")
        if s["SCOPE_CLAIM"] == "scp":
            raise SettingsError("SCOPE_CLAIM=scp is for OIDC_ISSUER: Cognito tokens carry scope")
        if s["EMAIL_VERIFIED"] == "trust":
            raise SettingsError("EMAIL_VERIFIED=trust is for OIDC_ISSUER: Cognito sends email_verified")
    if s["MEMBER_ACCOUNTS"] and s["CALLBACK_CREDENTIALS"] != "federation":
        raise SettingsError("MEMBER_ACCOUNTS needs CALLBACK_CREDENTIALS=federation: the access key answers one account")
    members = [m.split(":", 1)[0] for m in s["MEMBER_ACCOUNTS"].split(",") if m]
    if len(set(members)) < len(members):
        raise SettingsError("MEMBER_ACCOUNTS names an account twice")
    identity, sender = s["MAIL_IDENTITY"], s["MAIL_FROM"]
    domain = sender.split("@", 1)[1]
    if identity != sender and not (domain == identity or domain.endswith("." + identity)):
        raise SettingsError(f"MAIL_FROM {sender} is not covered by MAIL_IDENTITY {identity}")
    return s


CHANNEL_NAME = r"[a-z0-9][a-z0-9._-]{0,63}"
CHANNEL_KINDS = ("slack", "teams", "webhook")


def load_chat_channels(root: Path, s: dict[str, str]) -> str | None:
    """CHAT_CHANNELS_FILE, checked by the worker's rules (core/src/adapters/chat.rs: a bad value would fail every request
    of the worker) and compacted; None when not set. Errors name the channel, never its URL or secret."""
    if not s["CHAT_CHANNELS_FILE"]:
        return None
    path = Path(s["CHAT_CHANNELS_FILE"])
    path = path if path.is_absolute() else root / path
    try:
        channels = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SettingsError(f"CHAT_CHANNELS_FILE: cannot read {path}: {e.strerror}") from None
    except ValueError:
        raise SettingsError(f"CHAT_CHANNELS_FILE: {path} is not JSON") from None
    if not isinstance(channels, dict):
        raise SettingsError('CHAT_CHANNELS_FILE: must be a JSON object {"name": {"kind": …, "url": …}}')
    for name, ch in channels.items():
        where = f"CHAT_CHANNELS_FILE: channel {name!r}"
        if not re.fullmatch(CHANNEL_NAME, name):
            raise SettingsError(f"{where}: a name is 1-64 of a-z, 0-9, '.', '_', '-' (starting with a letter or digit)")
        if not isinstance(ch, dict) or set(ch) - {"kind", "url", "secret"} or ch.get("kind") not in CHANNEL_KINDS:
            raise SettingsError(f'{where}: must be {{"kind": "slack"|"teams"|"webhook", "url": "https://…", '
                                f'"secret": "…" (webhook only)}}')
        if not isinstance(ch.get("url"), str) or not re.fullmatch(r"https://[^\s/]+(/\S*)?", ch["url"].strip()):
            raise SettingsError(f"{where}: url must be an https:// URL")
        secret = ch.get("secret")
        if ch["kind"] == "webhook" and not (isinstance(secret, str) and len(secret.strip().encode()) >= 16):
            raise SettingsError(f"{where}: a webhook channel needs a signing secret of at least 16 bytes")
        if ch["kind"] != "webhook" and secret is not None:
            raise SettingsError(f"{where}: only webhook channels are signed; a {ch['kind']} channel takes no secret")
    return json.dumps(channels, separators=(",", ":"), sort_keys=True)


# ─── running commands ──────────────────────────────────────────────────────────────────────────────────────


class StepError(Exception):
    """A step cannot go on; the message says why and, where it helps, what to do."""


class CommandFailed(StepError):
    def __init__(self, argv: list[str], code: int, output: str):
        self.argv, self.code, self.output = argv, code, output
        tail = "\n".join("    " + line for line in output.strip().splitlines()[-25:])
        super().__init__(f"`{shlex.join(argv)}` exited with {code}" + (f":\n{tail}" if tail else ""))


class Runner:
    """Runs the CLIs. Output is captured and scrubbed of every secret this run handled before it is shown."""

    def __init__(self, root: Path):
        self.root = root
        self.secrets: set[str] = set()
        # WRANGLER_LOG_SANITIZE: wrangler's debug log file (WRANGLER_LOG_PATH; .ringi/wrangler-logs under make)
        # would otherwise get the API request bodies, `secret bulk`'s values included.
        self.env = {**os.environ, "AWS_PAGER": "", "WRANGLER_SEND_METRICS": "false", "WRANGLER_LOG_SANITIZE": "true"}

    def secret(self, value: str) -> str:
        self.secrets.add(value)
        return value

    def redact(self, text: str) -> str:
        for value in self.secrets:
            text = text.replace(value, "[redacted]")
        return text

    def __call__(self, argv: list[str], stdin: str | None = None, stream: bool = False) -> str:
        pipe = None if stream else subprocess.PIPE
        try:
            proc = subprocess.run(argv, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                                  stdout=pipe, stderr=pipe, text=True, cwd=self.root, env=self.env)
        except OSError as e:
            raise CommandFailed(argv, 127, str(e)) from None
        if proc.returncode:
            raise CommandFailed([self.redact(a) for a in argv], proc.returncode,
                                self.redact((proc.stdout or "") + (proc.stderr or "")))
        return proc.stdout or ""


def parse_json_output(text: str):
    """The JSON document in a CLI's stdout, after any banner lines wrangler may print first."""
    for m in re.finditer(r"^[\[{]", text, re.M):
        try:
            return json.JSONDecoder().raw_decode(text, m.start())[0]
        except json.JSONDecodeError:
            continue
    raise StepError(f"expected JSON output, got: {text.strip()[:200]!r}")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ─── the deployment ────────────────────────────────────────────────────────────────────────────────────────


@dataclass
class Deploy:
    root: Path
    s: dict[str, str]  # the settings
    run: Runner
    dry_run: bool = False
    rotate: bool = False
    skip_build: bool = False
    check_base: str | None = None
    check_timeout: float = 300.0
    key_grace: float = 10.0
    template: str = ""
    stack: dict | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    creating: bool = False  # step 3 creates the stack (with a new API key) rather than updating it
    api_key: str | None = None  # that new key, once the stack holds it
    db_id: str | None = None
    chat_channels: str | None = None  # CHAT_CHANNELS_FILE's JSON (a secret), when set
    account: str = ""  # the stack's account, from the credentials
    targets: dict = field(default_factory=dict)  # AWS_TARGETS (CALLBACK_CREDENTIALS=federation)

    def say(self, text: str) -> None:
        print(f"    {text}", flush=True)

    def aws(self, *args: str, stdin: str | None = None, region: str | None = None, profile: str | None = None) -> dict:
        out = self.run(["aws", *args, *(["--profile", profile] if profile else []),
                        "--region", region or self.s["AWS_REGION"], "--output", "json"], stdin=stdin)
        return json.loads(out) if out.strip() else {}

    @property
    def federation(self) -> bool:
        return self.s["CALLBACK_CREDENTIALS"] == "federation"

    def wrangler(self, *args: str, stdin: str | None = None) -> str:
        return self.run(["wrangler", *args, "--config", WRANGLER_CONFIG, "--env", "production"], stdin=stdin)

    @property
    def stack_name(self) -> str:
        return self.s["RINGI_NAME"]

    @property
    def base_url(self) -> str:
        return f"https://{self.s['PUBLIC_HOST']}"

    def plan(self, text: str) -> bool:
        """Print what a mutating action does; True when it should be carried out (not a dry run)."""
        self.say(("would " if self.dry_run else "") + text)
        return not self.dry_run


# 1 ─ preflight


def step_preflight(d: Deploy) -> str | None:
    missing = [tool for tool in ("aws", "wrangler") if not shutil.which(tool, path=d.run.env.get("PATH"))]
    if missing:
        raise StepError(f"{' and '.join(missing)} not found on PATH: install the AWS CLI v2 and run `make "
                        "bootstrap` (wrangler comes from node_modules/.bin; `make deploy` puts it on PATH)")
    who = d.aws("sts", "get-caller-identity")
    if d.s["AWS_ACCOUNT_ID"] and who.get("Account") != d.s["AWS_ACCOUNT_ID"]:
        raise StepError(f"the AWS credentials belong to account {who.get('Account')}, AWS_ACCOUNT_ID says "
                        f"{d.s['AWS_ACCOUNT_ID']}")
    d.account = who.get("Account", "")
    try:
        cloudflare = parse_json_output(d.run(["wrangler", "whoami", "--json"]))
    except CommandFailed as e:  # --json exits non-zero when not signed in
        raise StepError(f"wrangler is not signed in: export CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID\n{e}") \
            from None
    accounts = {a.get("id"): a.get("name") for a in cloudflare.get("accounts", [])}
    account = os.environ.get("CLOUDFLARE_ACCOUNT_ID") or (next(iter(accounts)) if len(accounts) == 1 else None)
    if account is None:
        raise StepError(f"export CLOUDFLARE_ACCOUNT_ID: the token sees several accounts ({', '.join(accounts)})")
    if account not in accounts:
        raise StepError(f"CLOUDFLARE_ACCOUNT_ID {account} is not one of the token's accounts")
    return f"AWS account {who.get('Account')} as {who.get('Arn')}; Cloudflare account {accounts[account]} ({account})"


# 2 ─ build


def step_build(d: Deploy) -> str | None:
    if d.dry_run or d.skip_build:
        return "skipped (" + ("dry run" if d.dry_run else "--skip-build") + ")"
    d.run(["make", "build"], stream=True)
    return "built"


# 3 ─ stack


def render_template(root: Path) -> str:
    spec = importlib.util.spec_from_file_location("ringi_render", root / "deploy" / "aws" / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.render(root)
    if (size := len(text.encode())) > TEMPLATE_BODY_LIMIT:
        raise StepError(f"the rendered template is {size} bytes; CloudFormation takes at most "
                        f"{TEMPLATE_BODY_LIMIT} bytes inline (TemplateBody)")
    return text


def describe_stack(d: Deploy) -> dict | None:
    try:
        return d.aws("cloudformation", "describe-stacks", "--stack-name", d.stack_name)["Stacks"][0]
    except CommandFailed as e:
        if "does not exist" in e.output:
            return None
        raise


def stack_tag(stack: dict | None, key: str) -> str | None:
    return next((t["Value"] for t in (stack or {}).get("Tags", []) if t["Key"] == key), None)


def stack_parameters(d: Deploy) -> dict[str, str]:
    s = d.s
    return {"AppName": s["RINGI_NAME"], "PublicBaseUrl": d.base_url, "CognitoDomainPrefix": s["COGNITO_DOMAIN_PREFIX"],
            "MailFromAddress": s["MAIL_FROM"], "MailIdentity": s["MAIL_IDENTITY"],
            "ApproverGroups": s["APPROVER_GROUPS"], "IdentityProviders": s["IDENTITY_PROVIDERS"],
            "StateMachineNamePrefix": s["STATE_MACHINE_NAME_PREFIX"], "EventBusName": s["EVENT_BUS_NAME"],
            "ApiDestinationRateLimit": s["API_DESTINATION_RATE_LIMIT"],
            "EnableClientCredentials": s["ENABLE_CLIENT_CREDENTIALS"],
            "CreateExampleStateMachine": s["CREATE_EXAMPLE_STATE_MACHINE"], "ApprovalsStorage": s["STORAGE"],
            "DeadLetterQueueReaders": s["DEAD_LETTER_QUEUE_READERS"], "WorkerCredentials": s["CALLBACK_CREDENTIALS"]}


def stack_differences(d: Deploy) -> list[str]:
    """What an update would change, from read-only calls (the change set itself decides)."""
    current = d.aws("cloudformation", "get-template", "--stack-name", d.stack_name).get("TemplateBody")
    changed = ["template"] if current != d.template else []
    deployed = {p["ParameterKey"]: p.get("ParameterValue") for p in d.stack.get("Parameters", [])}
    return changed + [k for k, v in stack_parameters(d).items() if deployed.get(k) != v]


def new_api_key(d: Deploy) -> str:
    return d.run.secret("rk_" + secrets.token_urlsafe(32))


def create_change_set(d: Deploy, name: str, create: bool, api_key: str | None) -> None:
    """The parameters (with the key) go on the CLI's stdin. Not `--cli-input-json file:///dev/stdin`: the CLI
    reads that file twice, and from a pipe the second read is empty."""
    params = [{"ParameterKey": k, "ParameterValue": v} for k, v in stack_parameters(d).items()]
    params.append({"ParameterKey": "RegistrationApiKey",
                   **({"ParameterValue": api_key} if api_key else {"UsePreviousValue": True})})
    tags = {t["Key"]: t["Value"] for t in (d.stack or {}).get("Tags", []) if not t["Key"].startswith("aws:")}
    if api_key:
        tags[API_KEY_TAG] = sha256(api_key)
    template = d.root / TEMPLATE_FILE
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_text(d.template, encoding="utf-8")
    d.aws("cloudformation", "create-change-set", "--stack-name", d.stack_name, "--change-set-name", name,
          "--change-set-type", "CREATE" if create else "UPDATE", "--template-body", template.as_uri(),
          "--parameters", "file:///dev/stdin", "--capabilities", "CAPABILITY_NAMED_IAM",
          "--tags", json.dumps([{"Key": k, "Value": v} for k, v in tags.items()]), stdin=json.dumps(params))


def change_stack(d: Deploy, api_key: str | None) -> bool:
    """One change set: create, wait, execute, wait. `api_key` None keeps the connection's key. False: no
    changes (the empty change set is deleted)."""
    create = d.stack is None or d.stack["StackStatus"] == "REVIEW_IN_PROGRESS"
    name = f"{d.stack_name}-{time.strftime('%Y%m%d%H%M%S')}"
    create_change_set(d, name, create, api_key)
    ids = ("--stack-name", d.stack_name, "--change-set-name", name)
    try:
        d.aws("cloudformation", "wait", "change-set-create-complete", *ids)
    except CommandFailed as e:
        reason = d.aws("cloudformation", "describe-change-set", *ids).get("StatusReason", "")
        if any(text in reason for text in NO_CHANGES):
            d.aws("cloudformation", "delete-change-set", *ids)
            return False
        raise StepError(f"change set {name} failed: {reason or e}") from None
    d.aws("cloudformation", "execute-change-set", *ids)
    try:
        d.aws("cloudformation", "wait", "stack-create-complete" if create else "stack-update-complete",
              "--stack-name", d.stack_name)
    except CommandFailed as e:
        stack = describe_stack(d) or {}
        raise StepError(f"{e}\n    the stack is {stack.get('StackStatus', 'gone')}: "
                        f"{stack.get('StackStatusReason', '')} (details: aws cloudformation describe-stack-events "
                        f"--stack-name {d.stack_name})") from None
    return True


def remove_failed_stack(d: Deploy) -> None:
    """A first create that failed leaves ROLLBACK_COMPLETE, which can only be deleted (it holds nothing)."""
    if d.plan(f"delete the failed stack {d.stack_name} (ROLLBACK_COMPLETE) and create it again"):
        d.aws("cloudformation", "delete-stack", "--stack-name", d.stack_name)
        d.aws("cloudformation", "wait", "stack-delete-complete", "--stack-name", d.stack_name)
    d.stack = None


def step_stack(d: Deploy) -> str | None:
    d.template = render_template(d.root)
    d.stack = describe_stack(d)
    status = d.stack and d.stack["StackStatus"]
    if status and status not in STABLE | {"REVIEW_IN_PROGRESS", "ROLLBACK_COMPLETE"}:
        raise StepError(f"stack {d.stack_name} is {status}: wait until it settles (a *_FAILED state needs the "
                        "CloudFormation console or `aws cloudformation continue-update-rollback`), then re-run")
    if status not in STABLE:  # a new stack, so a new user pool: it has no identity provider yet
        if federated := [p for p in d.s["IDENTITY_PROVIDERS"].split(",") if p != "COGNITO"]:
            raise StepError(f"IDENTITY_PROVIDERS names {', '.join(federated)}, which a new user pool does not have "
                            "yet: deploy with IDENTITY_PROVIDERS=COGNITO first, add the provider to the pool, "
                            "then deploy again (docs/deploy.md)")
        if status == "ROLLBACK_COMPLETE":
            remove_failed_stack(d)
        d.creating = True
        if d.plan(f"create the stack ({len(d.template.encode())}-byte template; a new registration API key "
                  "for its EventBridge connection)"):
            key = new_api_key(d)
            change_stack(d, key)
            d.api_key = key
            return "created"
        return None
    # Nothing differs → no change set at all (a second run creates nothing).
    if not (differences := stack_differences(d)):
        return f"{status}; template and parameters as deployed, nothing to do"
    retire_access_key(d)
    if d.plan(f"update the stack by change set ({', '.join(differences)} changed; registration API key kept)"):
        return "updated" if change_stack(d, None) else "CloudFormation found no changes"
    return None


def retire_access_key(d: Deploy) -> None:
    """Switching an access-key deployment to federation: the update removes the IAM user, which CloudFormation
    cannot delete while it has access keys. So first the worker forgets the key, then IAM deletes it; the worker
    (holding its signing key already: it signs receipts in either mode) mails and answers again once it holds
    AWS_TARGETS and AWS_ROLE_ARN (steps config to deploy)."""
    user = next((o.get("OutputValue") for o in d.stack.get("Outputs", []) if o["OutputKey"] == "WorkerUserName"), None)
    if not d.federation or not user:
        return
    stored = sorted(set(AWS_KEY_SECRETS) & worker_secret_names(d, by_name=True))
    keys = access_keys(d, user)
    if not stored and not keys:
        return
    what = ([f"remove {', '.join(stored)} from worker {d.s['WORKER_NAME']}"] if stored else []) + \
        ([f"delete the {len(keys)} access key(s) of IAM user {user}"] if keys else [])
    if not d.plan(f"switch to federation: {' and '.join(what)}, before the stack update removes the user"):
        return
    for name in stored:
        d.run(["wrangler", "secret", "delete", name, "--name", d.s["WORKER_NAME"]], stdin="y\n")
    for key in keys:
        delete_access_key(d, user, key["AccessKeyId"])


# 4 ─ outputs


def step_outputs(d: Deploy) -> str | None:
    if not d.dry_run:
        d.stack = describe_stack(d)
    if not d.stack or d.stack["StackStatus"] not in STABLE:
        return "not available before the stack exists"
    d.outputs = dict.fromkeys(OPTIONAL_OUTPUTS, "") | {o["OutputKey"]: o.get("OutputValue", "")
                                                        for o in d.stack.get("Outputs", [])}
    if missing := [k for k in OUTPUTS if k not in d.outputs]:
        raise StepError(f"stack {d.stack_name} lacks the outputs {', '.join(missing)}: deploy/aws/ringi.yaml and "
                        "deploy/deploy.py disagree")
    identity = f"worker role {d.outputs['WorkerRoleArn']}" if d.outputs["WorkerRoleArn"] else \
        f"worker user {d.outputs['WorkerUserName']}"
    return f"issuer {d.outputs['CognitoIssuer']}, SPA client {d.outputs['SpaClientId']}, {identity}"


# 5 ─ member accounts


@dataclass(frozen=True)
class Member:
    account: str
    regions: tuple[str, ...]
    profile: str | None  # the AWS CLI profile whose credentials deploy its stack; None: the deployer's own


def members(d: Deploy) -> list[Member]:
    """MEMBER_ACCOUNTS, and the stack's own account (its workflows, the example state machine) in AWS_REGION
    unless listed there."""
    listed = []
    for entry in filter(None, d.s["MEMBER_ACCOUNTS"].split(",")):
        head, _, profile = entry.partition("@")
        account, regions = head.split(":", 1)
        listed.append(Member(account, tuple(regions.split("+")), profile or None))
    if d.account and all(m.account != d.account for m in listed):
        listed.insert(0, Member(d.account, (d.s["AWS_REGION"],), None))
    return listed


def member_stack_name(d: Deploy) -> str:
    return f"{d.s['RINGI_NAME']}-member"


def member_parameters(d: Deploy, m: Member) -> dict[str, str]:
    """member.yaml's parameters: the worker is the issuer (its host), with the audience it signs for (the central
    stack's outputs; before the stack exists, in a dry run, what they will say)."""
    return {"IssuerHost": d.outputs.get("FederationIssuerHost") or d.s["PUBLIC_HOST"],
            "Audience": d.outputs.get("FederationAudience") or "sts.amazonaws.com", "Regions": ",".join(m.regions),
            "RoleName": CALLBACK_ROLE, "StateMachineNamePrefix": d.s["STATE_MACHINE_NAME_PREFIX"]}


def deploy_member(d: Deploy, m: Member) -> str:
    """`aws cloudformation deploy` in the member account (idempotent: no changes, no change set); the role ARN
    from the stack's output."""
    region, name = m.regions[0], member_stack_name(d)  # IAM is global: the stack lives in the first region
    who = d.aws("sts", "get-caller-identity", region=region, profile=m.profile)
    if who.get("Account") != m.account:
        raise StepError(f"member account {m.account}: the credentials" + (f" of profile {m.profile}" if m.profile
                        else "") + f" belong to account {who.get('Account')}")
    overrides = [f"{k}={v}" for k, v in member_parameters(d, m).items()]
    d.run(["aws", "cloudformation", "deploy", "--stack-name", name, "--template-file",
           str(d.root / MEMBER_TEMPLATE), "--capabilities", "CAPABILITY_NAMED_IAM", "--no-fail-on-empty-changeset",
           "--parameter-overrides", *overrides, *(["--profile", m.profile] if m.profile else []),
           "--region", region, "--output", "json"])
    stack = d.aws("cloudformation", "describe-stacks", "--stack-name", name, region=region,
                  profile=m.profile)["Stacks"][0]
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])}
    if not outputs.get("RoleArn"):
        raise StepError(f"member stack {name} in {m.account} lacks the output RoleArn")
    return outputs["RoleArn"]


def step_members(d: Deploy) -> str | None:
    if not d.federation:
        return "CALLBACK_CREDENTIALS=access-key: the worker answers its own account with the access key"
    done = []
    for m in members(d):
        where = f"{m.account} ({', '.join(m.regions)}" + (f", profile {m.profile})" if m.profile else ")")
        if d.plan(f"deploy {MEMBER_TEMPLATE} as stack {member_stack_name(d)} in {where}: the OIDC provider for "
                  f"https://{d.s['PUBLIC_HOST']} and the role {CALLBACK_ROLE}"):
            role = deploy_member(d, m)
        else:  # the name member.yaml gives the role
            role = f"arn:aws:iam::{m.account}:role/{CALLBACK_ROLE}"
        d.targets[m.account] = {"roleArn": role, "regions": list(m.regions)}
        done.append(m.account)
    return f"AWS_TARGETS: {', '.join(done)}" if done else None


# 6 ─ D1


def find_database(d: Deploy) -> str | None:
    name = d.s["D1_DATABASE_NAME"]
    found = [db for db in parse_json_output(d.run(["wrangler", "d1", "list", "--json"])) if db.get("name") == name]
    if len(found) > 1:
        raise StepError(f"{len(found)} D1 databases are named {name}: keep one")
    return (found[0].get("uuid") or found[0].get("id")) if found else None


def step_d1(d: Deploy) -> str | None:
    name = d.s["D1_DATABASE_NAME"]
    d.db_id = find_database(d)
    if d.db_id:
        return f"exists: {d.db_id}"
    # Where D1's primary lives decides what every request pays (docs/benchmarks.md §8): near the approvers.
    location = d.s["D1_LOCATION"]
    if not d.plan(f"create D1 database {name}" + (f" (location hint {location})" if location else "")):
        return None
    # Its id is read back from the list, not from this text.
    d.run(["wrangler", "d1", "create", name, *(["--location", location] if location else [])])
    d.db_id = find_database(d)
    if not d.db_id:
        raise StepError(f"`wrangler d1 create {name}` succeeded but `wrangler d1 list --json` does not show it")
    return f"created: {d.db_id}"


# 7 ─ wrangler config


def sign_in_vars(d: Deploy) -> dict[str, str]:
    """Who signs people in: the stack's Cognito user pool, or the OpenID Connect provider of OIDC_ISSUER (then the
    Cognito variables are written empty, which the worker reads as unset)."""
    o, s = d.outputs, d.s
    mapping = {k: s[k] for k in ("GROUPS_CLAIM", "SCOPE_CLAIM", "EMAIL_VERIFIED", "SIGN_IN_SCOPES")}
    if s["OIDC_ISSUER"]:
        return {"OIDC_ISSUER": s["OIDC_ISSUER"], "OIDC_CLIENT_ID": s["OIDC_CLIENT_ID"],
                "OIDC_AUDIENCE": s["OIDC_AUDIENCE"], "COGNITO_ISSUER": "", "COGNITO_CLIENT_ID": "",
                "COGNITO_DOMAIN": "", **mapping}
    domain = o["CognitoDomain"] if "://" in o["CognitoDomain"] else f"https://{o['CognitoDomain']}"
    return {"COGNITO_ISSUER": o["CognitoIssuer"], "COGNITO_CLIENT_ID": o["SpaClientId"], "COGNITO_DOMAIN": domain,
            **mapping}


def worker_vars(d: Deploy) -> dict[str, str]:
    o = d.outputs
    return {"PUBLIC_BASE_URL": d.base_url, **sign_in_vars(d), "TOKEN_USE": d.s["TOKEN_USE"],
            "REGISTER_SCOPE": o["RegisterScope"], "REGISTER_CLIENT_IDS": o["RegisterClientIds"],
            "AWS_REGION": o["AwsRegion"], "MAIL_FROM": o["MailFrom"], "DEFAULT_LOCALE": d.s["DEFAULT_LOCALE"],
            "MAIL_ALLOWED_DOMAINS": d.s["MAIL_ALLOWED_DOMAINS"], "ADMIN_GROUP": d.s["ADMIN_GROUP"],
            "ON_EXPIRY_LEAD_SECONDS": d.s["ON_EXPIRY_LEAD_SECONDS"],
            "AUDIT_RETENTION_DAYS": d.s["AUDIT_RETENTION_DAYS"],
            **({"AWS_TARGETS": json.dumps(d.targets, separators=(",", ":"), sort_keys=True),
                "AWS_ROLE_ARN": worker_role_arn(d)} if d.federation else {}),
            # STORAGE=dynamodb: the stack's table (the worker's policy names it and its index only).
            **({"STORAGE": "dynamodb", "DYNAMODB_TABLE": o["ApprovalsTableName"], "DYNAMODB_INDEX": "byApprover"}
               if d.s.get("STORAGE") == "dynamodb" else {})}


def worker_role_arn(d: Deploy) -> str:
    """The stack's WorkerRole (federation); before the update that creates it, in a dry run, the name it gets."""
    return d.outputs.get("WorkerRoleArn") or f"arn:aws:iam::{d.account}:role/{d.s['RINGI_NAME']}-worker"


def render_wrangler_config(d: Deploy) -> dict:
    """edge/wrangler.toml's [env.production], filled in. The top level repeats it, so that a call that forgot
    `--env production` still cannot ship the local values (127.0.0.1 endpoints) of the toml's top level."""
    raw = tomllib.loads((d.root / "edge" / "wrangler.toml").read_text(encoding="utf-8"))
    prod = raw.get("env", {}).get("production")
    if not prod:
        raise StepError("edge/wrangler.toml has no [env.production] section")
    databases = [db for db in prod.get("d1_databases", []) if db.get("binding") == "DB"]
    if len(databases) != 1:
        raise StepError("edge/wrangler.toml: [env.production] needs exactly one d1_databases entry with binding DB")
    vars_ = {**prod.get("vars", {}), **worker_vars(d)}
    if clash := sorted(set(vars_) & {*SECRET_NAMES, CHAT_SECRET, SIGNING_SECRET, VAPID_SECRET}):
        raise StepError(f"edge/wrangler.toml: {', '.join(clash)} must be secrets, not [env.production.vars]")
    prod = {**prod, "name": d.s["WORKER_NAME"], "routes": [{"pattern": d.s["PUBLIC_HOST"], "custom_domain": True}],
            "d1_databases": [{**databases[0], "database_name": d.s["D1_DATABASE_NAME"], "database_id": d.db_id}],
            "vars": vars_}
    top = {k: v for k, v in raw.items() if k != "env"}
    return {**top, **prod, "env": {"production": prod}}


def step_config(d: Deploy) -> str | None:
    # Rendered even in a dry run when the inputs exist: a broken [env.production] shows up in the plan.
    config = render_wrangler_config(d) if d.outputs and d.db_id else None
    what = f"{WRANGLER_CONFIG} (worker {d.s['WORKER_NAME']} on {d.s['PUBLIC_HOST']}, D1 {d.s['D1_DATABASE_NAME']})"
    if d.plan(f"write {what}"):
        (d.root / WRANGLER_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return None


# 8 ─ migrations


def step_migrations(d: Deploy) -> str | None:
    files = sorted((d.root / "edge" / "migrations").glob("*.sql"))
    if not d.plan(f"apply whichever of the {len(files)} migrations in edge/migrations D1 "
                  f"{d.s['D1_DATABASE_NAME']} lacks"):
        return None
    out = d.wrangler("d1", "migrations", "apply", "DB", "--remote")
    return "none pending" if re.search(r"no migrations to apply", out, re.I) else "applied"


# 9 ─ secrets


def worker_secret_names(d: Deploy, by_name: bool = False) -> set[str]:
    """Names only: wrangler never shows values. A worker that does not exist yet has none."""
    try:
        if d.dry_run or by_name:  # no rendered config in a dry run; --name alone addresses the same worker
            out = d.run(["wrangler", "secret", "list", "--format", "json", "--name", d.s["WORKER_NAME"]])
        else:
            out = d.wrangler("secret", "list", "--format", "json")
    except CommandFailed as e:
        if re.search(r'Worker "[^"]*"[^\n]* not found|code: 10007', e.output):  # wrangler 4.164 | older
            return set()
        raise
    return {item["name"] for item in parse_json_output(out)}


def put_secrets(d: Deploy, values: dict[str, str]) -> None:
    """`wrangler secret bulk` from stdin, then checked by name (bulk may exit 0 on input it did not take)."""
    d.wrangler("secret", "bulk", stdin=json.dumps(values))
    if missing := sorted(set(values) - worker_secret_names(d)):
        raise StepError(f"`wrangler secret bulk` did not store {', '.join(missing)}")


def access_keys(d: Deploy, user: str) -> list[dict]:
    keys = d.aws("iam", "list-access-keys", "--user-name", user).get("AccessKeyMetadata", [])
    return sorted(keys, key=lambda k: k.get("CreateDate", ""))


def delete_access_key(d: Deploy, user: str, key_id: str) -> None:
    d.aws("iam", "delete-access-key", "--user-name", user, "--access-key-id", key_id)


def create_access_key(d: Deploy, user: str, existing: list[dict]) -> dict:
    """A new key for the worker's IAM user. IAM allows two per user: with two, the oldest goes first."""
    for old in existing[:-1]:
        delete_access_key(d, user, old["AccessKeyId"])
    key = d.aws("iam", "create-access-key", "--user-name", user)["AccessKey"]
    d.run.secret(key["SecretAccessKey"])
    d.run.secret(key["AccessKeyId"])
    return key


def push_aws_key(d: Deploy, user: str, existing: list[dict], extra: dict[str, str]) -> None:
    """Create a key, store it (with `extra`) in the worker, then retire the older keys. A key the worker did
    not get is deleted again, so no run leaves an unused key behind."""
    key = create_access_key(d, user, existing)
    try:
        put_secrets(d, {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                        **extra})
    except StepError as e:
        try:
            delete_access_key(d, user, key["AccessKeyId"])
        except StepError:
            raise StepError(f"{e}\n    and the new access key could not be deleted again: delete the newest key "
                            f"of `aws iam list-access-keys --user-name {user}`") from None
        raise
    older = [k for k in access_keys(d, user) if k["AccessKeyId"] != key["AccessKeyId"]]
    if older:
        time.sleep(d.key_grace)  # IAM is eventually consistent: let the new key work before the old one stops
    for old in older:
        delete_access_key(d, user, old["AccessKeyId"])


# NIST P-256 (SEC 2 secp256r1): the curve of the worker's ES256 federation key.
P256_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
P256_G = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
          0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)


def p256_add(a: tuple[int, int] | None, b: tuple[int, int] | None) -> tuple[int, int] | None:
    if a is None or b is None:
        return a or b
    if a[0] == b[0] and (a[1] + b[1]) % P256_P == 0:
        return None
    if a == b:
        slope = (3 * a[0] * a[0] - 3) * pow(2 * a[1], -1, P256_P)
    else:
        slope = (b[1] - a[1]) * pow(b[0] - a[0], -1, P256_P)
    x = (slope * slope - a[0] - b[0]) % P256_P
    return x, (slope * (a[0] - x) - a[1]) % P256_P


def signing_key(prefix: str = "ringi") -> str:
    """A new signing key for ringi's key ring (or, `prefix` `ringi-vapid`, Web Push's VAPID key): a private EC P-256
    JWK with a kid (the standard library has no EC, and the public point is a few lines of arithmetic; the private
    scalar comes from `secrets`)."""
    private = secrets.randbelow(P256_N - 1) + 1
    public, addend, k = None, P256_G, private
    while k:
        if k & 1:
            public = p256_add(public, addend)
        addend, k = p256_add(addend, addend), k >> 1

    def b64(n: int) -> str:
        return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()

    return json.dumps({"kty": "EC", "crv": "P-256", "x": b64(public[0]), "y": b64(public[1]), "d": b64(private),
                       "kid": f"{prefix}-{time.strftime('%Y%m%d')}"}, separators=(",", ":"))


def new_signing_key_secret(d: Deploy, prefix: str = "ringi") -> str:
    key = d.run.secret(signing_key(prefix))
    d.run.secret(json.loads(key)["d"])
    return key


def switch_api_key(d: Deploy, old_digest: str | None) -> None:
    """The worker already accepts the new key and the old one; now the connection gets the new key, then the
    worker forgets the old one. If the stack update fails, the connection still sends the old key."""
    key = new_api_key(d)
    put_secrets(d, {"REGISTER_API_KEYS": ",".join(filter(None, [sha256(key), old_digest]))})
    try:
        change_stack(d, key)
    except StepError as e:
        if not old_digest:
            raise
        try:
            put_secrets(d, {"REGISTER_API_KEYS": old_digest})
        except StepError:
            raise StepError(f"{e}\n    and the worker still accepts the new key too: run with ROTATE=1 again") \
                from None
        raise
    put_secrets(d, {"REGISTER_API_KEYS": sha256(key)})


def step_secrets(d: Deploy) -> str | None:
    have = worker_secret_names(d)
    user = d.outputs.get("WorkerUserName")
    keys = access_keys(d, user) if user else []
    # federation: no access key exists at all (the worker assumes the stack's WorkerRole).
    new_aws_key = not d.federation and (d.rotate or not set(AWS_KEY_SECRETS) <= have or len(keys) != 1)
    switch_key = not d.creating and (d.rotate or "REGISTER_API_KEYS" not in have)
    # Made once, in either mode (it signs every decision's receipt): a new key is rotated in by hand, published
    # before it signs (docs/deploy.md). Safe on a running worker at once: without AWS_TARGETS it federates nothing.
    new_signing_key = SIGNING_SECRET not in have
    # Web Push's key, made once too (a new one would unsubscribe every device): its own secret, not the ring's.
    new_vapid_key = VAPID_SECRET not in have
    actions = []
    if new_aws_key:
        who = user or "the stack's worker user"
        actions.append(f"create an access key for {who} and store it as "
                       "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY" +
                       (f", then delete the {len(keys)} older key(s)" if keys else ""))
    if new_signing_key:
        actions.append(f"generate ringi's signing key (EC P-256) and store it as {SIGNING_SECRET}")
    if new_vapid_key:
        actions.append(f"generate the Web Push VAPID key (EC P-256) and store it as {VAPID_SECRET}")
    if d.creating:
        actions.append("set REGISTER_API_KEYS to the SHA-256 of the stack's new API key")
    if d.chat_channels:
        # Stored on every run: wrangler never shows a secret's value, so a changed file cannot be told apart.
        actions.append(f"store CHAT_CHANNELS ({len(json.loads(d.chat_channels))} channels from "
                       f"{d.s['CHAT_CHANNELS_FILE']})")
    if switch_key:
        actions.append("rotate the registration API key (the worker accepts new and old → stack update → new only)")
    if not actions:
        held = ("REGISTER_API_KEYS", SIGNING_SECRET, VAPID_SECRET) if d.federation else (*SECRET_NAMES, SIGNING_SECRET,
                                                                                          VAPID_SECRET)
        return f"the worker has {', '.join(held)}; nothing to rotate"
    if not d.plan("; ".join(actions)):
        return None
    first = {"REGISTER_API_KEYS": sha256(d.api_key)} if d.api_key else {}
    if d.chat_channels:
        first["CHAT_CHANNELS"] = d.chat_channels
    if new_signing_key:
        first[SIGNING_SECRET] = new_signing_key_secret(d)
    if new_vapid_key:
        first[VAPID_SECRET] = new_signing_key_secret(d, "ringi-vapid")
    if new_aws_key:
        push_aws_key(d, user, keys, first)
    elif first:
        put_secrets(d, first)
    if switch_key:
        switch_api_key(d, stack_tag(d.stack, API_KEY_TAG))
    return "done"


# 10 ─ deploy


def step_deploy(d: Deploy) -> str | None:
    if not d.plan(f"deploy worker {d.s['WORKER_NAME']} with `wrangler deploy` (custom domain {d.s['PUBLIC_HOST']})"):
        return None
    out = d.wrangler("deploy")
    version = re.search(r"Current Version ID:\s*(\S+)", out)
    return f"version {version[1]}" if version else "deployed"


# 11 ─ check


def fetch(url: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"user-agent": "ringi-deploy-check"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def health_problem(d: Deploy, base: str) -> str | None:
    """None when /healthz answers 200 and /config.json carries what was deployed, else what is wrong."""
    try:
        status, _ = fetch(f"{base}/healthz")
        if status != 200:
            return f"/healthz answered {status}"
        status, body = fetch(f"{base}/config.json")
        config = json.loads(body) if status == 200 else None
    except (OSError, ValueError) as e:
        return f"{base}: {e}"
    if not isinstance(config, dict):
        return f"/config.json answered {status}"
    oidc = d.s["OIDC_ISSUER"]
    want = {"clientId": d.s["OIDC_CLIENT_ID"] if oidc else d.outputs.get("SpaClientId"),
            "issuer": oidc or d.outputs.get("CognitoIssuer"), "redirectUri": f"{d.base_url}/auth/callback"}
    wrong = [f"{k}={config.get(k)!r} (expected {v!r})" for k, v in want.items() if config.get(k) != v]
    return f"/config.json: {', '.join(wrong)}" if wrong else None


def step_check(d: Deploy) -> str | None:
    base = (d.check_base or d.base_url).rstrip("/")
    if not d.plan(f"check {base}/healthz (200) and {base}/config.json (client id, issuer, redirect URI)"):
        return None
    deadline = time.monotonic() + d.check_timeout
    while problem := health_problem(d, base):
        if time.monotonic() >= deadline:  # a new custom domain's certificate can take a few minutes
            raise StepError(f"{problem} (still after {d.check_timeout:.0f} s)")
        time.sleep(min(3.0, max(0.0, deadline - time.monotonic())))
    return "up; /config.json matches the deployment"


STEPS = (
    ("preflight", lambda d: "aws and wrangler on PATH and signed in", step_preflight),
    ("build", lambda d: "make build: the SPA into dist/, the worker into edge/build/", step_build),
    # Members first: the home account's member stack makes the OIDC provider the stack's WorkerRole trusts.
    ("members", lambda d: f"member stacks ({MEMBER_TEMPLATE}) and AWS_TARGETS", step_members),
    ("stack", lambda d: f"CloudFormation stack {d.stack_name} in {d.s['AWS_REGION']} (deploy/aws/ringi.yaml)",
     step_stack),
    ("outputs", lambda d: f"read the outputs of stack {d.stack_name}", step_outputs),
    ("d1", lambda d: f"D1 database {d.s['D1_DATABASE_NAME']}", step_d1),
    ("config", lambda d: f"render {WRANGLER_CONFIG} from edge/wrangler.toml [env.production]", step_config),
    ("migrations", lambda d: f"apply edge/migrations to D1 {d.s['D1_DATABASE_NAME']} (remote)", step_migrations),
    ("secrets", lambda d: "worker secrets " + ", ".join(("REGISTER_API_KEYS", SIGNING_SECRET, VAPID_SECRET) if d.federation
                                                         else (*SECRET_NAMES, SIGNING_SECRET, VAPID_SECRET)), step_secrets),
    ("deploy", lambda d: f"wrangler deploy: worker {d.s['WORKER_NAME']} on {d.base_url}", step_deploy),
    ("check", lambda d: "GET /healthz and /config.json", step_check),
)


def summary(d: Deploy) -> None:
    if d.dry_run:
        print("\nDry run: nothing was created, changed or deleted.")
        return
    o = d.outputs
    print(f"\nringi is live: {d.base_url}\n"
          + (f"  approvers sign in with {d.s['OIDC_ISSUER']} (client {d.s['OIDC_CLIENT_ID']})\n" if d.s["OIDC_ISSUER"] else
             f"  approvers sign in at {o['CognitoDomain']} (user pool {o['UserPoolId']}; add users: docs/deploy.md)\n")
          + f"  workflows put ringi.approval.requested events on bus {o['EventBusName']} (docs/workflow/)\n"
          f"  undeliverable registrations land in {o['DeadLetterQueueUrl']}"
          + (f"\n  example state machine: {o['StateMachineArn']}" if o.get("StateMachineArn") else ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--settings", type=Path, default=SETTINGS, help="settings file (default deploy/ringi.env)")
    p.add_argument("--dry-run", action="store_true", help="print the plan; change nothing")
    p.add_argument("--rotate", action="store_true", help="rotate the registration API key and the worker's AWS key")
    p.add_argument("--skip-build", action="store_true", help="deploy dist/ and edge/build/ as they are")
    p.add_argument("--check-base", metavar="URL", help="check this base URL instead of https://PUBLIC_HOST")
    p.add_argument("--check-timeout", type=float, default=300.0, metavar="S", help="health check retry budget")
    p.add_argument("--key-grace-seconds", type=float, default=10.0, metavar="S",
                   help="wait between storing a new AWS key and deleting the old one")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # tests deploy a copy
    args = p.parse_args(argv)
    try:
        settings = load_settings(args.settings)
        chat_channels = load_chat_channels(args.root.resolve(), settings)
    except SettingsError as e:
        print(f"deploy: {args.settings}: {e}", file=sys.stderr)
        return 2
    d = Deploy(root=args.root.resolve(), s=settings, run=Runner(args.root.resolve()), dry_run=args.dry_run,
               rotate=args.rotate, skip_build=args.skip_build, check_base=args.check_base,
               check_timeout=args.check_timeout, key_grace=args.key_grace_seconds, chat_channels=chat_channels)
    if chat_channels:
        # Scrubbed from every output: the whole value, each URL and each signing secret.
        d.run.secret(chat_channels)
        for ch in json.loads(chat_channels).values():
            d.run.secret(ch["url"])
            if ch.get("secret"):
                d.run.secret(ch["secret"])
    print(f"ringi deploy{' (dry run)' if d.dry_run else ''}: {d.base_url}, stack {d.stack_name} in "
          f"{settings['AWS_REGION']}, worker {settings['WORKER_NAME']}" + (", rotating keys" if d.rotate else ""))
    for number, (name, what, step) in enumerate(STEPS, 1):
        print(f"==> [{number}/{len(STEPS)}] {name}: {what(d)}", flush=True)
        try:
            if result := step(d):
                d.say("→ " + d.run.redact(result))
        except StepError as e:
            print(f"deploy: step {number}/{len(STEPS)} ({name}) failed: {d.run.redact(str(e))}\n"
                  "Fix the cause and run `make deploy` again: it continues from what exists.", file=sys.stderr)
            return 1
    summary(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())

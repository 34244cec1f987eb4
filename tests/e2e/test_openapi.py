"""`docs/openapi.yaml` against the code and the running worker.

1. The spec's operations are exactly the worker's route table (`ringi_core::route::Route::ALL`, compared with this
   spec as data by `core/tests/openapi_routes.rs` in `make unit`); here the running worker routes every documented
   operation and answers every other method on a documented path with 405 and an `Allow` of the documented ones.
2. Schema-based fuzzing with schemathesis against the live worker (the session `stack`): a fixed, bounded
   number of derandomized cases per operation (schemathesis' deterministic coverage cases at the schema's
   boundaries plus Hypothesis-generated ones, valid and invalid), authenticated with a user JWT and the
   registration API key. Every response must: not be a 5xx, use a status code the spec documents, match the
   documented content type, headers and schema, carry `{"error": {"code", "message"}}` when it is not a 2xx,
   reject what the spec says is invalid, and not succeed without credentials.

   Path IDs that are valid approval IDs are often swapped for approvals the fuzzing user really is an approver
   of (plain, with a form, multi-approver quorums, and two paused Step Functions executions), so that reading
   and deciding go past the 404. Their task tokens are mostly made up: the first decision on those reaches Step
   Functions (moto), gets `InvalidToken` and is a `409 expired`, as documented. A generated `expiresAt` gets a
   date a week ahead, so that registrations are not refused for their expiry alone.
3. Documented statuses fuzzing cannot reach (duplicates, 413s, 403, delivered decisions, quorum progress, extension
   HTTP methods, malformed timestamps) are produced on purpose and validated the same way.

Run alone next to another suite: RINGI_TEST_{WORKER,MOTO,IDP,MAILBOX}_PORT and RINGI_TEST_STATE_DIR.
"""
from __future__ import annotations

import re
import secrets
import time
import zlib
from pathlib import Path

import pytest
import requests
import yaml
from ringi_stack import MACHINE_CLIENT_ID, REGISTER_SCOPE

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "openapi.yaml"

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


# ---------------------------------------------------------------------------------------------- route check

def spec() -> dict:
    return yaml.safe_load(SPEC.read_text())


def spec_routes() -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in spec()["paths"].items() for method in item
            if method in HTTP_METHODS}


def test_spec_is_valid_openapi():
    from openapi_spec_validator import validate

    validate(spec())


PROBE_ID = "abcdefghijklmnopqrstuv"  # a well-formed approval ID (no such approval)
# Methods probed on every documented path (TRACE and CONNECT do not reach a worker).
PROBED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _probe(stack, method: str, path: str) -> requests.Response:
    """`method` on `path` without credentials: routing and 405s come before authentication."""
    return requests.request(method, stack.base_url + path.replace("{id}", PROBE_ID), timeout=30)


def test_spec_operations_are_routed_by_the_worker(stack):
    for method, path in sorted(spec_routes()):
        r = _probe(stack, method, path)
        assert r.status_code != 405, (method, path, r.text)
        if method != "HEAD":
            assert r.json().get("error", {}).get("code") not in ("no_route", "method_not_allowed"), (method, path)


def test_other_methods_on_documented_paths_are_405(stack):
    for path, item in spec()["paths"].items():
        documented = {m.upper() for m in item if m in HTTP_METHODS}
        for method in sorted(set(PROBED_METHODS) - documented):
            r = _probe(stack, method, path)
            assert r.status_code == 405, (method, path, r.status_code, r.text)
            if method != "HEAD":  # a HEAD answer has no body
                assert r.json()["error"]["code"] == "method_not_allowed"
            # The Allow header names exactly the methods the spec documents for that path.
            assert set(r.headers["allow"].replace(" ", "").split(",")) == documented, (path, r.headers["allow"])


def test_every_error_code_is_documented():
    """`ErrorCode` lists exactly the codes of `ApiError::code` (core/src/base/error.rs)."""
    src = (ROOT / "core" / "src" / "base" / "error.rs").read_text()
    body = re.search(r"pub fn code\(&self\).*?\n    \}\n", src, re.S).group(0)
    codes = set(re.findall(r'=> "([a-z_]+)"', body))
    assert codes and codes == set(spec()["components"]["schemas"]["ErrorCode"]["enum"])


# ---------------------------------------------------------------------------------------------- fuzzing
#
# Driven through schemathesis' engine (what its CLI runs), not its pytest plugin: the plugin's lazy-fixture mode
# (needed because the worker's URL and credentials exist only once the session `stack` is up) reads
# `Node._nodeid`, which pytest 9 no longer has.

import schemathesis  # noqa: E402
from schemathesis.engine import events as engine_events  # noqa: E402

FUZZ_SUB = "openapi-fuzzer"
FUZZ_EMAIL = "fuzzer@example.com"
FUZZ_GROUP = "openapi-fuzz"
ID_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
EXAMPLES_PER_OPERATION = 40  # Hypothesis cases per operation, on top of the deterministic coverage cases

# Set while the fuzzing test runs: the approvals `before_call` may point path IDs at.
POOL: list[str] = []


@schemathesis.check
def ringi_error_body(ctx, response, case):
    """Every non-2xx answer (but HEAD's) is JSON `{"error": {"code", "message", "field"?}}`."""
    if response.status_code < 300 or response.request.method == "HEAD":
        return None
    try:
        body = response.json()
    except Exception:  # noqa: BLE001
        raise AssertionError(f"{response.status_code} with a non-JSON body: {response.text[:300]!r}") from None
    err = body.get("error") if isinstance(body, dict) else None
    assert isinstance(err, dict), f"{response.status_code} without an `error` object: {body!r}"
    assert isinstance(err.get("code"), str) and err["code"], f"error without a `code`: {body!r}"
    assert isinstance(err.get("message"), str) and err["message"], f"error without a `message`: {body!r}"
    assert set(err) <= {"code", "message", "field"}, f"unexpected error members: {body!r}"
    return None


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Points most well-formed path IDs at real approvals of the fuzzing user, deterministically (by the
    generated ID's CRC), so that reads and decisions get past the 404; the others stay unknown IDs."""
    if not POOL:
        return
    _future_expiry(case.body)
    if isinstance(case.body, dict) and isinstance(case.body.get("detail"), dict):
        _future_expiry(case.body["detail"])
    params = case.path_parameters
    if not params or "id" not in params:
        return
    raw = params["id"]
    if not isinstance(raw, str) or raw.strip(".") == "":
        # "", "." and ".." are URL dot segments: URL parsing resolves them away before the worker sees them
        # (`/api/v1/approvals/.` is the inbox), so they cannot address an approval at all.
        params["id"] = "not-an-approval-id"
        return
    if ID_RE.fullmatch(raw):
        slot = zlib.crc32(raw.encode()) % (len(POOL) + 2)
        if slot < len(POOL):
            params["id"] = POOL[slot]


DATE_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?=[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$)")


def _future_expiry(body) -> None:
    """A generated RFC 3339 `expiresAt` is almost always in the past or years ahead: the registration is then
    refused for that alone and says nothing about its other members. Move its date a week ahead (time, fraction
    and offset stay as generated)."""
    if isinstance(body, dict) and isinstance(body.get("expiresAt"), str):
        week = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 7 * 86400))
        body["expiresAt"] = DATE_TIME_RE.sub(week, body["expiresAt"], count=1)


def _register(stack, body: dict) -> str:
    r = requests.post(f"{stack.base_url}/api/v1/approvals", json=body,
                      headers={"authorization": f"Bearer {stack.api_key}"}, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["id"]


FORM = [
    {"name": "reason", "label": "Reason", "type": "textarea", "required": True, "maxLength": 200},
    {"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "medium", "high"]},
    {"name": "amount", "label": "Amount", "type": "number", "min": 0, "max": 1000},
    {"name": "urgent", "label": "Urgent", "type": "boolean", "help": "Skip the queue"},
    {"name": "ticket", "label": "Ticket", "type": "text"},
]


@pytest.fixture(scope="module")
def fuzz_pool(stack, workflows):
    """Approvals the fuzzing user may read and decide, in different shapes. Returns their IDs."""
    me = [{"sub": FUZZ_SUB}]
    base = {"title": "OpenAPI fuzzing target", "timeoutSeconds": 3600, "summary": "Made by tests/e2e/test_openapi.py",
            "details": {"service": "api", "replicas": 3}, "context": {"stateName": "Fuzz"}}
    tok = lambda name: f"made-up-token-{name}-{time.time_ns()}"  # noqa: E731
    pool = [
        _register(stack, {**base, "taskToken": tok("plain1"), "approvers": me}),
        _register(stack, {**base, "taskToken": tok("plain2"), "approvers": me, "locale": "ja"}),
        _register(stack, {**base, "taskToken": tok("form"), "approvers": me, "form": FORM}),
        _register(stack, {**base, "taskToken": tok("form2"), "approvers": [{"email": FUZZ_EMAIL}], "form": FORM[1:]}),
        _register(stack, {**base, "taskToken": tok("all"), "approvers": me + [{"sub": "someone-else"}],
                          "quorum": "all"}),
        _register(stack, {**base, "taskToken": tok("group"), "approvers": [{"group": FUZZ_GROUP}], "quorum": 2}),
    ]
    for _ in range(2):  # real paused executions: their first valid decision is delivered (200 approved/rejected)
        _, token = workflows.start_paused(300)
        pool.append(_register(stack, {**base, "taskToken": token, "approvers": me}))
    # More than a page (25) of pending approvals, for the inbox's cursor.
    for i in range(30):
        _register(stack, {**base, "taskToken": tok(f"filler{i}"), "approvers": [{"group": FUZZ_GROUP}]})
    return pool


@pytest.fixture(scope="module")
def user_token(stack):
    return stack.mint(FUZZ_SUB, email=FUZZ_EMAIL, groups=[FUZZ_GROUP], ttl=3 * 3600)


CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance", "response_headers_conformance",
          "response_schema_conformance", "negative_data_rejection", "ignored_auth", "missing_required_header",
          "allow_header_conformance", "ringi_error_body"]


def load_schema(stack, user_token) -> "schemathesis.BaseSchema":
    config = schemathesis.Config.from_dict({
        "base-url": stack.base_url,
        "request-timeout": 60,
        "continue-on-failure": True,
        "workers": 1,
        "generation": {
            "mode": "all",  # valid and invalid data
            "max-examples": EXAMPLES_PER_OPERATION,
            "deterministic": True,  # derandomized: the same cases every run
            "database": "none",
            "no-shrink": True,
        },
        # One deterministic pass: no learning from responses (server-generated IDs, error messages) between cases.
        "phases": {
            "stateful": {"enabled": False},
            "examples": {"extra-data-sources": {"responses": False}},
            "coverage": {"extra-data-sources": {"responses": False}},
            "fuzzing": {"extra-data-sources": {"responses": False}, "error-feedback": {"enabled": False}},
        },
        # Only these checks: `positive_data_acceptance` cannot hold (a valid-looking `expiresAt` is mostly in the
        # past, a quorum may exceed the approvers), `unsupported_method` also demands an `Allow` header that the
        # worker's 405 does not send (a documented gap).
        "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        "auth": {"openapi": {"userJwt": {"bearer": user_token},
                             "registrationApiKey": {"bearer": stack.api_key}}},
    })
    return schemathesis.openapi.from_path(SPEC, config=config)


def _describe(failure, recorder) -> str:
    """A failure with the request that caused it (as curl) and the response."""
    lines = [f"[{failure.operation}] {failure.title}: {failure.message}".strip()]
    case_id = getattr(failure, "case_id", None)
    for checks in recorder.checks.values():
        for check in checks:
            info = check.failure_info
            if info is not None and info.failure is failure:
                lines.append(f"    reproduce: {info.code_sample}")
    interaction = recorder.interactions.get(case_id) if case_id else None
    if interaction is not None and interaction.response is not None:
        lines.append(f"    response: {interaction.response.status_code} {interaction.response.content[:400]!r}")
    return "\n".join(lines)


def test_fuzz_against_the_spec(stack, fuzz_pool, user_token):
    schema = load_schema(stack, user_token)
    POOL[:] = fuzz_pool
    problems: list[str] = []
    operations: dict[str, int] = {}
    statuses: dict[str, dict[str, int]] = {}
    stop = None
    t0 = time.monotonic()
    try:
        for event in schemathesis.engine.from_schema(schema).execute():
            if isinstance(event, engine_events.ScenarioFinished):
                label = event.recorder.label
                for interaction in event.recorder.interactions.values():
                    operations[label] = operations.get(label, 0) + 1
                    if interaction.response is not None:
                        key = f"{interaction.request.method} {interaction.response.status_code}"
                        statuses.setdefault(label, {}).setdefault(key, 0)
                        statuses[label][key] += 1
                for checks in event.recorder.checks.values():
                    for check in checks:
                        if check.failure_info is not None:
                            problems.append(_describe(check.failure_info.failure, event.recorder))
            elif isinstance(event, engine_events.NonFatalError):
                problems.append(f"[{event.label}] error: {event.info.title}: {event.info.message}")
            elif isinstance(event, engine_events.FatalError):
                problems.append(f"fatal: {event.exception!r}")
            elif isinstance(event, engine_events.EngineFinished):
                stop = event.stop_reason
    finally:
        POOL.clear()
        # A fuzzed out-of-office of the fuzzing user would route the targeted tests' new approvals away from it.
        requests.delete(f"{stack.base_url}/api/v1/me/out-of-office", headers={"authorization": f"Bearer {user_token}"},
                        timeout=30)
    elapsed = time.monotonic() - t0
    print(f"\nschemathesis {schemathesis.__version__}: {sum(operations.values())} requests in {elapsed:.1f}s")
    for label, count in sorted(operations.items()):
        print(f"  {label}: {count} requests; {dict(sorted(statuses.get(label, {}).items()))}")
    assert stop == schemathesis.engine.StopReason.COMPLETED, f"fuzzing stopped early: {stop}"
    assert set(operations) >= {f"{m} {p}" for m, p in spec_routes()}, f"operations not fuzzed: {operations}"
    unique = list(dict.fromkeys(problems))
    assert not unique, f"{len(unique)} problem(s):\n" + "\n".join(unique)


def test_inbox_pages_conform(stack, fuzz_pool, user_token):
    """Following `nextCursor` (which fuzzing cannot guess) gives conforming pages until it is null."""
    schema = load_schema(stack, user_token)
    op = schema["/api/v1/approvals"]["GET"]
    cursor, pages = None, 0
    while True:
        case = op.Case(query={"cursor": cursor} if cursor else {})
        r = case.call(headers={"authorization": f"Bearer {user_token}"}, timeout=30)
        assert r.status_code == 200, r.text
        case.validate_response(r, checks=[schemathesis.checks.response_schema_conformance, ringi_error_body])
        pages += 1
        cursor = r.json()["nextCursor"]
        if cursor is None:
            break
        assert pages < 20
    assert pages >= 2, "the pool is larger than one page: a cursor was expected"


# ---------------------------------------------------------------------------------------------- documented statuses
#
# Answers fuzzing rarely or never reaches (it cannot pause Step Functions executions, guess a duplicate, or send
# half a megabyte), produced on purpose and validated against the spec with the same checks.

TARGETED_CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
                   "response_headers_conformance", "response_schema_conformance"]


@pytest.fixture(scope="module")
def spec_schema(stack, user_token):
    return load_schema(stack, user_token)


def conforms(schema, method: str, path: str, response: requests.Response, status: int, code: str | None = None):
    """`response` (to `method path`) has `status`, the error `code` if given, and conforms to the spec."""
    assert response.status_code == status, f"{method} {path}: {response.status_code} {response.text[:500]}"
    case = schema[path][method].Case()
    case.validate_response(response, checks=[getattr(schemathesis.checks, c) for c in TARGETED_CHECKS] +
                           [ringi_error_body])
    if code is not None:
        assert response.json()["error"]["code"] == code, response.text
    return response.json() if response.content else None


def _post(stack, path, body=None, token=None, data=None):
    headers = {"authorization": f"Bearer {token}"} if token else {}
    if data is not None:
        headers["content-type"] = "application/json"
    return requests.post(f"{stack.base_url}{path}", json=body if data is None else None, data=data, headers=headers,
                         timeout=60)


def _registration(**over):
    body = {"taskToken": f"made-up-{time.time_ns()}", "approvers": [{"sub": FUZZ_SUB}], "title": "Targeted",
            "timeoutSeconds": 600}
    body.update(over)
    return body


def test_registration_statuses(stack, spec_schema):
    p, key = "/api/v1/approvals", stack.api_key
    # Client-chosen IDs must be as unguessable as generated ones (≥ 22 URL-safe characters, not a pattern).
    id1, id2 = "openapi-idem-" + secrets.token_urlsafe(16), "openapi-idem-" + secrets.token_urlsafe(16)
    first = conforms(spec_schema, "POST", p, _post(stack, p, _registration(approvalId=id1), key), 201)
    again = _post(stack, p, _registration(approvalId=id1, taskToken="x"), key)
    conforms(spec_schema, "POST", p, again, 409, "duplicate_approval")
    body = _registration(approvalId=id2)
    conforms(spec_schema, "POST", p, _post(stack, p, body, key), 201)
    assert conforms(spec_schema, "POST", p, _post(stack, p, body, key), 200)["id"] == id2
    assert first["url"].endswith(f"/a/{id1}")
    guessable = conforms(spec_schema, "POST", p, _post(stack, p, _registration(approvalId="openapi-idem-0001"), key),
                         400, "invalid_request")
    assert guessable["error"]["field"] == "approvalId"
    envelope = {"version": "0", "detail-type": "ringi.approval", "source": "x", "detail": _registration()}
    conforms(spec_schema, "POST", p, _post(stack, p, envelope, key), 201)
    conforms(spec_schema, "POST", p, _post(stack, p, _registration(), stack.mint_machine()), 201)
    conforms(spec_schema, "POST", p, _post(stack, p, _registration(), stack.mint_machine(scope="openid")), 403,
             "forbidden")
    person = stack.mint(FUZZ_SUB, client_id=MACHINE_CLIENT_ID, scope=REGISTER_SCOPE)  # names a user
    conforms(spec_schema, "POST", p, _post(stack, p, _registration(), person), 403, "forbidden")
    conforms(spec_schema, "POST", p, _post(stack, p, _registration(), stack.mint(FUZZ_SUB)), 401, "unauthorized")
    conforms(spec_schema, "POST", p, _post(stack, p, _registration()), 401, "unauthorized")
    conforms(spec_schema, "POST", p, _post(stack, p, _registration(), "rk_not-a-key"), 401, "unauthorized")
    conforms(spec_schema, "POST", p, _post(stack, p, data="{nope", token=key), 400, "malformed_body")
    conforms(spec_schema, "POST", p, _post(stack, p, data="", token=key), 400, "malformed_body")
    bad = conforms(spec_schema, "POST", p, _post(stack, p, _registration(quorum=0), key), 400, "invalid_request")
    assert bad["error"]["field"] == "quorum"
    huge = _registration(details={"x": "y" * (600 * 1024)})
    conforms(spec_schema, "POST", p, _post(stack, p, huge, key), 413, "payload_too_large")


@pytest.mark.parametrize("expires_at", [
    "2026-12-01T09:00:00+0\u00e900",  # a multi-byte character where the offset's ':' belongs
    "2026-12-01T09:00:00-\u00e9:00",
])
def test_malformed_expiry_is_a_400(stack, spec_schema, expires_at):
    p = "/api/v1/approvals"
    body = _registration(expiresAt=expires_at)
    del body["timeoutSeconds"]
    r = _post(stack, p, body, stack.api_key)
    assert conforms(spec_schema, "POST", p, r, 400, "invalid_request")["error"]["field"] == "expiresAt"


def test_decision_statuses(stack, spec_schema, workflows, user_token):
    p, key = "/api/v1/approvals/{id}/decision", stack.api_key
    url = lambda i: f"/api/v1/approvals/{i}/decision"  # noqa: E731
    decide = lambda i, body, token=user_token: _post(stack, url(i), body, token)  # noqa: E731

    quorum = _register(stack, _registration(approvers=[{"sub": FUZZ_SUB}, {"sub": "someone-else"}], quorum="all"))
    pending = conforms(spec_schema, "POST", p, decide(quorum, {"decision": "approve"}), 200)
    assert pending["status"] == "pending" and pending["progress"] == {"approvals": 1, "required": 2}
    conforms(spec_schema, "POST", p, decide(quorum, {"decision": "reject"}), 409, "already_voted")

    _, token = workflows.start_paused(300)
    approved = _register(stack, _registration(taskToken=token))
    assert conforms(spec_schema, "POST", p, decide(approved, {"decision": "approve", "comment": "ok"}), 200)[
        "status"] == "approved"
    conforms(spec_schema, "POST", p, decide(approved, {"decision": "approve"}), 409, "already_decided")
    _, token = workflows.start_paused(300)
    rejected = _register(stack, _registration(taskToken=token, form=FORM))
    conforms(spec_schema, "POST", p, decide(rejected, {"decision": "reject"}), 400, "invalid_request")
    assert conforms(spec_schema, "POST", p, decide(rejected, {"decision": "reject", "feedback": {"reason": "no"}}),
                    200)["status"] == "rejected"
    view = conforms(spec_schema, "GET", "/api/v1/approvals/{id}",
                    requests.get(f"{stack.base_url}/api/v1/approvals/{rejected}",
                                 headers={"authorization": f"Bearer {user_token}"}, timeout=30), 200)
    assert view["myDecision"]["feedback"] == {"reason": "no"} and view["decidedAt"]

    made_up = _register(stack, _registration())  # Step Functions answers InvalidToken: the task is closed
    conforms(spec_schema, "POST", p, decide(made_up, {"decision": "approve"}), 409, "expired")
    conforms(spec_schema, "POST", p, decide(made_up, {"decision": "approve"}), 409, "expired")

    other = _register(stack, _registration(approvers=[{"sub": "someone-else"}]))
    conforms(spec_schema, "POST", p, decide(other, {"decision": "approve"}), 404, "not_found")
    open_one = _register(stack, _registration())
    conforms(spec_schema, "POST", p, decide(open_one, {"decision": "maybe"}), 400, "invalid_request")
    conforms(spec_schema, "POST", p, _post(stack, url(open_one), data="nope", token=user_token), 400, "malformed_body")
    conforms(spec_schema, "POST", p, decide(open_one, {"decision": "approve"}, token=None), 401, "unauthorized")
    conforms(spec_schema, "POST", p, decide(open_one, {"decision": "approve"}, token=key), 401, "unauthorized")
    too_big_output = {"decision": "approve", "feedback": {"x": "y" * 300_000}}  # body < 512 KiB, output > 256 KiB
    conforms(spec_schema, "POST", p, decide(open_one, too_big_output), 413, "payload_too_large")
    conforms(spec_schema, "POST", p, decide(open_one, {"decision": "approve", "c": "y" * (600 * 1024)}), 413,
             "payload_too_large")


def test_reading_statuses(stack, spec_schema, user_token):
    auth = {"authorization": f"Bearer {user_token}"}
    get = lambda path, **kw: requests.get(f"{stack.base_url}{path}", timeout=30, **kw)  # noqa: E731
    conforms(spec_schema, "GET", "/healthz", get("/healthz"), 200)
    conforms(spec_schema, "GET", "/config.json", get("/config.json"), 200)
    r = requests.head(f"{stack.base_url}/healthz", timeout=30)
    assert r.status_code == 200 and r.content == b""
    inbox = "/api/v1/approvals"
    assert conforms(spec_schema, "GET", inbox, get(inbox, params={"status": "decided"}, headers=auth), 200)
    for bad in ({"status": ""}, {"status": "all"}, {"cursor": "nope"}):
        conforms(spec_schema, "GET", inbox, get(inbox, params=bad, headers=auth), 400, "invalid_request")
    conforms(spec_schema, "GET", inbox, get(inbox), 401, "unauthorized")
    one = "/api/v1/approvals/{id}"
    other = _register(stack, _registration(approvers=[{"sub": "someone-else"}]))
    for i in (other, "AAAAAAAAAAAAAAAAAAAAAA", "short"):
        conforms(spec_schema, "GET", one, get(f"/api/v1/approvals/{i}", headers=auth), 404, "not_found")
    conforms(spec_schema, "GET", one, get(f"/api/v1/approvals/{other}", headers={"authorization": "Bearer x.y.z"}),
             401, "unauthorized")


def test_audit_statuses(stack, spec_schema, user_token):
    """The operators' export: 403 for the fuzzing user (no ADMIN_GROUP on the session's worker) and 401 without a
    token here; 200 (JSON and CSV) and 400 on a worker with operators, an approval's events included."""
    p = "/api/v1/audit"
    conforms(spec_schema, "GET", p, requests.get(f"{stack.base_url}{p}", headers={"authorization": f"Bearer {user_token}"},
                                                 timeout=30), 403, "forbidden")
    conforms(spec_schema, "GET", p, requests.get(f"{stack.base_url}{p}", timeout=30), 401, "unauthorized")
    url = stack.extra_worker("audit-spec", {"ADMIN_GROUP": "ops"})
    r = requests.post(f"{url}/api/v1/approvals", json=_registration(), timeout=30,
                      headers={"authorization": f"Bearer {stack.api_key}"})
    assert r.status_code == 201, r.text
    ops = {"authorization": f"Bearer {stack.mint('ops-1', groups=['ops'])}"}
    page = conforms(spec_schema, "GET", p, requests.get(f"{url}{p}", headers=ops, timeout=30), 200)
    assert [e["kind"] for e in page["items"]] == ["registered"]
    csv = requests.get(f"{url}{p}", headers={**ops, "accept": "text/csv"}, timeout=30)
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    for bad in ({"from": "nope"}, {"cursor": "nope"}, {"limit": "0"}):
        conforms(spec_schema, "GET", p, requests.get(f"{url}{p}", params=bad, headers=ops, timeout=30), 400,
                 "invalid_request")


def _concrete_paths(stack) -> dict[str, str]:
    """Each spec path -> a URL path for it, `{id}` being an approval of the fuzzing user."""
    real = _register(stack, _registration())
    return {template: template.replace("{id}", real) for template in spec()["paths"]}


def test_other_methods_are_405_with_an_error_body(stack, user_token):
    auth = {"authorization": f"Bearer {user_token}"}
    for template, path in _concrete_paths(stack).items():
        documented = {m.upper() for m in spec()["paths"][template] if m in HTTP_METHODS}
        for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} - documented):
            r = requests.request(method, f"{stack.base_url}{path}", headers=auth, timeout=30)
            assert r.status_code == 405, f"{method} {path}: {r.status_code} {r.text[:200]}"
            assert r.json()["error"]["code"] == "method_not_allowed"
    r = requests.get(f"{stack.base_url}/api/v1/nothing-here", timeout=30)
    assert r.status_code == 404 and r.json()["error"]["code"] == "no_route"


@pytest.mark.parametrize("method", ["PROPFIND", "QUERY"])
def test_extension_methods_are_405_not_get(stack, user_token, method):
    """workerd passes methods such as PROPFIND and QUERY to the worker; they are not GET."""
    auth = {"authorization": f"Bearer {user_token}"}
    for path in _concrete_paths(stack).values():
        r = requests.request(method, f"{stack.base_url}{path}", headers=auth, timeout=30)
        assert r.status_code == 405, f"{method} {path}: {r.status_code} {r.text[:200]}"
        assert r.json()["error"]["code"] == "method_not_allowed"

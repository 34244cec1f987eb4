"""Fixtures of the end-to-end suite: one real stack (workerd + moto + IdP) per session, started by the same
launcher as `make dev`, real paused Step Functions executions, a Chromium, and the leak check that runs when the
session ends. Shared helpers are in support/."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from support import ARTIFACTS, ROOT, leaks
from support.api import Api, Workflows, paused_factory
from support.backends import Backend
from support.clock import Clock
from support.pages import Tab

from ringi_stack import DDB_TABLE, MIN_CLAIM_LEASE_SECONDS, Ports, Stack, chromium, free_port, fresh_state

STARTED: list[Stack] = []


@pytest.fixture(scope="session", autouse=True)
def no_secret_leaks():
    """Set up before any other fixture, torn down after all of them (the stack stopped, its logs complete): records
    every worker response of the session, then fails the run if a secret shows up in one of them or in a log."""
    undo = leaks.record_responses()
    yield
    undo()
    for stack in STARTED:
        print("\n" + leaks.check(stack))


# `make e2e` runs the modules on two pytest-xdist workers (gw0, gw1), each with a stack of its own: the suite
# mostly waits (paused executions, leases, schedules), so two stacks share two cores well.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
XDIST_INDEX = int(XDIST_WORKER[2:]) if XDIST_WORKER.startswith("gw") else 0


def suite_port(name: str, default: int) -> int:
    """RINGI_TEST_{name}_PORT, else the default; 20 further up per xdist worker after the first (0: a free port)."""
    port = int(os.environ.get(f"RINGI_TEST_{name}_PORT", default))
    return port + 20 * XDIST_INDEX if port else free_port()


def main_state_dir() -> Path:
    """RINGI_TEST_STATE_DIR, else .ringi/test; `-gw1` … appended for the xdist workers after the first."""
    state = Path(os.environ.get("RINGI_TEST_STATE_DIR", ROOT / ".ringi" / "test"))
    return state if XDIST_INDEX == 0 else state.with_name(f"{state.name}-{XDIST_WORKER}")


# Extra workers that session fixtures hold (they outlive the module that started them).
SESSION_WORKERS: set[str] = set()


@pytest.fixture(scope="module", autouse=True)
def module_workers():
    """Stops the extra workers a module started when it ends: left running, a session's few dozen idle workerd
    pairs hold memory the later modules' stacks compete for, and make the session's teardown slow."""
    before = {id(s): set(s.extra_ports) for s in STARTED}
    yield
    for s in STARTED:
        s.stop_extra_workers(set(s.extra_ports) - before.get(id(s), set()) - SESSION_WORKERS)


@pytest.fixture(scope="session")
def stack():
    ports = Ports(worker=suite_port("WORKER", 8797), moto=suite_port("MOTO", 5010), idp=suite_port("IDP", 9010),
                  mailbox=suite_port("MAILBOX", 8035), chat=suite_port("CHAT", 0))
    # Another suite may run at the same time on other ports (RINGI_TEST_*_PORT): it needs its own state dir.
    state = main_state_dir()
    # The shortest lease the worker accepts: test_faults waits for a dead worker's claim to run out.
    # RINGI_TEST_STORAGE=dynamodb runs the session's worker on the DynamoDB backend (D1's governance features
    # then answer 501); test_dynamodb.py runs the decision path on DynamoDB in every session either way.
    s = Stack(state=fresh_state(state), ports=ports, claim_lease_seconds=MIN_CLAIM_LEASE_SECONDS, demo=True,
              storage=os.environ.get("RINGI_TEST_STORAGE", "d1"))
    s.start()
    leaks.recording_mints(s)
    STARTED.append(s)
    yield s
    s.stop()


def provider_stack(profile: str):
    """Another stack, started only by the tests that ask for it, with one of the IdP stand-in's OpenID Connect
    profiles and a worker configured with OIDC_ISSUER. Its own state dir beside the main one, free ports (its
    callbacks are registered at its own IdP), no demo components."""
    main = main_state_dir()
    ports = Ports(worker=free_port(), moto=free_port(), idp=free_port(), mailbox=free_port())
    s = Stack(state=fresh_state(main.with_name(f"{main.name}-{profile}")), ports=ports,
              claim_lease_seconds=MIN_CLAIM_LEASE_SECONDS, profile=profile)
    s.start()
    leaks.recording_mints(s)
    STARTED.append(s)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def generic_stack():
    """The Entra-like generic profile: discovery, `aud`/`azp`, `roles`, `scp`, keys without `alg`."""
    yield from provider_stack("generic")


@pytest.fixture(scope="session")
def okta_stack():
    """The Okta-like profile (docs/deploy.md's worked example): the ID token as the bearer, `groups`,
    `email_verified` required, sign-out only with `id_token_hint`."""
    yield from provider_stack("okta")


@pytest.fixture(scope="module", params=["cognito", "generic"])
def profile_stack(request):
    """The Cognito stack, then the generic OpenID Connect one: for the tests that must hold for both."""
    return request.getfixturevalue("stack" if request.param == "cognito" else "generic_stack")


@pytest.fixture(scope="session")
def dynamodb_url(stack):
    """The session's one worker on the DynamoDB backend (the table in moto), started by the first test that
    needs it: test_dynamodb.py and every backend-parametrized module share it. The latency switch is on (no
    delay asked for): responses carry their round-trip counts."""
    # ADMIN_GROUP and AUDIT_RETENTION_DAYS: test_dynamodb.py's audit export and event retention.
    SESSION_WORKERS.add("dynamodb")
    return stack.extra_worker("dynamodb", {**stack.dynamodb_vars(DDB_TABLE), "INJECT_LATENCY": "header",
                                           "ADMIN_GROUP": "admin", "AUDIT_RETENTION_DAYS": "30"})


@pytest.fixture(scope="module", params=["d1", "dynamodb"])
def backend(request, stack, workflows):
    """The session's D1 worker, then the DynamoDB one: for the decision-path tests that must hold on both (a
    module's tests run on one backend, then on the other, so the DynamoDB worker starts once)."""
    url = stack.base_url if request.param == "d1" else request.getfixturevalue("dynamodb_url")
    return Backend(request.param, stack, url, workflows)


@pytest.fixture(scope="session")
def api(stack):
    return Api(stack)


@pytest.fixture(scope="session")
def workflows(stack):
    return Workflows(stack)


@pytest.fixture
def paused(workflows, api):
    return paused_factory(workflows, api)


@pytest.fixture
def clock(stack):
    """The stack's test clock for this test (support/clock.py): moved forward only by the test, back to the real
    clock after it."""
    c = Clock(stack)
    undo = c.install()
    yield c
    undo()


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = chromium.launch(p)
        yield b
        b.close()


@pytest.fixture
def tab(browser):
    t = Tab(browser)
    yield t
    t.close()

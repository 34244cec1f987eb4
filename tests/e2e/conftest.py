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
from support.pages import Tab

import chromium  # noqa: E402  (scripts/, on sys.path through support)
from ringi_stack import MIN_CLAIM_LEASE_SECONDS, Ports, Stack, fresh_state  # noqa: E402

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


@pytest.fixture(scope="session")
def stack():
    ports = Ports(worker=int(os.environ.get("RINGI_TEST_WORKER_PORT", "8797")),
                  moto=int(os.environ.get("RINGI_TEST_MOTO_PORT", "5010")),
                  idp=int(os.environ.get("RINGI_TEST_IDP_PORT", "9010")),
                  mailbox=int(os.environ.get("RINGI_TEST_MAILBOX_PORT", "8035")),
                  chat=int(os.environ.get("RINGI_TEST_CHAT_PORT", "0")))
    # Another suite may run at the same time on other ports (RINGI_TEST_*_PORT): it needs its own state dir.
    state = Path(os.environ.get("RINGI_TEST_STATE_DIR", ROOT / ".ringi" / "test"))
    # The shortest lease the worker accepts: test_faults waits for a dead worker's claim to run out.
    s = Stack(state=fresh_state(state), ports=ports, claim_lease_seconds=MIN_CLAIM_LEASE_SECONDS, demo=True)
    s.start()
    leaks.recording_mints(s)
    STARTED.append(s)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def api(stack):
    return Api(stack)


@pytest.fixture(scope="session")
def workflows(stack):
    return Workflows(stack)


@pytest.fixture
def paused(workflows, api):
    return paused_factory(workflows, api)


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

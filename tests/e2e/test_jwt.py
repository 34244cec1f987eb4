"""JWT verification in the worker follows aws-jwt-verify. Tokens are minted here with the stack's
own RSA key (trusted through the IdP's JWKS) and with attacker keys."""
import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from support.api import paused_factory

ATTACKER = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict, claims: dict, sign) -> str:
    head = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(sign(head.encode()))


def claims(stack, **over):
    now = int(time.time())
    c = {"sub": "alice", "iss": stack.issuer, "client_id": stack.client_id, "token_use": "access",
         "scope": "openid", "iat": now, "exp": now + 600, "username": "alice"}
    c.update(over)
    return {k: v for k, v in c.items() if v is not None}


def bad_tokens(stack):
    now = int(time.time())
    public_pem = stack.private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo)
    attacker_jwk = json.loads(RSAAlgorithm.to_jwk(ATTACKER.public_key()))
    good = stack.mint("alice")
    h, p, s = good.split(".")
    tampered_payload = b64(json.dumps(claims(stack, sub="bob")).encode())
    return {
        "alg none": forge({"alg": "none", "kid": stack.kid}, claims(stack), lambda _: b""),
        "alg None case variant": forge({"alg": "None", "kid": stack.kid}, claims(stack), lambda _: b""),
        "HS256 keyed with the public key": forge({"alg": "HS256", "kid": stack.kid}, claims(stack),
                                                 lambda m: hmac.new(public_pem, m, hashlib.sha256).digest()),
        "embedded jwk header": jwt.encode(claims(stack), ATTACKER, algorithm="RS256",
                                          headers={"kid": stack.kid, "jwk": attacker_jwk}),
        "jku header pointing elsewhere": jwt.encode(claims(stack), ATTACKER, algorithm="RS256",
                                                    headers={"kid": stack.kid, "jku": "http://127.0.0.1:1/jwks.json"}),
        "unknown kid": jwt.encode(claims(stack), ATTACKER, algorithm="RS256", headers={"kid": "attacker-kid"}),
        "no kid": jwt.encode(claims(stack), stack.private_key, algorithm="RS256"),
        "kid injection": stack.mint("alice", kid="../../etc/passwd' OR 1=1"),
        "wrong iss": stack.mint("alice", iss=stack.issuer + "x"),
        "wrong client_id": stack.mint("alice", client_id="someone-else"),
        "wrong token_use": stack.mint("alice", token_use="id"),
        "expired": stack.mint("alice", exp=now - 120, iat=now - 3000),
        "nbf in the future": stack.mint("alice", nbf=now + 300),
        "iat in the future": stack.mint("alice", iat=now + 300),
        "no exp": stack.mint("alice", exp=None),
        "tampered payload": f"{h}.{tampered_payload}.{s}",
        "signature of another token": f"{h}.{p}.{stack.mint('bob').split('.')[2]}",
        "two segments": f"{h}.{p}",
        "four segments": f"{good}.x",
        "not base64": "%%%.^^^.&&&",
        "empty": "",
        "oversized": stack.mint("alice", pad="x" * 9000),
        "duplicate sub": _dup_sub(stack),
        # Validly signed by the issuer's key, but asks for an extension the worker does not implement.
        "crit header": stack.mint("alice", headers={"crit": ["exp"], "exp": now + 600}),
    }


def _dup_sub(stack):
    import re
    body = json.dumps(claims(stack))
    body = re.sub(r'^\{', '{"sub": "bob", ', body)  # two "sub" keys: first bob, then alice
    head = b64(json.dumps({"alg": "RS256", "kid": stack.kid}).encode()) + "." + b64(body.encode())
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    return head + "." + b64(stack.private_key.sign(head.encode(), padding.PKCS1v15(), hashes.SHA256()))


@pytest.fixture(scope="module")
def approval(paused):
    return paused()[0]


@pytest.fixture(scope="module")
def paused(workflows, api):  # module-scoped twin of conftest.paused
    return paused_factory(workflows, api)


def get(stack, approval_id, token):
    return requests.get(f"{stack.base_url}/api/v1/approvals/{approval_id}",
                        headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_valid_token_is_accepted(stack, approval):
    assert get(stack, approval, stack.mint("alice")).status_code == 200


def test_every_bad_token_is_a_generic_401(stack, approval):
    bodies = set()
    for name, token in bad_tokens(stack).items():
        r = get(stack, approval, token)
        assert r.status_code == 401, f"{name}: {r.status_code} {r.text}"
        assert r.headers.get("www-authenticate") == "Bearer", name
        bodies.add(r.text)
    assert len(bodies) == 1, "the reason is logged, never returned"
    assert json.loads(bodies.pop())["error"]["code"] == "unauthorized"


def test_missing_or_non_bearer_authorization_is_401(stack, approval):
    url = f"{stack.base_url}/api/v1/approvals/{approval}"
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, headers={"authorization": f"Basic {stack.mint('alice')}"}, timeout=10).status_code == 401


def test_decisions_need_a_valid_token_too(stack, approval):
    r = requests.post(f"{stack.base_url}/api/v1/approvals/{approval}/decision", json={"decision": "approve"},
                      headers={"authorization": f"Bearer {bad_tokens(stack)['alg none']}"}, timeout=30)
    assert r.status_code == 401
    assert get(stack, approval, stack.mint("alice")).json()["status"] == "pending"


def test_refusal_reasons_are_logged_without_the_token(stack, approval):
    token = bad_tokens(stack)["expired"]
    get(stack, approval, token)
    time.sleep(0.5)
    log = stack.worker_log()
    assert '"auth_refused"' in log and "expired" in log
    assert token not in log and token.split(".")[2] not in log

"""JWT verification in the worker follows aws-jwt-verify. Tokens are minted here with the stack's
own RSA key (trusted through the IdP's JWKS) and with attacker keys. Every test runs against both provider
profiles: the Cognito stack, and the generic OpenID Connect one (Entra-like: `aud`/`azp`, keys without `alg`,
the JWKS found through discovery)."""
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

from support.api import Api, Workflows, log_with, paused_factory
from ringi_stack import MACHINE_CLIENT_ID

ATTACKER = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict, claims: dict, sign) -> str:
    head = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(sign(head.encode()))


def claims(profile_stack, sub="alice", **over):
    return profile_stack.claims(sub, ttl=600, **over)


def profile_specific(profile_stack):
    """What only one profile checks: Cognito's client_id and token_use, the generic profile's aud and azp."""
    if profile_stack.generic:
        return {
            "wrong aud": profile_stack.mint("alice", aud="someone-else"),
            "aud array without ringi's client": profile_stack.mint("alice", aud=["someone-else", "other"]),
            "no aud": profile_stack.mint("alice", aud=None),
            "azp of another client": profile_stack.mint("alice", azp=MACHINE_CLIENT_ID),
            "a Cognito-shaped token of this issuer": profile_stack.mint("alice", aud=None, azp=None, token_use="access",
                                                                 client_id=profile_stack.client_id),
        }
    return {
        "wrong client_id": profile_stack.mint("alice", client_id="someone-else"),
        "wrong token_use": profile_stack.mint("alice", token_use="id"),
        "an OIDC-shaped token of this issuer": profile_stack.mint("alice", client_id=None, token_use=None,
                                                           aud=profile_stack.client_id),
    }


def bad_tokens(profile_stack):
    now = int(time.time())
    public_pem = profile_stack.private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo)
    attacker_jwk = json.loads(RSAAlgorithm.to_jwk(ATTACKER.public_key()))
    good = profile_stack.mint("alice")
    h, p, s = good.split(".")
    tampered_payload = b64(json.dumps(claims(profile_stack, sub="bob")).encode())
    return {
        "alg none": forge({"alg": "none", "kid": profile_stack.kid}, claims(profile_stack), lambda _: b""),
        "alg None case variant": forge({"alg": "None", "kid": profile_stack.kid}, claims(profile_stack), lambda _: b""),
        "HS256 keyed with the public key": forge({"alg": "HS256", "kid": profile_stack.kid}, claims(profile_stack),
                                                 lambda m: hmac.new(public_pem, m, hashlib.sha256).digest()),
        "embedded jwk header": jwt.encode(claims(profile_stack), ATTACKER, algorithm="RS256",
                                          headers={"kid": profile_stack.kid, "jwk": attacker_jwk}),
        "jku header pointing elsewhere": jwt.encode(claims(profile_stack), ATTACKER, algorithm="RS256",
                                                    headers={"kid": profile_stack.kid, "jku": "http://127.0.0.1:1/jwks.json"}),
        "unknown kid": jwt.encode(claims(profile_stack), ATTACKER, algorithm="RS256", headers={"kid": "attacker-kid"}),
        "no kid": jwt.encode(claims(profile_stack), profile_stack.private_key, algorithm="RS256"),
        "kid injection": profile_stack.mint("alice", kid="../../etc/passwd' OR 1=1"),
        "wrong iss": profile_stack.mint("alice", iss=profile_stack.issuer + "x"),
        **profile_specific(profile_stack),
        "expired": profile_stack.mint("alice", exp=now - 120, iat=now - 3000),
        "nbf in the future": profile_stack.mint("alice", nbf=now + 300),
        "iat in the future": profile_stack.mint("alice", iat=now + 300),
        "no exp": profile_stack.mint("alice", exp=None),
        "tampered payload": f"{h}.{tampered_payload}.{s}",
        "signature of another token": f"{h}.{p}.{profile_stack.mint('bob').split('.')[2]}",
        "two segments": f"{h}.{p}",
        "four segments": f"{good}.x",
        "not base64": "%%%.^^^.&&&",
        "empty": "",
        "oversized": profile_stack.mint("alice", pad="x" * 9000),
        "duplicate sub": _dup_sub(profile_stack),
        # Validly signed by the issuer's key, but asks for an extension the worker does not implement.
        "crit header": profile_stack.mint("alice", headers={"crit": ["exp"], "exp": now + 600}),
    }


def _dup_sub(profile_stack):
    import re
    body = json.dumps(claims(profile_stack))
    body = re.sub(r'^\{', '{"sub": "bob", ', body)  # two "sub" keys: first bob, then alice
    head = b64(json.dumps({"alg": "RS256", "kid": profile_stack.kid}).encode()) + "." + b64(body.encode())
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    return head + "." + b64(profile_stack.private_key.sign(head.encode(), padding.PKCS1v15(), hashes.SHA256()))


@pytest.fixture(scope="module")
def approval(profile_stack):
    return paused_factory(Workflows(profile_stack), Api(profile_stack))()[0]


def get(profile_stack, approval_id, token):
    return requests.get(f"{profile_stack.base_url}/api/v1/approvals/{approval_id}",
                        headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_valid_token_is_accepted(profile_stack, approval):
    assert get(profile_stack, approval, profile_stack.mint("alice")).status_code == 200


def test_every_bad_token_is_a_generic_401(profile_stack, approval):
    bodies = set()
    for name, token in bad_tokens(profile_stack).items():
        r = get(profile_stack, approval, token)
        assert r.status_code == 401, f"{name}: {r.status_code} {r.text}"
        assert r.headers.get("www-authenticate") == "Bearer", name
        bodies.add(r.text)
    assert len(bodies) == 1, "the reason is logged, never returned"
    assert json.loads(bodies.pop())["error"]["code"] == "unauthorized"


def test_missing_or_non_bearer_authorization_is_401(profile_stack, approval):
    url = f"{profile_stack.base_url}/api/v1/approvals/{approval}"
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, headers={"authorization": f"Basic {profile_stack.mint('alice')}"}, timeout=10).status_code == 401


def test_decisions_need_a_valid_token_too(profile_stack, approval):
    r = requests.post(f"{profile_stack.base_url}/api/v1/approvals/{approval}/decision", json={"decision": "approve"},
                      headers={"authorization": f"Bearer {bad_tokens(profile_stack)['alg none']}"}, timeout=30)
    assert r.status_code == 401
    assert get(profile_stack, approval, profile_stack.mint("alice")).json()["status"] == "pending"


def test_refusal_reasons_are_logged_without_the_token(profile_stack, approval):
    token = bad_tokens(profile_stack)["expired"]
    get(profile_stack, approval, token)
    log = log_with(profile_stack.state / "worker.log", '"auth_refused"')
    assert '"auth_refused"' in log and "expired" in log
    assert token not in log and token.split(".")[2] not in log

"""A Lambda for the state after the approval: it checks ringi's receipt of the decision before the work that needed
the approval runs (README.md, "Checking the receipt"). Deploy it with PyJWT and cryptography in the package
(`pip install --target package "PyJWT[crypto]"`); it needs no AWS permissions of its own, only HTTPS to ringi.

Its event (the state's Payload): {"issuer": "https://approvals.example.com", "approval": <the state's $.approval>}.
It answers the receipt's claims when the receipt is ringi's — signed with a key ringi publishes at
ISSUER/.well-known/jwks.json, of type ringi-receipt+jwt, issued by ISSUER — and says what the workflow was told:
the same approval, an approval, at the same time. Anything else raises ReceiptRefused, the error the state's
Catch routes. The issuer is the one you name, never one the receipt names."""
from __future__ import annotations

import jwt

RECEIPT_TYP = "ringi-receipt+jwt"
# A warm Lambda keeps the keys for an hour; an unknown key ID (a rotation) fetches them again.
_clients: dict[str, jwt.PyJWKClient] = {}


class ReceiptRefused(Exception):
    """The state's error name: route it with `"Catch": [{"ErrorEquals": ["ReceiptRefused"], …}]`."""


def handler(event: dict, context=None) -> dict:
    issuer = str(event["issuer"]).rstrip("/")
    approval = event.get("approval") or {}
    receipt = approval.get("receipt")
    if not isinstance(receipt, str):
        raise ReceiptRefused("the decision carries no receipt: is ringi's key ring (SIGNING_KEY) configured?")
    try:
        header = jwt.get_unverified_header(receipt)
    except jwt.DecodeError as e:
        raise ReceiptRefused(f"not a compact JWS: {e}") from e
    if header.get("typ") != RECEIPT_TYP or header.get("alg") != "ES256":
        raise ReceiptRefused(f"not a ringi receipt (typ {header.get('typ')!r}, alg {header.get('alg')!r})")
    client = _clients.setdefault(issuer, jwt.PyJWKClient(f"{issuer}/.well-known/jwks.json", lifespan=3600))
    try:
        key = client.get_signing_key(header.get("kid"))
        claims = jwt.decode(receipt, key.key, algorithms=["ES256"], issuer=issuer,
                            options={"require": ["iss", "iat", "sub"]}, leeway=60)
    except (jwt.PyJWKClientError, jwt.InvalidTokenError) as e:
        raise ReceiptRefused(f"refused: {e}") from e
    # What the workflow was told must be what ringi signed: the same approval, approved, at the same time.
    told = {"approvalId": approval.get("approvalId"), "decidedAt": approval.get("decidedAt")}
    signed = {"approvalId": claims.get("approvalId"), "decidedAt": claims.get("decidedAt")}
    if told != signed or claims.get("decision") != "approved":
        raise ReceiptRefused(f"the receipt says {claims.get('decision')} for {signed}, the output {told}")
    return claims

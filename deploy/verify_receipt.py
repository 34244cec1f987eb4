#!/usr/bin/env python3
"""Checks a ringi decision receipt (the `receipt` of a callback's output; design.md §6 "The key ring and decision
receipts") against the keys ringi publishes, and prints what it says.

    python deploy/verify_receipt.py --issuer https://approvals.example.com RECEIPT      (or the receipt on stdin)
        [--task-token-sha256 HEX]   also check the task token's digest (a state can take it from $$.Task.Token)
        [--jwks FILE]               keys from a file instead of ISSUER/.well-known/jwks.json (a retired key kept)

The issuer is yours to name: the keys are fetched from it, never from what the receipt claims. Exit 0 and the
claims as JSON when the signature, the type, the issuer and the digest hold; exit 1 and the reason otherwise."""
from __future__ import annotations

import argparse
import json
import sys
import urllib.request

import jwt

RECEIPT_TYP = "ringi-receipt+jwt"


class Refused(Exception):
    pass


def published_keys(issuer: str) -> dict:
    with urllib.request.urlopen(f"{issuer.rstrip('/')}/.well-known/jwks.json", timeout=30) as r:
        return json.load(r)


def verify(receipt: str, issuer: str, jwks: dict, task_token_sha256: str | None = None) -> dict:
    """The receipt's claims if it holds; `Refused` with the reason if not."""
    try:
        header = jwt.get_unverified_header(receipt)
    except jwt.DecodeError as e:
        raise Refused(f"not a compact JWS: {e}") from e
    if header.get("typ") != RECEIPT_TYP or header.get("alg") != "ES256":
        raise Refused(f"not a ringi receipt (typ {header.get('typ')!r}, alg {header.get('alg')!r})")
    keys = [k for k in jwks.get("keys", []) if k.get("kid") == header.get("kid")]
    if not keys:
        raise Refused(f"no published key {header.get('kid')!r} at {issuer}: retired, or not ringi's")
    try:
        claims = jwt.decode(receipt, jwt.PyJWK(keys[0]).key, algorithms=["ES256"], issuer=issuer.rstrip("/"),
                            options={"require": ["iss", "iat", "sub"]})
    except jwt.InvalidTokenError as e:
        raise Refused(f"refused: {e}") from e
    if task_token_sha256 and claims.get("taskTokenSha256") != task_token_sha256.lower():
        raise Refused("the receipt is for another task token")
    return claims


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("receipt", nargs="?", help="the receipt (default: stdin)")
    ap.add_argument("--issuer", required=True, help="ringi's public origin, e.g. https://approvals.example.com")
    ap.add_argument("--task-token-sha256", help="the task token's SHA-256 (hex) the receipt must name")
    ap.add_argument("--jwks", help="a JWK set file to check against instead of the issuer's published keys")
    args = ap.parse_args(argv)
    receipt = (args.receipt or sys.stdin.read()).strip()
    try:
        jwks = json.loads(open(args.jwks).read()) if args.jwks else published_keys(args.issuer)
        claims = verify(receipt, args.issuer, jwks, args.task_token_sha256)
    except Refused as e:
        print(f"receipt: {e}", file=sys.stderr)
        return 1
    print(json.dumps(claims, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

//! ringi's key ring (`SIGNING_KEY`, `PUBLISHED_KEYS`): the one EC P-256 key ringi signs with — its decision
//! receipts and, under federation, its tokens for AWS — and the public keys it publishes at
//! `PUBLIC_BASE_URL/.well-known/jwks.json`: the signing key's, then the next or previous keys of a rotation. One ring
//! for every signature ringi makes, so one rotation covers them all. The signing itself is the platform's
//! (WebCrypto); the keys, the JWKS and the JWS layout are here.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use serde_json::{json, Value};

/// A P-256 key as a JWK (`kty` EC, `crv` P-256, `x`, `y`, `kid`; `d` for the private one).
#[derive(Clone, Deserialize, PartialEq, Eq)]
struct EcJwk {
    kty: String,
    crv: String,
    x: String,
    y: String,
    kid: String,
    #[serde(default)]
    d: Option<String>,
}

impl std::fmt::Debug for EcJwk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EcJwk({})", self.kid)
    }
}

impl EcJwk {
    fn parse(v: &Value, private: bool) -> Result<Self, String> {
        let k: EcJwk =
            serde_json::from_value(v.clone()).map_err(|_| "must be a JWK with kty, crv, x, y and kid".to_owned())?;
        let coordinate = |c: &str| URL_SAFE_NO_PAD.decode(c).is_ok_and(|b| b.len() == 32);
        if k.kty != "EC" || k.crv != "P-256" || !coordinate(&k.x) || !coordinate(&k.y) {
            return Err("must be an EC P-256 key (ES256)".into());
        }
        if k.kid.is_empty() || k.kid.len() > 64 || !k.kid.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("kid must be 1-64 printable characters".into());
        }
        match (&k.d, private) {
            (Some(d), true) if coordinate(d) => Ok(k),
            (_, true) => Err("must be a private key (d)".into()),
            (Some(_), false) => Err(format!("key {} is published: it must not hold the private part (d)", k.kid)),
            (None, false) => Ok(k),
        }
    }

    fn public(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y, "kid": self.kid, "alg": "ES256", "use": "sig"})
    }
}

/// `SIGNING_KEY`'s private key. Never printed: `Debug` shows the kid only.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(EcJwk);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.0.kid)
    }
}

impl SigningKey {
    /// One private EC P-256 JWK on its own (`VAPID_KEY`): the same checks as `SIGNING_KEY`'s; the error
    /// says what is wrong, never the key.
    pub fn parse(jwk: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(jwk).map_err(|_| "must be a JWK (JSON)".to_owned())?;
        EcJwk::parse(&v, true).map(Self)
    }

    /// The public key as an uncompressed point (`0x04 ‖ x ‖ y`, 65 bytes): what a browser's
    /// `applicationServerKey` and a VAPID `k=` carry.
    pub fn public_point(&self) -> Vec<u8> {
        let mut p = vec![4u8];
        for c in [&self.0.x, &self.0.y] {
            p.extend(URL_SAFE_NO_PAD.decode(c).unwrap_or_default());
        }
        p
    }

    pub fn kid(&self) -> &str {
        &self.0.kid
    }

    /// The JWK WebCrypto imports (`importKey("jwk", …)`, ECDSA P-256, usage `sign`).
    pub fn private_jwk(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.0.x, "y": self.0.y, "d": self.0.d, "ext": false})
    }
}

/// The signing key and the other published keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRing {
    pub signing: SigningKey,
    /// Public keys published besides the signing key's: the next one before a rotation, the previous one after
    /// (as long as something it signed may still be checked).
    published: Vec<EcJwk>,
}

impl KeyRing {
    /// `SIGNING_KEY` (a private EC P-256 JWK) and `PUBLISHED_KEYS` (a JSON array of public ones). An error names
    /// the variable.
    pub fn parse(signing: &str, published: Option<&str>) -> Result<Self, (&'static str, String)> {
        let v: Value = serde_json::from_str(signing).map_err(|_| ("SIGNING_KEY", "must be a JWK (JSON)".into()))?;
        let signing = SigningKey(EcJwk::parse(&v, true).map_err(|e| ("SIGNING_KEY", e))?);
        let published = match published {
            None => Vec::new(),
            Some(p) => {
                let keys: Vec<Value> = serde_json::from_str(p)
                    .map_err(|_| ("PUBLISHED_KEYS", "must be a JSON array of public JWKs".to_owned()))?;
                let keys = keys
                    .iter()
                    .map(|k| EcJwk::parse(k, false))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ("PUBLISHED_KEYS", e))?;
                if keys.iter().any(|k| k.kid == signing.0.kid) {
                    return Err(("PUBLISHED_KEYS", "repeats the signing key's kid".into()));
                }
                keys
            }
        };
        Ok(Self { signing, published })
    }

    /// `/.well-known/jwks.json`: the signing key's public half first, then the other published keys.
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = std::iter::once(&self.signing.0).chain(&self.published).map(EcJwk::public).collect();
        json!({ "keys": keys })
    }

    /// The JWS signing input (`header.payload`, base64url) of `claims` under the signing key, its header typed
    /// `typ` (a verifier tells a receipt from a token for AWS by it).
    pub fn signing_input(&self, typ: &str, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": typ, "kid": self.signing.kid()});
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
    }
}

/// A finished JWS from its signing input and the raw (r‖s) ECDSA signature WebCrypto returns.
pub fn jws(signing_input: &str, signature: &[u8]) -> String {
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIVATE: &str = r#"{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#;
    const NEXT: &str = r#"[{"kty":"EC","crv":"P-256","kid":"k2",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]"#;

    fn ring(published: Option<&str>) -> KeyRing {
        KeyRing::parse(PRIVATE, published).unwrap()
    }

    #[test]
    fn published_keys_are_public_halves_with_the_signing_key_first() {
        let jwks = ring(Some(NEXT)).jwks();
        let kids: Vec<&str> = jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap()).collect();
        assert_eq!(kids, ["k1", "k2"]);
        assert!(!jwks.to_string().contains("\"d\""), "no private part is ever published");
        assert_eq!(jwks["keys"][0]["alg"], "ES256");
        assert!(!format!("{:?}", ring(None)).contains("jpsQ"), "Debug hides the private key");
    }

    #[test]
    fn keys_are_checked() {
        let err = |s: &str, p: Option<&str>| KeyRing::parse(s, p).unwrap_err();
        assert_eq!(err("nope", None).0, "SIGNING_KEY");
        assert!(err(&PRIVATE.replace(r#""d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI""#, r#""z":1"#), None)
            .1
            .contains("private"));
        assert!(err(&PRIVATE.replace("P-256", "P-384"), None).1.contains("P-256"));
        assert_eq!(
            err(PRIVATE, Some(&NEXT.replace("k2", "k1"))),
            ("PUBLISHED_KEYS", "repeats the signing key's kid".into())
        );
        let leaked = NEXT.replace(r#""kid":"k2""#, r#""kid":"k2","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI""#);
        assert!(err(PRIVATE, Some(&leaked)).1.contains("must not hold"));
    }

    #[test]
    fn a_signed_value_is_typed_and_names_the_signing_key() {
        let input = ring(None).signing_input("ringi-receipt+jwt", &json!({"a": 1}));
        let (h, c) = input.split_once('.').unwrap();
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "typ": "ringi-receipt+jwt", "kid": "k1"}));
        assert_eq!(URL_SAFE_NO_PAD.decode(c).unwrap(), br#"{"a":1}"#);
        assert_eq!(jws(&input, &[0u8; 64]).matches('.').count(), 2);
    }

    #[test]
    fn a_single_private_key_parses_with_the_rings_checks() {
        let k = SigningKey::parse(PRIVATE).unwrap();
        assert_eq!((k.kid(), k.public_point().len(), k.public_point()[0]), ("k1", 65, 4));
        assert!(SigningKey::parse(&NEXT[1..NEXT.len() - 1]).unwrap_err().contains("private"));
        assert_eq!(SigningKey::parse("x").unwrap_err(), "must be a JWK (JSON)");
    }
}

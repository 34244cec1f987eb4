//! The issuer's signing keys: choosing the key a token names from a JWKS document, and the cache (with
//! aws-jwt-verify's penalty box) that decides when the worker fetches the document again.

use std::collections::BTreeSet;

use serde::Deserialize;

/// One key of a JWKS document; unknown members are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub alg: Option<String>,
    #[serde(default, rename = "use")]
    pub use_: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    #[serde(default)]
    pub e: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// The RSA signing key with this `kid` for a token whose header says RS256 ([`crate::adapters::jwt::parse`] refuses every other
    /// `alg`). A key that names its `alg` must say RS256 (aws-jwt-verify: jwk.alg == alg), with `use` absent or
    /// `sig`. A key without `alg` (Entra ID publishes them so) is taken only when it says `use: sig`: a key
    /// that names neither could be meant for encryption, and is refused.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| {
            let purpose_ok = match k.alg.as_deref() {
                Some(alg) => alg == "RS256" && k.use_.as_deref().is_none_or(|u| u == "sig"),
                None => k.use_.as_deref() == Some("sig"),
            };
            k.kid.as_deref() == Some(kid) && k.kty == "RSA" && purpose_ok && k.n.is_some() && k.e.is_some()
        })
    }
}

/// JWKS cache with aws-jwt-verify's penalty box: an unknown `kid` triggers at most one refetch per
/// `min_refetch_ms`, so a flood of made-up kids cannot hammer the issuer. Keyed by the JWKS URL: keys are only
/// used for the URL they were fetched from (a discovery document that names another `jwks_uri`, another
/// configuration in the same isolate), and another URL starts afresh.
///
/// Two clocks: the refetch limit and the keys' age are ringi's own policy and follow the worker's "now" (which the
/// dev-only test clock moves); how long a fetch counts as in flight is real waiting, judged by the host's clock.
/// A "now" earlier than the last attempt (a request on the real clock after one on a moved clock) is not
/// rate-limited by it.
#[derive(Debug, Clone, Default)]
pub struct JwksCache {
    /// Where `jwks` came from and `last_attempt` went.
    url: Option<String>,
    jwks: Option<Jwks>,
    fetched_at: i64,
    last_attempt: Option<i64>,
    /// Start of the fetch in flight, if any; it counts as in flight for at most [`JWKS_IN_FLIGHT_MS`].
    in_flight_since: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    Found(Jwk),
    /// Fetch the JWKS now, then [`JwksCache::store`] it and look again.
    Fetch,
    NotFound,
}

pub const JWKS_MAX_AGE_MS: i64 = 60 * 60 * 1000;
pub const JWKS_MIN_REFETCH_MS: i64 = 10 * 1000;
/// How long a started fetch counts as in flight for other requests (which wait for it rather than fetch too),
/// whatever becomes of it: a fetching request that is cancelled mid-fetch never says it ended. Longer than the
/// worker's fetch timeout (3 s), so that it only matters for such a request.
pub const JWKS_IN_FLIGHT_MS: i64 = 5 * 1000;

impl JwksCache {
    /// The key `kid` of the JWKS at `url`.
    pub fn lookup(&self, url: &str, kid: &str, now_ms: i64) -> KeyLookup {
        if self.url.as_deref() != Some(url) {
            return KeyLookup::Fetch;
        }
        let fresh = self.jwks.is_some() && now_ms - self.fetched_at < JWKS_MAX_AGE_MS;
        if let Some(k) = self.jwks.as_ref().and_then(|j| j.find(kid)).filter(|_| fresh) {
            return KeyLookup::Found(k.clone());
        }
        match self.last_attempt.filter(|t| recent(now_ms, *t)) {
            Some(_) if fresh => KeyLookup::NotFound,
            Some(_) => match self.jwks.as_ref().and_then(|j| j.find(kid)) {
                // Stale but the issuer was just asked: keep using what we have.
                Some(k) => KeyLookup::Found(k.clone()),
                None => KeyLookup::NotFound,
            },
            _ => KeyLookup::Fetch,
        }
    }

    /// Record a fetch attempt of `url` before it is made (failed fetches count against the rate limit too).
    /// Another URL than the cached one drops the cached keys and attempts: they were not this URL's.
    pub fn note_attempt(&mut self, url: &str, now_ms: i64) {
        if self.url.as_deref() != Some(url) {
            *self = Self { url: Some(url.to_owned()), in_flight_since: self.in_flight_since, ..Self::default() };
        }
        self.last_attempt = Some(now_ms);
    }

    /// A fetch of `url` starts now: an attempt at `now_ms` (rate limit), and in flight from `wall_ms` until
    /// [`Self::end_fetch`] or [`JWKS_IN_FLIGHT_MS`], whichever comes first. Returns the mark to end it with.
    pub fn begin_fetch(&mut self, url: &str, now_ms: i64, wall_ms: i64) -> i64 {
        self.note_attempt(url, now_ms);
        self.in_flight_since = Some(wall_ms);
        wall_ms
    }

    /// The fetch begun at `mark` is over (only that one: a later fetch may have begun after it expired).
    pub fn end_fetch(&mut self, mark: i64) {
        if self.in_flight_since == Some(mark) {
            self.in_flight_since = None;
        }
    }

    /// Is a fetch in flight (begun less than [`JWKS_IN_FLIGHT_MS`] ago by the host's clock, and not ended)?
    pub fn fetch_in_flight(&self, wall_ms: i64) -> bool {
        self.in_flight_mark(wall_ms).is_some()
    }

    /// The mark of the fetch in flight, if any (what [`Self::begin_fetch`] returned for it).
    pub fn in_flight_mark(&self, wall_ms: i64) -> Option<i64> {
        self.in_flight_since.filter(|since| wall_ms - since < JWKS_IN_FLIGHT_MS)
    }

    /// The keys fetched from `url`; dropped if the cache has moved on to another URL meanwhile.
    pub fn store(&mut self, url: &str, jwks: Jwks, now_ms: i64) {
        if self.url.as_deref() == Some(url) {
            self.jwks = Some(jwks);
            self.fetched_at = now_ms;
        }
    }

    pub fn kids(&self) -> BTreeSet<String> {
        self.jwks.iter().flat_map(|j| j.keys.iter().filter_map(|k| k.kid.clone())).collect()
    }
}

/// An attempt at `attempt` still holds back another at `now` (never one at an earlier "now").
pub fn recent(now_ms: i64, attempt: i64) -> bool {
    (0..JWKS_MIN_REFETCH_MS).contains(&(now_ms - attempt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwks() -> Jwks {
        serde_json::from_value(json!({"keys": [
            {"kty": "RSA", "kid": "a", "alg": "RS256", "use": "sig", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "noalg", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "alg": "RS256", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "kid": "ec", "alg": "ES256", "crv": "P-256", "x": "x", "y": "y"},
            {"kty": "RSA", "kid": "entra", "use": "sig", "n": "AQAB", "e": "AQAB", "x5t": "t", "issuer": "i"},
            {"kty": "RSA", "kid": "noalg-enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "ps256", "alg": "PS256", "use": "sig", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "kid": "ec-noalg", "use": "sig", "crv": "P-256", "x": "x", "y": "y"},
            {"kty": "RSA", "kid": "noalg-no-n", "use": "sig", "e": "AQAB"}
        ]}))
        .unwrap()
    }

    #[test]
    fn jwks_key_selection() {
        let j = jwks();
        assert!(j.find("a").is_some());
        assert!(j.find("noalg").is_none(), "a key naming neither alg nor use is refused");
        assert!(j.find("entra").is_some(), "no alg, but RSA with use sig: taken for an RS256 token");
        assert!(j.find("noalg-enc").is_none(), "no alg and an encryption key");
        assert!(j.find("ps256").is_none(), "a key that names another alg");
        assert!(j.find("ec-noalg").is_none(), "no alg but not RSA");
        assert!(j.find("noalg-no-n").is_none(), "no modulus");
        assert!(j.find("enc").is_none());
        assert!(j.find("ec").is_none());
        assert!(j.find("zzz").is_none());
    }

    const KEYS: &str = "https://idp.example.com/keys";

    #[test]
    fn cache_refetches_unknown_kid_at_most_every_10s() {
        let mut c = JwksCache::default();
        assert_eq!(c.lookup(KEYS, "a", 0), KeyLookup::Fetch);
        c.note_attempt(KEYS, 0);
        c.store(KEYS, jwks(), 0);
        assert!(matches!(c.lookup(KEYS, "a", 1), KeyLookup::Found(_)));
        assert_eq!(c.lookup(KEYS, "new", 5_000), KeyLookup::NotFound, "penalty box");
        assert_eq!(c.lookup(KEYS, "new", 10_000), KeyLookup::Fetch);
        c.note_attempt(KEYS, 10_000);
        assert_eq!(c.lookup(KEYS, "new", 10_001), KeyLookup::NotFound);
        // After an hour the cached set is refreshed even for known kids.
        assert_eq!(c.lookup(KEYS, "a", JWKS_MAX_AGE_MS + 1), KeyLookup::Fetch);
        c.note_attempt(KEYS, JWKS_MAX_AGE_MS + 1);
        // Refresh failed (nothing stored): keep serving the known key rather than locking everyone out.
        assert!(matches!(c.lookup(KEYS, "a", JWKS_MAX_AGE_MS + 2), KeyLookup::Found(_)));
    }

    #[test]
    fn cached_keys_serve_only_the_url_they_came_from() {
        let other = "https://idp.example.com/other-keys";
        let mut c = JwksCache::default();
        c.begin_fetch(KEYS, 0, 0);
        c.store(KEYS, jwks(), 0);
        assert!(matches!(c.lookup(KEYS, "a", 1), KeyLookup::Found(_)));
        // Another URL finds nothing, whatever the kid, and is fetched at once (its own rate limit).
        assert_eq!(c.lookup(other, "a", 2), KeyLookup::Fetch);
        let mark = c.begin_fetch(other, 2, 2);
        assert_eq!(c.lookup(other, "a", 3), KeyLookup::NotFound, "penalty box of the new URL");
        // Keys of the first URL arriving late are not taken as the other URL's.
        c.store(KEYS, jwks(), 4);
        assert_eq!(c.lookup(other, "a", 5), KeyLookup::NotFound);
        assert_eq!(c.lookup(KEYS, "a", 5), KeyLookup::Fetch, "the first URL's keys were dropped");
        c.end_fetch(mark);
        c.store(other, jwks(), 6);
        assert!(matches!(c.lookup(other, "a", 7), KeyLookup::Found(_)));
    }

    #[test]
    fn the_rate_limit_follows_the_workers_clock_and_the_in_flight_window_the_hosts() {
        let mut c = JwksCache::default();
        let mark = c.begin_fetch(KEYS, 1_000, 1_000);
        c.end_fetch(mark);
        assert_eq!(c.lookup(KEYS, "a", 1_000 + JWKS_MIN_REFETCH_MS - 1), KeyLookup::NotFound);
        // The worker's clock moved forward past the limit (test clock): fetched again at once, although the
        // host's clock has not moved.
        assert_eq!(c.lookup(KEYS, "a", 1_000 + JWKS_MIN_REFETCH_MS), KeyLookup::Fetch);
        let moved = 1_000 + JWKS_MIN_REFETCH_MS + 60_000;
        let mark = c.begin_fetch(KEYS, moved, 1_001);
        assert!(c.fetch_in_flight(1_001 + JWKS_IN_FLIGHT_MS - 1), "in flight by the host's clock");
        assert!(!c.fetch_in_flight(1_001 + JWKS_IN_FLIGHT_MS));
        c.end_fetch(mark);
        // A request on the real clock after one on a moved clock is not held back by the moved attempt.
        assert_eq!(c.lookup(KEYS, "a", 2_000), KeyLookup::Fetch);
        assert!(!recent(moved - 1, moved) && recent(moved, moved) && !recent(moved + JWKS_MIN_REFETCH_MS, moved));
    }

    #[test]
    fn a_fetch_in_flight_expires_even_if_its_request_never_ends_it() {
        let mut c = JwksCache::default();
        assert!(!c.fetch_in_flight(0));
        let mark = c.begin_fetch(KEYS, 1_000, 1_000);
        assert!(c.fetch_in_flight(1_000) && c.fetch_in_flight(1_000 + JWKS_IN_FLIGHT_MS - 1));
        // The fetching request was cancelled: nobody calls end_fetch, the mark expires by itself.
        assert!(!c.fetch_in_flight(1_000 + JWKS_IN_FLIGHT_MS));
        assert_eq!(c.lookup(KEYS, "a", 1_000 + JWKS_IN_FLIGHT_MS), KeyLookup::NotFound, "still rate-limited");
        assert_eq!(c.lookup(KEYS, "a", 1_000 + JWKS_MIN_REFETCH_MS), KeyLookup::Fetch, "then fetched again");
        // A stale end of the first fetch does not end a newer one.
        let newer = c.begin_fetch(KEYS, 1_000 + JWKS_MIN_REFETCH_MS, 1_000 + JWKS_MIN_REFETCH_MS);
        c.end_fetch(mark);
        assert!(c.fetch_in_flight(newer + 1));
        c.end_fetch(newer);
        assert!(!c.fetch_in_flight(newer + 1));
    }
}

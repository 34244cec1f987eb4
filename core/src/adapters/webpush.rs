//! Web Push (design.md §9 "Push"): the browser's subscription and its checks, the message ringi sends (RFC 8291
//! `aes128gcm` payload encryption, RFC 8292 VAPID), and what a push service's answer means. The framing is here;
//! the primitives (ECDH P-256, HKDF-SHA256, AES-128-GCM, ES256) are the platform's, behind [`PushCrypto`] — the
//! worker's WebCrypto, the tests' RustCrypto.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::adapters::keyring::jws;
use crate::base::error::ApiError;
use crate::base::hex::hex_sha256;
use crate::base::principal::Principal;
use crate::base::text::{is_loopback_origin, origin_of};

/// The record size ringi declares (RFC 8188 `rs`): one record always, the payload is ≤ [`MAX_PAYLOAD`].
pub const RECORD_SIZE: u32 = 4096;
/// The payload's JSON is kept under this (RFC 8291 allows 3,993 bytes of plaintext in one 4,096-byte record).
pub const MAX_PAYLOAD: usize = 3072;
/// An endpoint URL longer than this is refused (real ones are a few hundred bytes).
pub const MAX_ENDPOINT: usize = 1024;
/// Subscriptions one person may keep (devices); one more is a 409 `too_many_devices`.
pub const MAX_DEVICES: usize = 10;
/// The longest `TTL` ringi asks a push service to keep a message (4 weeks: what the services accept).
pub const MAX_TTL_SECS: i64 = 2_419_200;
/// `Urgency: high` when this little time is left before the deadline.
pub const HIGH_URGENCY_MS: i64 = 3_600_000;
/// How long a VAPID JWT is valid (RFC 8292: at most 24 h).
pub const VAPID_VALIDITY_SECS: i64 = 12 * 3600;

/// The push services a subscription's endpoint may name when `PUSH_ALLOWED_HOSTS` is unset: the browsers' own.
/// `*.` matches any subdomain (not the domain itself).
pub const DEFAULT_PUSH_HOSTS: [&str; 4] =
    ["fcm.googleapis.com", "updates.push.services.mozilla.com", "*.push.apple.com", "*.notify.windows.com"];

/// The primitives RFC 8291 and RFC 8292 need, the platform's. Each returns raw bytes.
#[allow(async_fn_in_trait)] // single-threaded worker: no Send bound wanted
pub trait PushCrypto {
    /// A fresh ephemeral P-256 key pair's ECDH with `peer` (65-byte uncompressed point): (own public point, the
    /// 32-byte shared secret).
    async fn ecdh(&self, peer: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String>;
    /// HKDF-SHA256 (extract with `salt`, then expand with `info`) to `len` bytes.
    async fn hkdf(&self, salt: &[u8], ikm: &[u8], info: &[u8], len: usize) -> Result<Vec<u8>, String>;
    /// AES-128-GCM of `plaintext` (the 16-byte tag appended).
    async fn aes128gcm(&self, key: &[u8], nonce: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, String>;
    /// ES256 with the VAPID key: the raw `r ‖ s` signature (64 bytes).
    async fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String>;
}

/// A browser's push subscription as stored: where to post, and the keys to encrypt for.
#[derive(Clone, PartialEq, Eq)]
pub struct Subscription {
    pub endpoint: String,
    /// `keys.p256dh`: the browser's P-256 public key, 65 bytes uncompressed.
    pub p256dh: Vec<u8>,
    /// `keys.auth`: 16 bytes.
    pub auth: Vec<u8>,
}

impl std::fmt::Debug for Subscription {
    /// The endpoint is a capability: only its hash.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Subscription({})", endpoint_hash(&self.endpoint))
    }
}

/// What the API takes (`PushSubscription.toJSON()`): `{endpoint, expirationTime?, keys: {p256dh, auth}}`, and
/// the language the SPA shows (`lang`, `en` or `ja`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionBody {
    pub endpoint: String,
    #[serde(default)]
    pub keys: Option<SubscriptionKeys>,
    #[serde(default)]
    pub lang: Option<String>,
}

/// A JSON object (the API's body limit applies as everywhere; the endpoint's own is [`MAX_ENDPOINT`]).
fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    crate::base::body::from_object(crate::base::body::json_value(body)?, |path, m| ApiError::invalid(path, m))
}

impl SubscriptionBody {
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        parse_body(body)
    }

    /// `en` or `ja` (anything else: `en`).
    pub fn lang(&self) -> &'static str {
        match self.lang.as_deref() {
            Some("ja") => "ja",
            _ => "en",
        }
    }
}

impl UnsubscribeBody {
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let b: Self = parse_body(body)?;
        if b.endpoint.len() > MAX_ENDPOINT {
            return Err(ApiError::invalid("endpoint", format!("must be at most {MAX_ENDPOINT} characters")));
        }
        Ok(b)
    }
}

#[derive(Deserialize)]
pub struct SubscriptionKeys {
    #[serde(default)]
    pub p256dh: String,
    #[serde(default)]
    pub auth: String,
}

/// `DELETE /api/v1/me/push`: `{endpoint}`.
#[derive(Deserialize)]
pub struct UnsubscribeBody {
    pub endpoint: String,
}

/// The push services ringi posts to (`PUSH_ALLOWED_HOSTS`): exact hosts, or `*.domain` for its subdomains;
/// `loopback`: `http://` to 127.0.0.0/8 or localhost too (only when `PUBLIC_BASE_URL` is loopback: the local
/// stack's stand-in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushHosts {
    pub hosts: Vec<String>,
    pub loopback: bool,
}

impl PushHosts {
    pub fn defaults(loopback: bool) -> Self {
        Self { hosts: DEFAULT_PUSH_HOSTS.iter().map(|h| (*h).to_owned()).collect(), loopback }
    }

    /// May ringi post to `endpoint`?
    pub fn allows(&self, endpoint: &str) -> bool {
        if self.loopback && endpoint.starts_with("http://") && is_loopback_origin(endpoint) {
            return true;
        }
        let Some(rest) = endpoint.strip_prefix("https://") else { return false };
        let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
        if authority.contains('@') || authority.is_empty() {
            return false;
        }
        let host = authority.rsplit_once(':').map_or(authority, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                authority
            }
        });
        let host = host.to_ascii_lowercase();
        self.hosts.iter().any(|allowed| match allowed.strip_prefix("*.") {
            Some(domain) => host.strip_suffix(domain).is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => host == *allowed,
        })
    }
}

impl SubscriptionBody {
    /// The checks a subscription passes before it is stored: an allowed push service's URL, the key lengths.
    pub fn check(&self, hosts: &PushHosts) -> Result<Subscription, ApiError> {
        let endpoint = self.endpoint.trim().to_owned();
        if endpoint.len() > MAX_ENDPOINT {
            return Err(ApiError::invalid("endpoint", format!("must be at most {MAX_ENDPOINT} characters")));
        }
        if endpoint.chars().any(|c| c.is_whitespace() || c.is_control()) || !hosts.allows(&endpoint) {
            return Err(ApiError::invalid(
                "endpoint",
                "must be an https:// URL of a push service this installation allows (PUSH_ALLOWED_HOSTS)",
            ));
        }
        let keys = self.keys.as_ref().ok_or_else(|| ApiError::invalid("keys", "required: {p256dh, auth}"))?;
        let decode = |field: &str, v: &str, len: usize| {
            URL_SAFE_NO_PAD
                .decode(v.trim_end_matches('='))
                .ok()
                .filter(|b| b.len() == len && (len != 65 || b[0] == 4))
                .ok_or_else(|| ApiError::invalid(field, format!("must be {len} bytes, base64url")))
        };
        let p256dh = decode("keys.p256dh", &keys.p256dh, 65)?;
        let auth = decode("keys.auth", &keys.auth, 16)?;
        Ok(Subscription { endpoint, p256dh, auth })
    }
}

/// What logs and events say instead of an endpoint (a capability): 16 hex digits of its SHA-256.
pub fn endpoint_hash(endpoint: &str) -> String {
    hex_sha256(endpoint.as_bytes())[..16].to_owned()
}

/// Whose subscriptions an approval's principals reach: the `sub`s, the verified emails and the groups a
/// subscription was stored with (lower-cased emails).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PushTargets {
    pub subs: Vec<String>,
    pub emails: Vec<String>,
    pub groups: Vec<String>,
}

impl PushTargets {
    pub fn of<'a>(principals: impl IntoIterator<Item = &'a Principal>) -> Self {
        let mut t = Self::default();
        for p in principals {
            let list = match p.normalized() {
                Principal::Sub(s) => (&mut t.subs, s),
                Principal::Email(e) => (&mut t.emails, e.to_ascii_lowercase()),
                Principal::Group(g) => (&mut t.groups, g),
            };
            if !list.0.contains(&list.1) {
                list.0.push(list.1);
            }
        }
        t
    }

    pub fn is_empty(&self) -> bool {
        self.subs.is_empty() && self.emails.is_empty() && self.groups.is_empty()
    }

    /// Does a subscription stored for (`sub`, `email`, `groups`) belong to one of these?
    pub fn reach(&self, sub: &str, email: Option<&str>, groups: &[String]) -> bool {
        self.subs.iter().any(|s| s == sub)
            || email.is_some_and(|e| self.emails.iter().any(|x| x.eq_ignore_ascii_case(e)))
            || groups.iter().any(|g| self.groups.contains(g))
    }
}

/// What the notification shows: the same facts as the request mail's first lines, no more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushMessage<'a> {
    pub approval_id: &'a str,
    pub title: &'a str,
    pub requester: &'a str,
    pub expires_at_ms: i64,
    /// `https://HOST/a/{id}`.
    pub url: &'a str,
    pub lang: &'a str,
}

impl PushMessage<'_> {
    /// The payload JSON `{title, requester, deadline, url, lang}`, under [`MAX_PAYLOAD`] bytes: the registrant's
    /// texts are shortened (never the URL).
    pub fn payload(&self) -> Vec<u8> {
        let deadline = crate::base::time::format_rfc3339(self.expires_at_ms);
        let body = |title: &str, requester: &str| {
            json!({"title": title, "requester": requester, "deadline": deadline, "url": self.url, "lang": self.lang})
                .to_string()
        };
        let mut limit = 1000;
        loop {
            let text = body(&cut(self.title, limit), &cut(self.requester, limit / 2));
            if text.len() <= MAX_PAYLOAD || limit < 8 {
                return text.into_bytes();
            }
            limit /= 2;
        }
    }

    /// The request's headers besides the encryption's: `TTL` (seconds to the deadline, capped), `Urgency`
    /// (`high` in the last hour), `Topic` (the approval: a reminder replaces the notification on the device).
    pub fn headers(&self, now_ms: i64) -> Vec<(&'static str, String)> {
        let left = self.expires_at_ms - now_ms;
        let ttl = (left / 1000).clamp(0, MAX_TTL_SECS);
        let urgency = if left <= HIGH_URGENCY_MS { "high" } else { "normal" };
        let topic: String =
            self.approval_id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(32).collect();
        vec![("ttl", ttl.to_string()), ("urgency", urgency.to_owned()), ("topic", topic)]
    }
}

/// At most `max` characters, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((i, _)) => format!("{}…", &s[..i]),
    }
}

/// RFC 8291 §3–4: `plaintext` encrypted for `sub` as one `aes128gcm` record (RFC 8188 header with the sender's
/// ephemeral public key as `keyid`, the padding delimiter 0x02, no padding). `salt`: 16 random bytes.
pub async fn encrypt<C: PushCrypto>(
    c: &C,
    sub: &Subscription,
    plaintext: &[u8],
    salt: &[u8; 16],
) -> Result<Vec<u8>, String> {
    if plaintext.len() > RECORD_SIZE as usize - 17 - 86 {
        return Err("payload too large for one record".into());
    }
    let (as_public, ecdh_secret) = c.ecdh(&sub.p256dh).await?;
    // IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info\0" ‖ ua_public ‖ as_public, 32)
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(&sub.p256dh);
    key_info.extend_from_slice(&as_public);
    let ikm = c.hkdf(&sub.auth, &ecdh_secret, &key_info, 32).await?;
    let cek = c.hkdf(salt, &ikm, b"Content-Encoding: aes128gcm\0", 16).await?;
    let nonce = c.hkdf(salt, &ikm, b"Content-Encoding: nonce\0", 12).await?;
    let mut record = plaintext.to_vec();
    record.push(2); // the last (and only) record's padding delimiter
    let sealed = c.aes128gcm(&cek, &nonce, &record).await?;
    let mut body = Vec::with_capacity(16 + 4 + 1 + as_public.len() + sealed.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(u8::try_from(as_public.len()).map_err(|_| "bad public key".to_owned())?);
    body.extend_from_slice(&as_public);
    body.extend_from_slice(&sealed);
    Ok(body)
}

/// RFC 8292's claims for a request to `endpoint`: `aud` its origin, `exp` [`VAPID_VALIDITY_SECS`] ahead, `sub`
/// the operator's contact (`mailto:` or `https:`).
pub fn vapid_claims(endpoint: &str, subject: &str, now_ms: i64) -> Value {
    // The endpoint passed `PushHosts::allows`: an origin it always has.
    let aud = origin_of(endpoint).unwrap_or_default();
    json!({"aud": aud, "exp": now_ms.div_euclid(1000) + VAPID_VALIDITY_SECS, "sub": subject})
}

/// The `Authorization` header RFC 8292 §3 defines: `vapid t=<ES256 JWT>, k=<public key, base64url>`.
pub async fn vapid_authorization<C: PushCrypto>(c: &C, public_point: &[u8], claims: &Value) -> Result<String, String> {
    let header = json!({"typ": "JWT", "alg": "ES256"});
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let sig = c.sign(input.as_bytes()).await?;
    Ok(format!("vapid t={}, k={}", jws(&input, &sig), URL_SAFE_NO_PAD.encode(public_point)))
}

/// What a push service's status means for the subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    /// 2xx: the service took the message.
    Delivered,
    /// 404 / 410: the subscription is gone: drop it.
    Gone,
    /// 429, 5xx, or no answer: try again (the cron).
    Retry,
    /// Any other refusal (400, 401, 403, 413 …): not retried, the subscription kept.
    Refused,
}

impl PushOutcome {
    /// `None`: no answer (a transport error or timeout).
    pub fn of(status: Option<u16>) -> Self {
        match status {
            Some(200..=299) => Self::Delivered,
            Some(404 | 410) => Self::Gone,
            None | Some(429 | 500..=599) => Self::Retry,
            Some(_) => Self::Refused,
        }
    }
}

#[cfg(test)]
mod tests;

//! Web Push (`ringi_core::adapters::webpush`, design.md §9 "Push") through WebCrypto and the Workers fetch API:
//! core frames the message (RFC 8291 `aes128gcm`, RFC 8292 VAPID), this file gives it the primitives and posts
//! it. Sent at the moments mail is — after the registration's response, with reminders, the escalation and
//! hand-overs — to the devices of the principals the approval names (by `sub`, verified email, or a group the
//! device's token named), through the outbox the cron retries. A device whose push service says it is gone
//! (404/410) is dropped. The endpoint is a capability: logs and events name its hash (`device`), never it.

use futures_util::future::join_all;
use js_sys::{Array, Object, Reflect, Uint8Array};
use ringi_core::adapters::keyring::SigningKey;
use ringi_core::adapters::webpush::{
    encrypt, vapid_authorization, vapid_claims, PushCrypto, PushMessage, PushOutcome, PushTargets,
};
use ringi_core::base::principal::{joined, Principal};
use ringi_core::config::{Config, PushConfig};
use ringi_core::{ApiError, ApprovalId};
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::CryptoKey;

use crate::aws::MAIL_TIMEOUT;
use crate::fetch::post_bytes;
use crate::platform::{algorithm, log, now_ms, random_bytes, subtle, wall_ms};
use crate::store::{ApprovalStore, MailJob, PushDevice, PushStore, PushTried, Store};

/// WebCrypto's primitives, signing with the VAPID key.
struct WebCrypto<'a> {
    vapid: &'a SigningKey,
}

async fn resolve(p: Result<js_sys::Promise, JsValue>, what: &str) -> Result<JsValue, String> {
    let failed = |_: JsValue| format!("WebCrypto {what} failed");
    JsFuture::from(p.map_err(failed)?).await.map_err(failed)
}

async fn bytes(p: Result<js_sys::Promise, JsValue>, what: &str) -> Result<Vec<u8>, String> {
    Ok(Uint8Array::new(&resolve(p, what).await?).to_vec())
}

async fn raw_key(data: &[u8], alg: &Object, usage: &str) -> Result<CryptoKey, String> {
    let usages = Array::of1(&usage.into());
    let p = subtle().import_key_with_object("raw", &Uint8Array::from(data), alg, false, &usages);
    Ok(resolve(p, "importKey").await?.unchecked_into())
}

impl PushCrypto for WebCrypto<'_> {
    async fn ecdh(&self, peer: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
        let curve = algorithm("ECDH", &[("namedCurve", "P-256".into())]);
        let pair =
            resolve(subtle().generate_key_with_object(&curve, true, &Array::of1(&"deriveBits".into())), "generateKey")
                .await?;
        let part = |k: &str| Reflect::get(&pair, &k.into()).map(JsCast::unchecked_into::<CryptoKey>);
        let (private, public) = match (part("privateKey"), part("publicKey")) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Err("WebCrypto generateKey gave no key pair".into()),
        };
        let own = bytes(subtle().export_key("raw", &public), "exportKey").await?;
        let usages = Array::new();
        let p = subtle().import_key_with_object("raw", &Uint8Array::from(peer), &curve, false, &usages);
        let peer: CryptoKey = resolve(p, "importKey").await?.unchecked_into();
        let derive = algorithm("ECDH", &[("public", peer.into())]);
        let secret = bytes(subtle().derive_bits_with_object(&derive, &private, 256), "deriveBits").await?;
        Ok((own, secret))
    }

    async fn hkdf(&self, salt: &[u8], ikm: &[u8], info: &[u8], len: usize) -> Result<Vec<u8>, String> {
        let key = raw_key(ikm, &algorithm("HKDF", &[]), "deriveBits").await?;
        let params = algorithm(
            "HKDF",
            &[
                ("hash", "SHA-256".into()),
                ("salt", Uint8Array::from(salt).into()),
                ("info", Uint8Array::from(info).into()),
            ],
        );
        let bits = u32::try_from(len * 8).map_err(|_| "HKDF length".to_owned())?;
        bytes(subtle().derive_bits_with_object(&params, &key, bits), "HKDF").await
    }

    async fn aes128gcm(&self, key: &[u8], nonce: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, String> {
        let key = raw_key(key, &algorithm("AES-GCM", &[]), "encrypt").await?;
        let params = algorithm("AES-GCM", &[("iv", Uint8Array::from(nonce).into())]);
        bytes(subtle().encrypt_with_object_and_u8_array(&params, &key, plaintext), "AES-GCM").await
    }

    async fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String> {
        crate::keys::es256(self.vapid, input).await
    }
}

/// One message to one device: encrypted, signed, posted; what the push service said.
async fn post_one(push: &PushConfig, message: &PushMessage<'_>, payload: &[u8], d: &PushDevice) -> PushTried {
    let tried = |outcome, error: Option<String>| PushTried { device: d.device.clone(), outcome, error };
    let Some(sub) = d.subscription() else {
        return tried(PushOutcome::Refused, Some("the stored keys do not read".into()));
    };
    let crypto = WebCrypto { vapid: &push.key };
    let salt = random_bytes::<16>();
    // The JWT's expiry is judged by the push service's clock: the real one, never the test clock.
    let claims = vapid_claims(&sub.endpoint, &push.subject, wall_ms());
    let prepared = async {
        let body = encrypt(&crypto, &sub, payload, &salt).await?;
        let authorization = vapid_authorization(&crypto, &push.key.public_point(), &claims).await?;
        Ok::<_, String>((body, authorization))
    };
    let (body, authorization) = match prepared.await {
        Ok(p) => p,
        Err(e) => return tried(PushOutcome::Retry, Some(e)),
    };
    let extra = message.headers(now_ms());
    let mut headers: Vec<(&str, &str)> = vec![
        ("content-type", "application/octet-stream"),
        ("content-encoding", "aes128gcm"),
        ("authorization", &authorization),
    ];
    headers.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
    let (outcome, error) = match post_bytes(&sub.endpoint, &headers, &body, MAIL_TIMEOUT).await {
        Ok((status, _)) => {
            let o = PushOutcome::of(Some(status));
            (o, (o != PushOutcome::Delivered).then(|| format!("HTTP {status}")))
        }
        // A transport error may quote the URL: not kept.
        Err(_) => (PushOutcome::Retry, Some("no answer".to_owned())),
    };
    if let Some(e) = &error {
        log(
            "warn",
            "push_failed",
            json!({"approvalId": message.approval_id, "device": d.device, "error": e, "outcome": format!("{outcome:?}")}),
        );
    }
    tried(outcome, error)
}

/// Posts `kind` of the approval to `devices` and records what each push service said; how many were tried.
pub async fn deliver(
    cfg: &Config,
    store: &Store,
    job: &MailJob,
    kind: &str,
    devices: &[PushDevice],
) -> Result<usize, ApiError> {
    let Some(push) = &cfg.push else { return Ok(0) };
    if devices.is_empty() {
        return Ok(0);
    }
    let url = cfg.approval_url(job.id.as_str());
    let requesters = joined(&job.requested_by);
    let message = PushMessage {
        approval_id: job.id.as_str(),
        title: &job.title,
        requester: job.context.requested_by_or(&requesters).unwrap_or_default(),
        expires_at_ms: job.expires_at,
        url: &url,
        lang: job.locale.as_str(),
    };
    let payload = message.payload();
    let tried = join_all(devices.iter().map(|d| post_one(push, &message, &payload, d))).await;
    let delivered = tried.iter().filter(|t| t.outcome == PushOutcome::Delivered).count();
    log(
        "info",
        "push_sent",
        json!({"approvalId": job.id.as_str(), "kind": kind, "devices": tried.len(), "delivered": delivered}),
    );
    store.push_done(&job.id, kind, &tried, now_ms()).await?;
    Ok(tried.len())
}

/// Posts `kind` of the approval to the devices of `principals`; nothing without push or principals.
pub async fn send(
    cfg: &Config,
    store: &Store,
    job: &MailJob,
    kind: &str,
    principals: &[Principal],
) -> Result<usize, ApiError> {
    let targets = PushTargets::of(principals);
    if cfg.push.is_none() || targets.is_empty() {
        return Ok(0);
    }
    let devices = store.push_due(&job.id, kind, &targets, now_ms()).await?;
    deliver(cfg, store, job, kind, &devices).await
}

/// The principals who decide the approval now (the seats that hold their slot), less those who voted already:
/// whom a request or a reminder goes to.
pub async fn deciders(store: &Store, id: &ApprovalId) -> Result<Vec<Principal>, ApiError> {
    let Some(loaded) = store.load(id).await? else { return Ok(Vec::new()) };
    let voted = |p: &Principal| {
        loaded.votes.iter().any(|v| match p {
            Principal::Sub(s) => v.sub == *s,
            Principal::Email(e) => v.email.as_deref().is_some_and(|m| m.eq_ignore_ascii_case(e)),
            Principal::Group(_) => false,
        })
    };
    Ok(loaded.seats.iter().filter(|s| s.holds() && !voted(&s.principal)).map(|s| s.principal.clone()).collect())
}

/// [`send`] to the approval's deciders (the request, a reminder), logged: it runs where nobody is left to answer.
pub async fn send_to_deciders(cfg: &Config, store: &Store, job: &MailJob, kind: &str) -> usize {
    if cfg.push.is_none() {
        return 0;
    }
    let outcome = async { send(cfg, store, job, kind, &deciders(store, &job.id).await?).await };
    outcome.await.unwrap_or_else(|e| {
        log("error", "push_not_sent", json!({"approvalId": job.id.as_str(), "kind": kind, "error": e.to_string()}));
        0
    })
}

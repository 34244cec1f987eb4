//! RFC 8291 §5's worked example byte for byte, the VAPID header, the subscription's checks and whom a push
//! reaches. The primitives come from RustCrypto here (dev-dependencies only); the worker's from WebCrypto.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use aes_gcm::aead::{Aead, KeyInit};
use p256::ecdsa::signature::{Signer, Verifier};
use p256::elliptic_curve::sec1::ToEncodedPoint;

use super::*;

/// The futures here never wait: poll once.
fn run<F: Future>(f: F) -> F::Output {
    match pin!(f).as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a test future waited"),
    }
}

fn b64(s: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(s).unwrap()
}

/// RustCrypto's primitives, with a fixed "ephemeral" key (the example's) and a VAPID key.
struct Rust {
    ephemeral: p256::SecretKey,
    vapid: p256::ecdsa::SigningKey,
}

impl PushCrypto for Rust {
    async fn ecdh(&self, peer: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
        let peer = p256::PublicKey::from_sec1_bytes(peer).map_err(|e| e.to_string())?;
        let shared = p256::ecdh::diffie_hellman(self.ephemeral.to_nonzero_scalar(), peer.as_affine());
        let own = self.ephemeral.public_key().to_encoded_point(false).as_bytes().to_vec();
        Ok((own, shared.raw_secret_bytes().to_vec()))
    }

    async fn hkdf(&self, salt: &[u8], ikm: &[u8], info: &[u8], len: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0; len];
        hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), ikm).expand(info, &mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    async fn aes128gcm(&self, key: &[u8], nonce: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, String> {
        let cipher = aes_gcm::Aes128Gcm::new_from_slice(key).map_err(|e| e.to_string())?;
        cipher.encrypt(aes_gcm::Nonce::from_slice(nonce), plaintext).map_err(|e| e.to_string())
    }

    async fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String> {
        let sig: p256::ecdsa::Signature = self.vapid.sign(input);
        Ok(sig.to_bytes().to_vec())
    }
}

// RFC 8291 §5 (Appendix A), every value as the RFC prints it.
const PLAINTEXT: &str = "V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24";
const AS_PRIVATE: &str = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
const AS_PUBLIC: &str = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
const UA_PUBLIC: &str = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
const SALT: &str = "DGv6ra1nlYgDCS1FRnbzlw";
const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";
const ECDH_SECRET: &str = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs";
const IKM: &str = "S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg";
const CEK: &str = "oIhVW04MRdy2XN9CiKLxTg";
const NONCE: &str = "4h_95klXJ5E_qnoN";
const MESSAGE: &str = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";

fn example() -> (Rust, Subscription) {
    let ephemeral = p256::SecretKey::from_slice(&b64(AS_PRIVATE)).unwrap();
    let vapid = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap();
    let sub = Subscription {
        endpoint: "https://push.example.net/p/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV".into(),
        p256dh: b64(UA_PUBLIC),
        auth: b64(AUTH),
    };
    (Rust { ephemeral, vapid }, sub)
}

#[test]
fn rfc8291_worked_example_byte_for_byte() {
    let (c, sub) = example();
    // The intermediate values first: a mismatch says which step is wrong.
    let (as_public, secret) = run(c.ecdh(&sub.p256dh)).unwrap();
    assert_eq!((as_public.clone(), secret.clone()), (b64(AS_PUBLIC), b64(ECDH_SECRET)));
    let mut info = b"WebPush: info\0".to_vec();
    info.extend(b64(UA_PUBLIC));
    info.extend(&as_public);
    let ikm = run(c.hkdf(&sub.auth, &secret, &info, 32)).unwrap();
    assert_eq!(ikm, b64(IKM));
    let salt = b64(SALT);
    assert_eq!(run(c.hkdf(&salt, &ikm, b"Content-Encoding: aes128gcm\0", 16)).unwrap(), b64(CEK));
    assert_eq!(run(c.hkdf(&salt, &ikm, b"Content-Encoding: nonce\0", 12)).unwrap(), b64(NONCE));
    // The whole message.
    let body = run(encrypt(&c, &sub, &b64(PLAINTEXT), &salt.try_into().unwrap())).unwrap();
    assert_eq!(URL_SAFE_NO_PAD.encode(&body), MESSAGE);
    // Header: salt, rs = 4096, idlen = 65, keyid = as_public.
    assert_eq!(&body[16..21], &[0, 0, 0x10, 0, 65]);
}

#[test]
fn a_payload_too_large_for_one_record_is_refused() {
    let (c, sub) = example();
    assert!(run(encrypt(&c, &sub, &[b'x'; 4000], &[0; 16])).is_err());
}

#[test]
fn vapid_header_is_an_es256_jwt_for_the_push_services_origin() {
    let (c, sub) = example();
    let point = c.vapid.verifying_key().to_encoded_point(false).as_bytes().to_vec();
    let claims = vapid_claims(&sub.endpoint, "mailto:ops@example.com", 1_700_000_000_500);
    assert_eq!(
        claims,
        json!({"aud": "https://push.example.net", "exp": 1_700_000_000 + 12 * 3600, "sub": "mailto:ops@example.com"})
    );
    let header = run(vapid_authorization(&c, &point, &claims)).unwrap();
    let (t, k) = header.strip_prefix("vapid t=").unwrap().split_once(", k=").unwrap();
    assert_eq!(b64(k), point);
    let parts: Vec<&str> = t.split('.').collect();
    assert_eq!(parts.len(), 3);
    let jose: Value = serde_json::from_slice(&b64(parts[0])).unwrap();
    assert_eq!(jose, json!({"typ": "JWT", "alg": "ES256"}));
    let body: Value = serde_json::from_slice(&b64(parts[1])).unwrap();
    assert_eq!(body, claims);
    let sig = p256::ecdsa::Signature::from_slice(&b64(parts[2])).unwrap();
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&b64(k)).unwrap();
    assert!(key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig).is_ok());
    // The origin keeps a port, drops the path.
    assert_eq!(vapid_claims("http://127.0.0.1:8040/push/x", "mailto:a@b", 0)["aud"], "http://127.0.0.1:8040");
}

fn body(endpoint: &str, p256dh: &str, auth: &str) -> SubscriptionBody {
    SubscriptionBody {
        endpoint: endpoint.into(),
        keys: Some(SubscriptionKeys { p256dh: p256dh.into(), auth: auth.into() }),
        lang: None,
    }
}

fn field(r: Result<Subscription, ApiError>) -> String {
    match r.unwrap_err() {
        ApiError::Invalid { field, .. } => field,
        e => panic!("{e:?}"),
    }
}

#[test]
fn subscriptions_name_an_allowed_push_service_and_keys_of_the_right_length() {
    let prod = PushHosts::defaults(false);
    let ok = body("https://fcm.googleapis.com/fcm/send/abc", UA_PUBLIC, AUTH).check(&prod).unwrap();
    assert_eq!((ok.p256dh.len(), ok.auth.len()), (65, 16));
    assert!(!format!("{ok:?}").contains("fcm"), "Debug hides the endpoint");
    for good in [
        "https://updates.push.services.mozilla.com/wpush/v2/x",
        "https://web.push.apple.com/QGz",
        "https://wns2-bl2p.notify.windows.com/w/?token=x",
        "https://FCM.googleapis.com:443/x",
    ] {
        assert!(prod.allows(good), "{good}");
    }
    for bad in [
        "http://fcm.googleapis.com/x",
        "https://push.apple.com/x",
        "https://evil.test/fcm.googleapis.com",
        "https://fcm.googleapis.com@evil.test/x",
        "https://fcm.googleapis.com.evil.test/x",
        "https://xpush.apple.com/x",
        "http://127.0.0.1:8040/push/x",
        "",
    ] {
        assert!(!prod.allows(bad), "{bad}");
        assert_eq!(field(body(bad, UA_PUBLIC, AUTH).check(&prod)), "endpoint");
    }
    // The local stack's stand-in: loopback only when the installation is itself on loopback.
    assert!(PushHosts::defaults(true).allows("http://127.0.0.1:8040/push/x"));
    assert!(!PushHosts::defaults(true).allows("http://10.0.0.1/push/x"));
    let long = format!("https://fcm.googleapis.com/{}", "x".repeat(MAX_ENDPOINT));
    assert_eq!(field(body(&long, UA_PUBLIC, AUTH).check(&prod)), "endpoint");
    let e = "https://fcm.googleapis.com/x";
    assert_eq!(field(body(e, &UA_PUBLIC[..80], AUTH).check(&prod)), "keys.p256dh");
    assert_eq!(field(body(e, AUTH, AUTH).check(&prod)), "keys.p256dh");
    assert_eq!(field(body(e, UA_PUBLIC, "c2hvcnQ").check(&prod)), "keys.auth");
    assert_eq!(field(body(e, UA_PUBLIC, "!!").check(&prod)), "keys.auth");
    let no_keys = SubscriptionBody { endpoint: e.into(), keys: None, lang: None };
    assert_eq!(field(no_keys.check(&prod)), "keys");
    assert_eq!(endpoint_hash(e).len(), 16);
}

#[test]
fn an_approvals_principals_reach_subscriptions_by_sub_email_or_group() {
    let ps = [
        Principal::Email("Alice@Example.com".into()),
        Principal::Sub("bob".into()),
        Principal::Group("finance".into()),
        Principal::Sub("bob".into()),
    ];
    let t = PushTargets::of(&ps);
    assert_eq!(
        t,
        PushTargets {
            subs: vec!["bob".into()],
            emails: vec!["alice@example.com".into()],
            groups: vec!["finance".into()]
        }
    );
    assert!(t.reach("anyone", Some("ALICE@example.com"), &[]));
    assert!(t.reach("bob", None, &[]));
    assert!(t.reach("carol", None, &["ops".into(), "finance".into()]));
    assert!(!t.reach("carol", Some("carol@example.com"), &["ops".into()]));
    assert!(PushTargets::of(&[]).is_empty());
}

#[test]
fn the_payload_carries_what_the_mail_shows_and_fits_one_record() {
    let m = PushMessage {
        approval_id: "apr_0123",
        title: "Deploy v2",
        requester: "Alice",
        expires_at_ms: 1_700_003_600_000,
        url: "https://ringi.example.com/a/apr_0123",
        lang: "ja",
    };
    let v: Value = serde_json::from_slice(&m.payload()).unwrap();
    assert_eq!(
        v,
        json!({"title": "Deploy v2", "requester": "Alice", "deadline": "2023-11-14T23:13:20.000Z",
               "url": "https://ringi.example.com/a/apr_0123", "lang": "ja"})
    );
    let long = "長".repeat(5000);
    let big = PushMessage { title: &long, requester: &long, ..m.clone() };
    let p = big.payload();
    assert!(p.len() <= MAX_PAYLOAD, "{}", p.len());
    assert_eq!(serde_json::from_slice::<Value>(&p).unwrap()["url"], m.url);
    let h = |now| m.headers(now);
    assert_eq!(
        h(1_700_000_000_000),
        [("ttl", "3600".into()), ("urgency", "high".into()), ("topic", "apr_0123".into())]
    );
    assert_eq!(h(1_690_000_000_000)[..2], [("ttl", MAX_TTL_SECS.to_string()), ("urgency", "normal".into())]);
    assert_eq!(h(1_800_000_000_000)[0], ("ttl", "0".into()));
}

#[test]
fn a_push_services_answer_decides_what_happens_to_the_subscription() {
    assert_eq!(PushOutcome::of(Some(201)), PushOutcome::Delivered);
    assert_eq!(PushOutcome::of(Some(410)), PushOutcome::Gone);
    assert_eq!(PushOutcome::of(Some(404)), PushOutcome::Gone);
    assert_eq!(PushOutcome::of(Some(500)), PushOutcome::Retry);
    assert_eq!(PushOutcome::of(Some(429)), PushOutcome::Retry);
    assert_eq!(PushOutcome::of(None), PushOutcome::Retry);
    assert_eq!(PushOutcome::of(Some(403)), PushOutcome::Refused);
}

#[test]
fn bodies_are_json_objects_with_bounded_endpoints() {
    let ok = SubscriptionBody::parse(
        br#"{"endpoint": "https://fcm.googleapis.com/x", "expirationTime": null,
        "keys": {"p256dh": "a", "auth": "b"}, "lang": "ja"}"#,
    )
    .unwrap();
    assert_eq!((ok.endpoint.as_str(), ok.lang()), ("https://fcm.googleapis.com/x", "ja"));
    assert!(matches!(SubscriptionBody::parse(b"[]"), Err(ApiError::Invalid { .. })));
    assert!(matches!(SubscriptionBody::parse(b"{"), Err(ApiError::MalformedBody(_))));
    assert_eq!(UnsubscribeBody::parse(br#"{"endpoint": "x"}"#).unwrap().endpoint, "x");
    let long = format!(r#"{{"endpoint": "{}"}}"#, "x".repeat(MAX_ENDPOINT + 1));
    assert!(matches!(UnsubscribeBody::parse(long.as_bytes()), Err(ApiError::Invalid { .. })));
}

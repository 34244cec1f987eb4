//! The hash chain of an approval's events: each event, once written, is sealed into its approval's chain —
//! it gets the next position `n` and the digest of the event before it (`prev`), and its own digest covers
//! both. So an event removed, edited or moved to another place in the chain breaks a link that anyone holding
//! the export can recompute (`deploy/verify_audit.py`).
//!
//! The rule and the encoding live here; the stores only carry them out. An event is sealed by the request that
//! wrote it, right after its write (SQLite has no SHA-256, and an event's fields are often set by the SQL of the
//! change it records), under a condition that the chain still ends where the sealer read it: two writers of
//! one approval's events never fork it — the later seal finds its condition false and reads the head again.
//! The cron seals what a request left unsealed (one that died between its write and its seal).
//!
//! Digest = lower-case hex SHA-256 of the canonical JSON (keys sorted at every level, no whitespace,
//! `serde_json`'s string escapes — what Python's `json.dumps(v, sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False)` writes) of `{"v":1,"approvalId","n","at","kind","actor","detail","prev"}`, each as the
//! export shows it. The chain of approval `A` starts from the digest of `{"v":1,"genesis":A}`.

use serde_json::{json, Value};

use crate::base::hex::hex_sha256;
use crate::domain::audit::Event;
pub use crate::domain::audit::Link;

/// Version of the encoding, inside every digested value.
pub const CHAIN_VERSION: u64 = 1;

/// The last sealed event of a chain: where the next seal continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub n: i64,
    pub digest: String,
}

/// What a chain of approval `approval_id` starts from.
pub fn genesis(approval_id: &str) -> String {
    hex_sha256(canonical(&json!({"v": CHAIN_VERSION, "genesis": approval_id})).as_bytes())
}

/// The digest of `event` at position `n` after the event whose digest is `prev`.
pub fn digest(event: &Event, n: i64, prev: &str) -> String {
    let value = json!({
        "v": CHAIN_VERSION, "approvalId": event.approval_id, "n": n, "at": event.at, "kind": event.kind,
        "actor": event.actor, "detail": event.detail, "prev": prev,
    });
    hex_sha256(canonical(&value).as_bytes())
}

/// The links of `pending` (one approval's unsealed events, in the order they were written) after `head`
/// (`None`: the chain has not begun).
pub fn seal(approval_id: &str, head: Option<&Head>, pending: &[Event]) -> Vec<Link> {
    let (mut n, mut prev) = head.map_or_else(|| (0, genesis(approval_id)), |h| (h.n, h.digest.clone()));
    pending
        .iter()
        .map(|e| {
            n += 1;
            let d = digest(e, n, &prev);
            Link { n, prev_digest: std::mem::replace(&mut prev, d.clone()), digest: d }
        })
        .collect()
}

/// The links of unsealed events of any approvals, listed in the order they were written, each with the head of
/// its approval's chain as the sealer read it (the same for all of one approval's events); `K` is how the store
/// names the event.
pub fn seal_in_order<K: Clone>(pending: &[(K, Event, Option<Head>)]) -> Vec<(K, Link)> {
    let mut heads: std::collections::HashMap<&str, Option<Head>> = std::collections::HashMap::new();
    pending
        .iter()
        .map(|(k, e, read)| {
            let head = heads.entry(e.approval_id.as_str()).or_insert_with(|| read.clone());
            let link = seal(&e.approval_id, head.as_ref(), std::slice::from_ref(e)).remove(0);
            *head = Some(Head { n: link.n, digest: link.digest.clone() });
            (k.clone(), link)
        })
        .collect()
}

/// Canonical JSON: object keys sorted at every level (written out here, so that the encoding does not
/// depend on how a `serde_json::Map` happens to be ordered), compact.
pub fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let body: Vec<String> =
                keys.into_iter().map(|k| format!("{}:{}", Value::from(k.as_str()), canonical(&m[k]))).collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::audit::{Actor, EventKind};

    fn event(kind: EventKind, at: &str, detail: Value) -> Event {
        Event {
            approval_id: "abcdefghijklmnopqrstuv".into(),
            at: at.into(),
            kind,
            actor: Actor::User { sub: "u-1".into(), display: "Ann \"A\" <ann@example.com>".into() },
            detail: detail.as_object().cloned().unwrap_or_default(),
            chain: None,
        }
    }

    /// The same vector is checked by the verifier's tests (tests/deploy/test_verify_audit.py): both sides must
    /// write the same bytes.
    #[test]
    fn digests_match_the_published_vector() {
        assert_eq!(
            canonical(&json!({"b": [1, {"z": "é\n", "a": null}], "a": true})),
            "{\"a\":true,\"b\":[1,{\"a\":null,\"z\":\"é\\n\"}]}"
        );
        let g = genesis("abcdefghijklmnopqrstuv");
        assert_eq!(g, hex_sha256(b"{\"genesis\":\"abcdefghijklmnopqrstuv\",\"v\":1}"));
        let e = event(EventKind::Voted, "2026-12-01T12:00:00.000Z", json!({"verdict": "approve", "comment": "ok ✓"}));
        assert_eq!(digest(&e, 1, &g), "b9eb3d077d852e24f23edd875ddcce511dc38b4f9b11e6e549871221e35822be");
    }

    #[test]
    fn each_link_covers_the_event_its_place_and_the_one_before() {
        let a = event(EventKind::Registered, "2026-12-01T12:00:00.000Z", json!({}));
        let b = event(EventKind::Voted, "2026-12-01T12:00:01.000Z", json!({"verdict": "approve"}));
        let links = seal(&a.approval_id, None, &[a.clone(), b.clone()]);
        assert_eq!(links[0].prev_digest, genesis(&a.approval_id));
        assert_eq!(links[1].prev_digest, links[0].digest);
        assert_eq!((links[0].n, links[1].n), (1, 2));
        // Sealing later from the head gives the same link as sealing both at once.
        let head = Head { n: 1, digest: links[0].digest.clone() };
        assert_eq!(seal(&a.approval_id, Some(&head), std::slice::from_ref(&b))[0], links[1]);
        // Any change of the event, its place or its predecessor changes the digest.
        let mut edited = b.clone();
        edited.detail.insert("verdict".into(), json!("reject"));
        let mut later = b.clone();
        later.at = "2026-12-01T12:00:02.000Z".into();
        for d in [
            digest(&edited, 2, &links[0].digest),
            digest(&later, 2, &links[0].digest),
            digest(&b, 3, &links[0].digest),
            digest(&b, 2, &genesis("x")),
        ] {
            assert_ne!(d, links[1].digest);
        }
        assert_ne!(genesis("a"), genesis("b"));
    }

    #[test]
    fn events_of_several_approvals_are_sealed_each_into_its_own_chain() {
        let a1 = event(EventKind::Registered, "2026-12-01T12:00:00.000Z", json!({}));
        let mut b1 = a1.clone();
        b1.approval_id = "bbbbbbbbbbbbbbbbbbbbbb".into();
        let a2 = event(EventKind::Viewed, "2026-12-01T12:00:01.000Z", json!({}));
        let head = Head { n: 7, digest: "d7".into() };
        let links = seal_in_order(&[
            (1, a1.clone(), Some(head.clone())),
            (2, b1.clone(), None),
            (3, a2.clone(), Some(head.clone())),
        ]);
        assert_eq!(links.iter().map(|(k, l)| (*k, l.n)).collect::<Vec<_>>(), [(1, 8), (2, 1), (3, 9)]);
        assert_eq!(links[0].1.prev_digest, "d7");
        assert_eq!(links[1].1.prev_digest, genesis(&b1.approval_id));
        assert_eq!(links[2].1.prev_digest, links[0].1.digest);
    }
}

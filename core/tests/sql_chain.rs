//! Sealing events into their approval's hash chain (`ringi_core::sql::chain`), run by SQLite over the worker's
//! real migrations: events are chained in the order they were written, a sealer that read the chain before
//! another sealed it changes nothing (no fork), a sealed event cannot be rewritten, and events written before the
//! chain existed stay unchained.

mod common;
use common::{migrated, migration_files, run, values};

use ringi_core::base::time::format_rfc3339;
use ringi_core::domain::audit::{Actor, Event, EventKind};
use ringi_core::domain::audit_chain::{digest, genesis, seal_in_order, Head, Link};
use ringi_core::sql::{chain, EVENT_INSERT};
use rusqlite::Connection;

fn insert(db: &Connection, id: &str, at: i64, kind: &str, key: &str) {
    db.execute(
        &format!("{EVENT_INSERT} VALUES (?1, ?2, ?3, 'system', NULL, '{{\"n\":1}}', ?4)"),
        rusqlite::params![id, at, kind, key],
    )
    .unwrap();
}

/// What a sealer reads and computes: `(seq, approval_id, link)` of every unsealed event.
fn plan(db: &Connection) -> Vec<(i64, String, Link)> {
    let q = chain::pending();
    let mut stmt = db.prepare(&q.sql).unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values(&q.args)), |r| {
            let event = Event {
                approval_id: r.get(1)?,
                at: format_rfc3339(r.get(2)?),
                kind: EventKind::parse(&r.get::<_, String>(3)?).unwrap(),
                actor: Actor::from_stored(&r.get::<_, String>(4)?, r.get::<_, Option<String>>(5)?.as_deref()).unwrap(),
                detail: serde_json::from_str(&r.get::<_, String>(6)?).unwrap(),
                chain: None,
            };
            let head = match (r.get::<_, Option<i64>>(7)?, r.get::<_, Option<String>>(8)?) {
                (Some(n), Some(digest)) => Some(Head { n, digest }),
                _ => None,
            };
            Ok(((r.get::<_, i64>(0)?, event.approval_id.clone()), event, head))
        })
        .unwrap();
    let pending: Vec<_> = rows.map(Result::unwrap).collect();
    seal_in_order(&pending).into_iter().map(|((seq, id), link)| (seq, id, link)).collect()
}

fn apply(db: &Connection, plan: &[(i64, String, Link)]) -> usize {
    plan.iter().map(|(seq, id, link)| run(db, &chain::seal(*seq, id, link))).sum()
}

fn chain_of(db: &Connection, id: &str) -> Vec<(i64, String, String)> {
    let mut stmt = db
        .prepare("SELECT chain_n, prev_digest, digest FROM approval_events WHERE approval_id = ?1 ORDER BY seq")
        .unwrap();
    let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn events_are_chained_per_approval_in_the_order_they_were_written() {
    let db = migrated();
    // Written out of time order (an expiry recorded at its deadline after a later view): the chain follows the writes.
    insert(&db, "a", 5_000, "registered", "k1");
    insert(&db, "b", 5_000, "registered", "k2");
    insert(&db, "a", 9_000, "viewed", "k3");
    insert(&db, "a", 8_000, "expired", "k4");
    assert_eq!(apply(&db, &plan(&db)), 4);
    let a = chain_of(&db, "a");
    assert_eq!(a.iter().map(|l| l.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(a[0].1, genesis("a"));
    assert_eq!((&a[1].1, &a[2].1), (&a[0].2, &a[1].2));
    assert_eq!(chain_of(&db, "b")[0].0, 1);
    // The digests are those of the events as the export shows them.
    let expired = Event {
        approval_id: "a".into(),
        at: format_rfc3339(8_000),
        kind: EventKind::Expired,
        actor: Actor::System,
        detail: serde_json::from_str("{\"n\":1}").unwrap(),
        chain: None,
    };
    assert_eq!(a[2].2, digest(&expired, 3, &a[1].2));
    assert!(plan(&db).is_empty(), "nothing left to seal");
}

#[test]
fn a_sealer_that_lost_the_race_changes_nothing_and_the_next_read_continues_the_chain() {
    let db = migrated();
    insert(&db, "a", 1_000, "registered", "k1");
    insert(&db, "a", 2_000, "voted", "k2");
    let first = plan(&db);
    let second = plan(&db);
    assert_eq!(apply(&db, &first), 2);
    assert_eq!(apply(&db, &second), 0, "already sealed");
    // A third vote lands; a sealer holding a stale read of the head (it thinks the chain ends at 1) cannot fork it.
    insert(&db, "a", 3_000, "voted", "k3");
    let fresh = plan(&db);
    assert_eq!(fresh[0].2.n, 3);
    let mut stale = fresh[0].clone();
    stale.2.n = 2;
    assert_eq!(apply(&db, &[stale]), 0, "the chain does not end at 1 any more");
    assert_eq!(apply(&db, &fresh), 1);
    let a = chain_of(&db, "a");
    assert_eq!(a.iter().map(|l| l.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(a[2].1, a[1].2);
    // Even a write that bypassed the condition could not put a second event at the same place.
    insert(&db, "a", 4_000, "voted", "k4");
    let err = db
        .execute("UPDATE approval_events SET chain_n = 3, prev_digest = 'x', digest = 'y' WHERE dedupe_key = 'k4'", []);
    assert!(err.is_err(), "a fork is refused by the unique index");
}

#[test]
fn a_sealed_event_is_never_rewritten_nor_sealed_again() {
    let db = migrated();
    insert(&db, "a", 1_000, "registered", "k1");
    let edit = |sql: &str| db.execute(sql, []).map_err(|e| e.to_string());
    assert!(edit("UPDATE approval_events SET detail_json = '{}'").unwrap_err().contains("append-only"));
    apply(&db, &plan(&db));
    for sql in [
        "UPDATE approval_events SET detail_json = '{}'",
        "UPDATE approval_events SET digest = 'x'",
        "UPDATE approval_events SET chain_n = NULL",
    ] {
        assert!(edit(sql).unwrap_err().contains("append-only"), "{sql}");
    }
}

#[test]
fn events_written_before_the_chain_stay_unchained_and_the_chain_starts_after_them() {
    let db = Connection::open_in_memory().unwrap();
    let (before, after): (Vec<_>, Vec<_>) =
        migration_files().into_iter().partition(|f| f.file_name().unwrap().to_string_lossy().as_ref() < "0014");
    for f in &before {
        db.execute_batch(&std::fs::read_to_string(f).unwrap()).unwrap();
    }
    insert(&db, "a", 1_000, "registered", "k1");
    for f in &after {
        db.execute_batch(&std::fs::read_to_string(f).unwrap()).unwrap();
    }
    assert!(plan(&db).is_empty(), "an event written before the chain is not sealed afterwards");
    insert(&db, "a", 2_000, "viewed", "k2");
    apply(&db, &plan(&db));
    let a = chain_of_opt(&db, "a");
    assert_eq!(a, [(Some(0), None), (Some(1), Some(genesis("a")))]);
}

fn chain_of_opt(db: &Connection, id: &str) -> Vec<(Option<i64>, Option<String>)> {
    let mut stmt =
        db.prepare("SELECT chain_n, prev_digest FROM approval_events WHERE approval_id = ?1 ORDER BY seq").unwrap();
    let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

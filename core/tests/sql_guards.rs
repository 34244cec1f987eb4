//! The rules' guards as D1 runs them: each condition evaluated by SQLite over the worker's real migrations,
//! on approvals in the states the rules care about (decidable or not, seats handed on, requesters named by
//! sub or email, slots satisfied).

mod common;
use common::migrated;

use ringi_core::base::principal::Principal;
use ringi_core::domain::rules::Guard;
use ringi_core::sql::{guards_sql, SqlArg};
use rusqlite::{params_from_iter, Connection};

const NOW: i64 = 1_000;

/// Approval `a1`: pending, listed `sub:alice` (handed on to `sub:carol`) and `group:eng`; requested by
/// `email:pat@example.com`; `group:eng` approved already. `a2`: expired, requested by `sub:rita`, self-approval
/// allowed.
fn db() -> Connection {
    let db = migrated();
    db.execute_batch(
        "INSERT INTO approvals (id, task_token, token_sha256, status, title, approver_count, created_at, expires_at,
           requested_by_json, allow_self_approval)
         VALUES ('a1', 't', 'h1', 'pending', 'x', 2, 0, 5000, '[\"email:pat@example.com\"]', 0),
                ('a2', 't', 'h2', 'pending', 'x', 1, 0, 500, '[\"sub:rita\"]', 1);
         INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at, delegated_to)
         VALUES ('a1', 'sub', 'alice', 'sub:alice', 5000, 'sub:carol'), ('a1', 'group', 'eng', 'group:eng', 5000, NULL);
         INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at, slot, depth)
         VALUES ('a1', 'sub', 'carol', 'sub:carol', 5000, 'sub:alice', 1);
         INSERT INTO decisions (approval_id, sub, principal, email, decision, at)
         VALUES ('a1', 'e1', 'group:eng', 'Eve@Example.com', 'approve', 1);",
    )
    .unwrap();
    db
}

fn holds(db: &Connection, id: &str, guards: &[Guard]) -> bool {
    let cond = guards_sql(id, guards, 1);
    let args: Vec<rusqlite::types::Value> = cond
        .args
        .into_iter()
        .map(|a| match a {
            SqlArg::Text(t) => t.into(),
            SqlArg::Int(i) => i.into(),
            SqlArg::Null => rusqlite::types::Value::Null,
        })
        .collect();
    db.query_row(&format!("SELECT CASE WHEN {} THEN 1 ELSE 0 END", cond.sql), params_from_iter(args), |r| {
        r.get::<_, i64>(0)
    })
    .unwrap()
        == 1
}

fn sub(s: &str) -> Principal {
    Principal::Sub(s.into())
}

#[test]
fn decidable_only_while_open_and_before_the_deadline() {
    let db = db();
    assert!(holds(&db, "a1", &[Guard::Decidable { now: NOW }]));
    assert!(!holds(&db, "a1", &[Guard::Decidable { now: 5_000 }]), "at the deadline");
    assert!(!holds(&db, "a2", &[Guard::Decidable { now: NOW }]), "past it");
    assert!(!holds(&db, "missing", &[Guard::Decidable { now: NOW }]));
    db.execute("UPDATE approvals SET status = 'claimed', claimed_until = 2000 WHERE id = 'a1'", []).unwrap();
    assert!(!holds(&db, "a1", &[Guard::Decidable { now: NOW }]), "a live claim");
    assert!(holds(&db, "a1", &[Guard::Decidable { now: 2_000 }]), "a lapsed one");
}

#[test]
fn seats_hold_until_handed_on() {
    let db = db();
    assert!(!holds(&db, "a1", &[Guard::Holds { seat: sub("alice") }]), "alice handed it on");
    assert!(holds(&db, "a1", &[Guard::Holds { seat: sub("carol") }]));
    assert!(!holds(&db, "a1", &[Guard::NotSeated { principal: sub("carol") }]));
    assert!(holds(&db, "a1", &[Guard::NotSeated { principal: sub("dave") }]));
}

#[test]
fn requesters_by_sub_by_email_and_an_unknown_email() {
    let db = db();
    let pat = Principal::Email("PAT@example.com".into());
    let person = |people: Vec<Principal>, email_unknown| Guard::NotRequester { people, email_unknown };
    assert!(!holds(&db, "a1", &[person(vec![sub("p2"), pat], false)]), "by email, any case");
    assert!(holds(&db, "a1", &[person(vec![sub("bob"), Principal::Email("bob@example.com".into())], false)]));
    // bob without a verified email may be pat: fails closed.
    assert!(!holds(&db, "a1", &[person(vec![sub("bob")], true)]));
    // a2 allows self-approval: its requester passes.
    assert!(holds(&db, "a2", &[person(vec![sub("rita")], true)]));
}

#[test]
fn a_satisfied_slot_is_no_longer_free_and_guards_combine() {
    let db = db();
    assert!(!holds(&db, "a1", &[Guard::Unsatisfied { slot: Principal::Group("eng".into()) }]));
    assert!(holds(&db, "a1", &[Guard::Unsatisfied { slot: sub("alice") }]));
    let both = [Guard::Decidable { now: NOW }, Guard::Unsatisfied { slot: Principal::Group("eng".into()) }];
    assert!(!holds(&db, "a1", &both));
    assert!(holds(&db, "a1", &[]), "no guard: always");
    assert!(!holds(&db, "a1", &[Guard::NotVoted { sub: "e1".into() }]));
    assert!(holds(&db, "a1", &[Guard::NotVoted { sub: "e2".into() }]));
}

#[test]
fn a_completion_counts_satisfied_principals_and_people_once() {
    let db = db();
    assert!(holds(&db, "a1", &[Guard::Satisfied { at_least: 1 }]));
    assert!(!holds(&db, "a1", &[Guard::Satisfied { at_least: 2 }]));
    let uncounted = |email: &str, sub: &str| Guard::Uncounted { email: email.into(), sub: sub.into() };
    assert!(!holds(&db, "a1", &[uncounted("eve@example.com", "e2")]), "any case, another account");
    assert!(holds(&db, "a1", &[uncounted("eve@example.com", "e1")]), "their own approval: a retry");
    assert!(holds(&db, "a1", &[uncounted("bob@example.com", "b")]));
    // A rejection satisfies nothing and counts nobody.
    db.execute("INSERT INTO decisions (approval_id, sub, principal, email, decision, at) VALUES ('a1', 'b', 'sub:alice', 'bob@example.com', 'reject', 2)", []).unwrap();
    assert!(!holds(&db, "a1", &[Guard::Satisfied { at_least: 2 }]));
    assert!(holds(&db, "a1", &[uncounted("bob@example.com", "x")]));
    let completing = ringi_core::domain::rules::completion_guards("b", &sub("alice"), Some("Bob@example.com"), 2);
    assert!(holds(&db, "a1", &completing));
    let eng = Principal::Group("eng".into());
    assert!(!holds(&db, "a1", &ringi_core::domain::rules::completion_guards("e2", &eng, None, 2)), "eng is e1's");
    assert!(holds(&db, "a1", &[Guard::FreeFor { slot: eng, sub: "e1".into() }]));
}

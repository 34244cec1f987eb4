//! The cron's upkeep and the registration's rate window (`ringi_core::sql::{upkeep, registration}`), run by
//! SQLite over the worker's real migrations: only due approvals close, only stale claims are released, the
//! purge removes only old closed approvals with everything of theirs, and the rate window counts per credential
//! and minute and gives back a registration that wrote nothing.

mod common;
use common::{approval, column, count, field, migrated, run};

use ringi_core::sql::registration;
use ringi_core::sql::upkeep;
use rusqlite::Connection;

fn set(db: &Connection, id: &str, assignments: &str) {
    db.execute(&format!("UPDATE approvals SET {assignments} WHERE id = ?1"), [id]).unwrap();
}

#[test]
fn only_due_approvals_expire_and_their_inbox_rows_close() {
    let db = migrated();
    approval(&db, "due", 1_000, &["sub:alice"]);
    approval(&db, "later", 5_000, &["sub:alice"]);
    approval(&db, "held", 1_000, &["sub:bob"]);
    set(&db, "held", "status = 'claimed', claim_id = 'c1', claimed_until = 3000");
    assert_eq!(run(&db, &upkeep::expire_due(2_000)), 1, "a live claim is left to its holder");
    assert_eq!(field::<String>(&db, "due", "status"), "expired");
    assert_eq!(field::<Option<String>>(&db, "due", "task_token"), None);
    assert_eq!(field::<String>(&db, "later", "status"), "pending");
    assert_eq!(field::<String>(&db, "held", "status"), "claimed");
    run(&db, &upkeep::close_due_inboxes(2_000));
    assert_eq!(count(&db, "approval_principals", "open = 1"), 1, "only the approval not yet due stays open");
    // Once its lease is over, the claimed one is due too.
    assert_eq!(run(&db, &upkeep::expire_due(3_000)), 1);
    assert_eq!(field::<String>(&db, "held", "status"), "expired");
}

#[test]
fn only_claims_whose_lease_ran_out_are_released() {
    let db = migrated();
    approval(&db, "a", 10_000, &["sub:alice"]);
    approval(&db, "b", 10_000, &["sub:alice"]);
    set(&db, "a", "status = 'claimed', claim_id = 'c1', claimed_until = 2000");
    set(&db, "b", "status = 'claimed', claim_id = 'c2', claimed_until = 4000");
    assert_eq!(run(&db, &upkeep::release_stale_claims(3_000)), 1);
    assert_eq!(field::<String>(&db, "a", "status"), "pending");
    assert_eq!(field::<Option<String>>(&db, "a", "claim_id"), None);
    assert_eq!(field::<String>(&db, "b", "claim_id"), "c2");
}

#[test]
fn the_purge_takes_old_closed_approvals_with_all_of_theirs_and_nothing_else() {
    let db = migrated();
    for id in ["old", "recent", "open"] {
        approval(&db, id, 10_000, &["sub:alice"]);
    }
    set(&db, "old", "status = 'approved', decided_at = 100, task_token = NULL");
    set(&db, "recent", "status = 'rejected', decided_at = 5000, task_token = NULL");
    db.execute_batch(
        "INSERT INTO registration_rate (credential, window_start, count) VALUES ('k', 0, 3), ('k', 60000, 1);",
    )
    .unwrap();
    for s in upkeep::purge(1_000, 60_000) {
        run(&db, &s);
    }
    let left: Vec<String> =
        column(&db, &ringi_core::sql::SqlCond { sql: "SELECT id FROM approvals ORDER BY id".into(), args: vec![] });
    assert_eq!(left, ["open", "recent"]);
    assert_eq!(count(&db, "approval_principals", "approval_id = 'old'"), 0);
    assert_eq!(count(&db, "approval_principals", "approval_id <> 'old'"), 2);
    assert_eq!(count(&db, "registration_rate", "window_start = 0"), 0, "an old window goes");
    assert_eq!(count(&db, "registration_rate", "window_start = 60000"), 1, "the current window stays");
}

#[test]
fn the_rate_window_counts_per_credential_and_minute_and_gives_back_what_wrote_nothing() {
    let db = migrated();
    let counted = |credential: &str, window: i64| column::<i64>(&db, &registration::count(credential, window));
    assert_eq!(counted("k1", 0), [1]);
    assert_eq!(counted("k1", 0), [2]);
    assert_eq!(counted("k2", 0), [1], "another credential has its own count");
    assert_eq!(counted("k1", 60_000), [1], "the next minute starts again");
    // Within the rate: the condition holds up to the limit, not beyond.
    let within = |per_minute: u32| {
        let c = registration::within_rate(1, "k1", 0, per_minute);
        column::<i64>(&db, &ringi_core::sql::SqlCond { sql: format!("SELECT {}", c.sql), args: c.args })[0] == 1
    };
    assert!(within(2) && !within(1));
    // A registration that wrote nothing (changes() = 0 after a no-op) is not counted.
    db.execute("UPDATE approvals SET title = title WHERE id = 'none'", []).unwrap();
    run(&db, &registration::uncount_if_nothing_written("k1", 0, 2));
    assert_eq!(counted("k1", 0), [2], "the give-back left one count, this one makes two");
}

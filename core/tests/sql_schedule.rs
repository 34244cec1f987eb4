//! A registration's schedule (`ringi_core::sql::schedule`), run by SQLite over the worker's real migrations: a
//! run takes only due entries of open approvals not under another run's live lease, marks them done only under
//! its own lease, gives them back when its mail failed, and skips the entries of closed approvals.

mod common;
use common::{approval, column, count, migrated, run};

use ringi_core::sql::schedule;
use ringi_core::sql::SqlCond;
use rusqlite::Connection;

fn entry(db: &Connection, id: &str, seq: i64, due_at: i64) {
    db.execute(
        "INSERT INTO approval_schedule (approval_id, seq, kind, due_at) VALUES (?1, ?2, 'reminder', ?3)",
        rusqlite::params![id, seq, due_at],
    )
    .unwrap();
}

fn held(db: &Connection, lease: &str) -> Vec<String> {
    let q = SqlCond { sql: schedule::TAKEN_APPROVALS.into(), args: vec![lease.into()] };
    column(db, &q)
}

fn open_db() -> Connection {
    let db = migrated();
    approval(&db, "a1", 100_000, &["sub:alice"]);
    entry(&db, "a1", 0, 1_000);
    entry(&db, "a1", 1, 50_000);
    db
}

#[test]
fn a_run_takes_only_due_entries_and_not_those_of_a_live_lease() {
    let db = open_db();
    assert_eq!(run(&db, &schedule::take(2_000, "run1", 10_000)), 1, "only the entry that is due");
    assert_eq!(held(&db, "run1"), ["a1"]);
    assert_eq!(run(&db, &schedule::take(3_000, "run2", 10_000)), 0, "run1's lease is live");
    assert_eq!(run(&db, &schedule::take(12_000, "run2", 10_000)), 1, "a lease that ran out is taken over");
    assert_eq!(run(&db, &schedule::done("a1", &[0], "run1", 12_500, "sent")), 0, "not under the old lease");
    assert_eq!(run(&db, &schedule::done("a1", &[0], "run2", 12_500, "sent")), 1);
    assert_eq!(run(&db, &schedule::take(13_000, "run3", 10_000)), 0, "done entries are not taken again");
}

#[test]
fn a_released_entry_is_taken_at_once_by_the_next_run() {
    let db = open_db();
    run(&db, &schedule::take(2_000, "run1", 10_000));
    assert_eq!(run(&db, &schedule::release("a1", "other")), 0, "only the holder gives it back");
    assert_eq!(run(&db, &schedule::release("a1", "run1")), 1);
    assert_eq!(run(&db, &schedule::take(2_100, "run2", 10_000)), 1);
}

#[test]
fn entries_of_closed_approvals_are_skipped_not_taken() {
    let db = open_db();
    db.execute("UPDATE approvals SET status = 'approved', task_token = NULL WHERE id = 'a1'", []).unwrap();
    assert_eq!(run(&db, &schedule::take(2_000, "run1", 10_000)), 0);
    assert_eq!(run(&db, &schedule::skip_closed(2_000)), 1, "the due one; the later one waits for its time");
    assert_eq!(count(&db, "approval_schedule", "outcome = 'skipped'"), 1);
}

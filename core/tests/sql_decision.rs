//! The claim and the writes around it (`ringi_core::sql::decision`), run by SQLite over the worker's real
//! migrations: one winner per claim, a lease that runs out frees the approval, a release makes it decidable
//! again, the final writes act only under their claim.

mod common;
use common::{approval, column, field, migrated, run};

use ringi_core::base::status::Verdict;
use ringi_core::sql::decision::{self, Claim, Deadline};
use rusqlite::Connection;

const EXPIRES: i64 = 10_000;

fn claim(db: &Connection, claim_id: &str, now: i64, until: i64) -> Vec<String> {
    let c = Claim { claim_id, now, until, verdict: Verdict::Approve, sub: Some("alice"), by: "alice@example.com" };
    column(db, &decision::claim("a1", &c, Deadline::Approvers, "", Vec::new()))
}

fn open() -> Connection {
    let db = migrated();
    approval(&db, "a1", EXPIRES, &["sub:alice", "sub:bob"]);
    db
}

#[test]
fn a_claim_is_taken_once_and_a_retry_of_it_wins_again() {
    let db = open();
    assert_eq!(claim(&db, "c1", 1_000, 2_000), ["c1"]);
    assert!(claim(&db, "c2", 1_500, 2_500).is_empty(), "a second claim under a live lease loses");
    assert_eq!(claim(&db, "c1", 1_600, 2_000), ["c1"], "the same claim id (a lost answer's retry) wins again");
    assert_eq!(field::<String>(&db, "a1", "claim_id"), "c1");
    assert_eq!(field::<String>(&db, "a1", "status"), "claimed");
}

#[test]
fn a_lease_that_ran_out_frees_the_approval_and_the_first_attempt_stays_on_record() {
    let db = open();
    assert_eq!(claim(&db, "c1", 1_000, 2_000), ["c1"]);
    assert!(claim(&db, "c2", 1_999, 3_000).is_empty(), "one millisecond before the lease ends");
    // The returned row is the attempt on record: c1's, which may have been delivered.
    assert_eq!(claim(&db, "c2", 2_000, 3_000), ["c1"]);
    assert_eq!(field::<String>(&db, "a1", "claim_id"), "c2");
}

#[test]
fn a_release_makes_the_approval_decidable_again() {
    let db = open();
    claim(&db, "c1", 1_000, 2_000);
    assert_eq!(run(&db, &decision::release("a1", "other", true)), 0, "only the claim's holder releases");
    assert_eq!(run(&db, &decision::release("a1", "c1", true)), 1);
    assert_eq!(field::<String>(&db, "a1", "status"), "pending");
    assert_eq!(field::<Option<String>>(&db, "a1", "attempt_id"), None, "nothing was sent: the attempt goes");
    assert_eq!(claim(&db, "c2", 1_100, 2_100), ["c2"], "decidable again before the old lease would end");
}

#[test]
fn a_release_after_a_maybe_delivered_callback_keeps_its_attempt() {
    let db = open();
    claim(&db, "c1", 1_000, 2_000);
    assert_eq!(run(&db, &decision::release("a1", "c1", false)), 1);
    assert_eq!(field::<String>(&db, "a1", "attempt_id"), "c1");
    assert_eq!(claim(&db, "c2", 1_100, 2_100), ["c1"]);
}

#[test]
fn no_claim_past_the_deadline_or_without_a_token() {
    let db = open();
    assert!(claim(&db, "c1", EXPIRES, EXPIRES + 1_000).is_empty(), "at the deadline");
    assert_eq!(claim(&db, "c1", 1_000, 2_000), ["c1"]);
    assert_eq!(run(&db, &decision::finish("a1", "other", Verdict::Approve, 1_500)), 0, "not under another claim");
    assert_eq!(run(&db, &decision::finish("a1", "c1", Verdict::Approve, 1_500)), 1);
    assert_eq!(field::<String>(&db, "a1", "status"), "approved");
    assert_eq!(field::<i64>(&db, "a1", "confirmed"), 1);
    assert_eq!(field::<Option<String>>(&db, "a1", "task_token"), None);
    assert!(claim(&db, "c3", 5_000, 6_000).is_empty(), "decided: the token is gone");
}

#[test]
fn unconfirmed_and_expire_close_under_the_claim() {
    let db = open();
    claim(&db, "c1", 1_000, 2_000);
    assert_eq!(run(&db, &decision::unconfirmed("a1", "c1", 1_500)), 1);
    assert_eq!((field::<String>(&db, "a1", "status"), field::<i64>(&db, "a1", "confirmed")), ("approved".into(), 0));
    let db = open();
    claim(&db, "c1", 1_000, 2_000);
    assert_eq!(run(&db, &decision::expire("a1", "c2", 1_500)), 0);
    assert_eq!(run(&db, &decision::expire("a1", "c1", 1_500)), 1);
    assert_eq!(field::<String>(&db, "a1", "status"), "expired");
    assert_eq!(run(&db, &decision::close_inbox("a1", 1_500)), 2, "both approvers' rows leave the pending inbox");
}

#[test]
fn ringis_claim_takes_only_its_chosen_outcome_between_the_two_deadlines() {
    let db = open();
    db.execute("UPDATE approvals SET on_expiry = 'reject', task_expires_at = 20000 WHERE id = 'a1'", []).unwrap();
    let sys = |verdict, now| column::<String>(&db, &decision::system_claim("a1", "sys", now, now + 1_000, verdict));
    assert_eq!(sys(Verdict::Reject, 20_000), Vec::<String>::new(), "past the task's deadline");
    assert_eq!(sys(Verdict::Approve, 12_000), Vec::<String>::new(), "not the chosen outcome");
    assert_eq!(sys(Verdict::Reject, 12_000), ["sys"]);
    assert_eq!(field::<Option<String>>(&db, "a1", "attempt_sub"), None, "ringi's attempt has no sub");
    assert_eq!(run(&db, &decision::unconfirmed("a1", "sys", 12_500)), 1);
    assert_eq!(field::<i64>(&db, "a1", "decided_on_expiry"), 1);
    assert_eq!(field::<String>(&db, "a1", "status"), "rejected");
}

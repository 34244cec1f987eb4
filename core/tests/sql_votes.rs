//! The votes (`ringi_core::sql::votes`), run by SQLite over the worker's real migrations: a person's vote counts
//! once, and a vote that does not decide lands only while its seat still holds the slot it goes through.

mod common;
use common::{approval, count, migrated, run};

use ringi_core::base::status::Verdict;
use ringi_core::sql::votes::{self, Seat, VoteRow};

fn row<'a>(sub: &'a str, principal: &'a str, verdict: Verdict) -> VoteRow<'a> {
    VoteRow { sub, principal, email: None, username: None, verdict, comment: None, feedback_json: None, at: 1_000 }
}

#[test]
fn a_person_votes_once_whatever_they_send_again() {
    let db = migrated();
    approval(&db, "a1", 10_000, &["sub:alice", "sub:bob"]);
    assert_eq!(run(&db, &votes::vote("a1", &row("alice", "sub:alice", Verdict::Approve), Seat::Any)), 1);
    assert_eq!(run(&db, &votes::vote("a1", &row("alice", "sub:alice", Verdict::Reject), Seat::Any)), 0);
    assert_eq!(count(&db, "decisions", "approval_id = 'a1' AND sub = 'alice' AND decision = 'approve'"), 1);
    assert_eq!(run(&db, &votes::vote("a1", &row("bob", "sub:bob", Verdict::Approve), Seat::Any)), 1);
    assert_eq!(count(&db, "decisions", "approval_id = 'a1'"), 2);
}

#[test]
fn a_held_vote_lands_only_while_its_seat_is_listed_and_not_handed_on() {
    let db = migrated();
    approval(&db, "a1", 10_000, &["sub:alice", "sub:bob"]);
    assert_eq!(run(&db, &votes::vote("a1", &row("carol", "sub:carol", Verdict::Approve), Seat::Held)), 0, "not listed");
    db.execute("UPDATE approval_principals SET delegated_to = 'sub:dave' WHERE pkey = 'sub:bob'", []).unwrap();
    assert_eq!(run(&db, &votes::vote("a1", &row("bob", "sub:bob", Verdict::Approve), Seat::Held)), 0, "handed on");
    assert_eq!(run(&db, &votes::vote("a1", &row("alice", "sub:alice", Verdict::Approve), Seat::Held)), 1);
    assert_eq!(count(&db, "decisions", "approval_id = 'a1'"), 1);
}

#[test]
fn no_guess_lands_on_an_approval_that_asks_for_a_sign_in() {
    use common::column;
    use ringi_core::sql::decision::{self, Claim, Deadline};
    let db = migrated();
    approval(&db, "a1", 10_000, &["sub:alice", "sub:bob"]);
    db.execute("UPDATE approvals SET quorum = 'all', require_sign_in_json = '{\"maxAgeSeconds\":300}'", []).unwrap();
    let vote = votes::GuessedVote {
        sub: "alice",
        email: None,
        username: None,
        comment: None,
        at: 1_000,
        now: 1_000,
        keys_json: r#"["sub:alice"]"#,
        verdict: Verdict::Approve,
    };
    let reject =
        Claim { claim_id: "c1", now: 1_000, until: 2_000, verdict: Verdict::Reject, sub: Some("bob"), by: "bob" };
    let cond = votes::guessed_claim_condition(r#"["sub:bob"]"#, None);
    let claim = decision::claim("a1", &reject, Deadline::Approvers, &cond.sql, cond.args.clone());
    // The sign-in is checked in Rust on the loaded approval: the first round trip neither votes nor claims.
    assert_eq!(run(&db, &votes::guessed_vote("a1", &vote)), 0);
    assert!(column::<String>(&db, &claim).is_empty());
    db.execute("UPDATE approvals SET require_sign_in_json = NULL", []).unwrap();
    assert_eq!(run(&db, &votes::guessed_vote("a1", &vote)), 1, "without one, the guess applies");
    assert_eq!(column::<String>(&db, &claim), ["c1"]);
}

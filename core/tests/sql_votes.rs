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

//! The outcome on expiry's pick (`ringi_core::sql::on_expiry::due`), run by SQLite over the worker's real
//! migrations: only open approvals with an outcome, past their approvers' deadline and before their task's, and
//! a claimed one only once its holder's lease is over.

mod common;
use common::{approval, column, migrated};

use ringi_core::sql::on_expiry;

#[test]
fn only_approvals_between_the_two_deadlines_with_an_outcome_are_due() {
    let db = migrated();
    for id in ["due", "no-outcome", "early", "task-gone", "decided", "held", "held-dead"] {
        approval(&db, id, 1_000, &["sub:alice"]);
    }
    db.execute_batch(
        "UPDATE approvals SET on_expiry = 'approve', task_expires_at = 9000;
         UPDATE approvals SET on_expiry = 'none' WHERE id = 'no-outcome';
         UPDATE approvals SET expires_at = 5000 WHERE id = 'early';
         UPDATE approvals SET task_expires_at = 1500 WHERE id = 'task-gone';
         UPDATE approvals SET status = 'approved', task_token = NULL WHERE id = 'decided';
         UPDATE approvals SET status = 'claimed', claim_id = 'c', claimed_until = 3000 WHERE id = 'held';
         UPDATE approvals SET status = 'claimed', claim_id = 'c', claimed_until = 1500 WHERE id = 'held-dead';",
    )
    .unwrap();
    let mut due: Vec<String> = column(&db, &on_expiry::due(2_000));
    due.sort();
    assert_eq!(due, ["due", "held-dead"]);
}

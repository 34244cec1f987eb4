//! The inbox query must be answered from the `approval_principals_inbox` index, never by scanning the
//! tables: checked with SQLite's planner over the worker's real migrations, with 10,000 approvals loaded.

mod common;
use common::migrated;

use ringi_core::sql::inbox::query as inbox_sql;
use rusqlite::{params_from_iter, Connection};

fn db() -> Connection {
    let db = migrated();
    let tx = db.unchecked_transaction().unwrap();
    for i in 0..10_000i64 {
        let id = format!("id{i:020}");
        tx.execute(
            "INSERT INTO approvals (id, task_token, token_sha256, status, title, approver_count, created_at, expires_at)
             VALUES (?1, 't', 'h' || ?1, 'pending', 'title', 1, 0, ?2)",
            (&id, 1_000_000 + i),
        )
        .unwrap();
        let who = format!("sub:user{}", i % 100);
        tx.execute(
            "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at) VALUES (?1, 'sub', ?2, ?3, ?4)",
            (&id, &who[4..], &who, 1_000_000 + i),
        )
        .unwrap();
    }
    tx.commit().unwrap();
    db.execute_batch("ANALYZE").unwrap();
    db
}

fn plan(db: &Connection, pending: bool) -> Vec<String> {
    let sql = format!("EXPLAIN QUERY PLAN {}", inbox_sql(3, pending));
    let mut stmt = db.prepare(&sql).unwrap();
    let args: Vec<rusqlite::types::Value> = vec![
        "sub:user7".to_string().into(),
        "email:a@example.com".to_string().into(),
        "group:finance".to_string().into(),
        0i64.into(),
        0i64.into(),
        String::new().into(),
        26i64.into(),
    ];
    stmt.query_map(params_from_iter(args), |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn inbox_query_uses_the_index_and_scans_nothing() {
    let db = db();
    for pending in [true, false] {
        let steps = plan(&db, pending);
        println!("inbox plan (pending={pending}):\n  {}", steps.join("\n  "));
        assert!(
            steps.iter().any(|s| s.contains("approval_principals USING COVERING INDEX approval_principals_inbox")
                || s.contains("approval_principals USING INDEX approval_principals_inbox")),
            "{steps:?}"
        );
        assert!(
            steps.iter().any(|s| s.contains("SEARCH a USING INDEX sqlite_autoindex_approvals_1 (id=?)")),
            "{steps:?}"
        );
        assert!(
            !steps.iter().any(|s| s.starts_with("SCAN a")
                || s.starts_with("SCAN approval_principals")
                || s.starts_with("SCAN approvals")
                || s.starts_with("SCAN d")),
            "no full scans: {steps:?}"
        );
        assert!(!steps.iter().any(|s| s.contains("GROUP BY")), "no grouping over all of a user's rows: {steps:?}");
    }
}

/// VM steps of one inbox page for a user with `n` pending approvals (each reachable through two of the
/// user's principals, as with a sub and a group).
fn page_cost(n: i64) -> u64 {
    let db = migrated();
    let tx = db.unchecked_transaction().unwrap();
    for i in 0..n {
        let id = format!("id{i:020}");
        tx.execute(
            "INSERT INTO approvals (id, task_token, token_sha256, status, title, approver_count, created_at, expires_at)
             VALUES (?1, 't', 'h' || ?1, 'pending', 'title', 2, 0, ?2)",
            (&id, 1_000_000 + i),
        )
        .unwrap();
        for (kind, value) in [("sub", "heavy"), ("group", "finance")] {
            tx.execute(
                "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                (&id, kind, value, format!("{kind}:{value}"), 1_000_000 + i),
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
    db.execute_batch("ANALYZE").unwrap();
    let mut stmt = db.prepare(&inbox_sql(2, true)).unwrap();
    let rows: Vec<String> = stmt
        .query_map(rusqlite::params!["sub:heavy", "group:finance", 0i64, i64::MIN / 2, "", 26i64], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 26, "one page (+1 to know there is more), duplicates removed");
    assert_eq!(rows[0], "id00000000000000000000");
    stmt.get_status(rusqlite::StatementStatus::VmStep) as u64
}

#[test]
fn inbox_page_cost_does_not_grow_with_the_pending_count() {
    let (small, large) = (page_cost(1_000), page_cost(20_000));
    println!("inbox page VM steps: 1,000 pending → {small}, 20,000 pending → {large}");
    assert!(large < small * 3 / 2, "{small} → {large}");
}

#[test]
fn inbox_query_returns_a_sorted_page() {
    let db = db();
    let mut stmt = db.prepare(&inbox_sql(1, true)).unwrap();
    let ids: Vec<String> = stmt
        .query_map(rusqlite::params!["sub:user7", 0i64, i64::MIN / 2, "", 5i64], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        ids,
        [
            "id00000000000000000007",
            "id00000000000000000107",
            "id00000000000000000207",
            "id00000000000000000307",
            "id00000000000000000407"
        ]
    );
}

//! Shared by the SQL tests: SQLite as D1 runs the worker's statements.

use rusqlite::Connection;

/// The worker's migration files, in the order wrangler applies them.
pub fn migration_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../edge/migrations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// An in-memory SQLite database with the worker's real migrations applied, in order, as wrangler applies them.
pub fn migrated() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    for file in migration_files() {
        db.execute_batch(&std::fs::read_to_string(file).unwrap()).unwrap();
    }
    db
}

/// The values of a statement as SQLite binds them (the worker binds the same as JS values).
#[allow(dead_code)] // each test binary uses a part of this file
pub fn values(args: &[ringi_core::sql::SqlArg]) -> Vec<rusqlite::types::Value> {
    use ringi_core::sql::SqlArg;
    args.iter()
        .map(|a| match a {
            SqlArg::Text(t) => t.clone().into(),
            SqlArg::Int(i) => (*i).into(),
            SqlArg::Null => rusqlite::types::Value::Null,
        })
        .collect()
}

/// Runs a write as D1 runs it; how many rows it changed.
#[allow(dead_code)]
pub fn run(db: &Connection, s: &ringi_core::sql::SqlCond) -> usize {
    db.execute(&s.sql, rusqlite::params_from_iter(values(&s.args))).unwrap_or_else(|e| panic!("{e}: {}", s.sql))
}

/// The first column of every row a statement returns (a write with RETURNING, or a query).
#[allow(dead_code)]
pub fn column<T: rusqlite::types::FromSql>(db: &Connection, s: &ringi_core::sql::SqlCond) -> Vec<T> {
    let mut stmt = db.prepare(&s.sql).unwrap_or_else(|e| panic!("{e}: {}", s.sql));
    let rows = stmt.query_map(rusqlite::params_from_iter(values(&s.args)), |r| r.get::<_, T>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// A pending approval `id` until `expires_at`, its task token held, listing `approvers` (principal keys such
/// as `sub:alice`), each in their pending inbox.
#[allow(dead_code)]
pub fn approval(db: &Connection, id: &str, expires_at: i64, approvers: &[&str]) {
    db.execute(
        "INSERT INTO approvals (id, task_token, token_sha256, status, title, approver_count, created_at, expires_at)
         VALUES (?1, 'token-' || ?1, 'sha-' || ?1, 'pending', 'A title', ?2, 0, ?3)",
        rusqlite::params![id, approvers.len() as i64, expires_at],
    )
    .unwrap();
    for key in approvers {
        let (kind, value) = key.split_once(':').unwrap();
        db.execute(
            "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![id, kind, value, key, expires_at],
        )
        .unwrap();
    }
}

/// One column of one approval.
#[allow(dead_code)]
pub fn field<T: rusqlite::types::FromSql>(db: &Connection, id: &str, column: &str) -> T {
    db.query_row(&format!("SELECT {column} FROM approvals WHERE id = ?1"), [id], |r| r.get(0)).unwrap()
}

/// How many rows of `table` match `condition`.
#[allow(dead_code)]
pub fn count(db: &Connection, table: &str, condition: &str) -> i64 {
    db.query_row(&format!("SELECT COUNT(*) FROM {table} WHERE {condition}"), [], |r| r.get(0)).unwrap()
}

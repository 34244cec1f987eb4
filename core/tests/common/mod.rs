//! Shared by the SQL tests: SQLite as D1 runs the worker's statements.

use rusqlite::Connection;

/// An in-memory SQLite database with the worker's real migrations applied, in order, as wrangler applies them.
pub fn migrated() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    let mut files: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../edge/migrations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        db.execute_batch(&std::fs::read_to_string(file).unwrap()).unwrap();
    }
    db
}

//! Out-of-office routing has one rule, `rules::route`; D1 makes it in SQL inside the registration's batch
//! (`sql::routing`). Over generated cases — people listed by sub or email, absences with and without a verified
//! email, several per person, requesters, self-approval allowed or not — SQLite running the worker's statements
//! over its real migrations routes exactly the slots `rules::route` routes, to the same stand-ins.

mod common;
use common::migrated;

use ringi_core::base::principal::Principal;
use ringi_core::domain::rules::{route, Absence, Routing};
use ringi_core::domain::self_approval::Requesters;
use ringi_core::sql::routing::{routing_sql, ROUTED_SQL};
use rusqlite::Connection;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.next(100) < pct
    }
}

const PEOPLE: u64 = 5;
const NOW: i64 = 1_000_000;

fn person(rng: &mut Rng) -> Principal {
    let i = rng.next(PEOPLE);
    if rng.chance(50) {
        Principal::Sub(format!("p{i}"))
    } else {
        Principal::Email(format!("p{i}@example.com"))
    }
}

fn keys(ps: &[Principal]) -> String {
    serde_json::Value::from(ps.iter().map(Principal::key).collect::<Vec<_>>()).to_string()
}

/// One case: what SQLite routed and what the rule routes.
fn case(db: &Connection, seed: u64) -> (Vec<Routing>, Vec<Routing>) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut listed: Vec<Principal> = Vec::new();
    for _ in 0..1 + rng.next(4) {
        let p = if rng.chance(15) { Principal::Group("eng".into()) } else { person(&mut rng) };
        if !listed.contains(&p) {
            listed.push(p);
        }
    }
    let requesters: Vec<Principal> = (0..rng.next(3)).map(|_| person(&mut rng)).collect();
    let allow_self = rng.chance(20);
    // Absences: some people away (one row per sub), some with their email; the latest update first for the rule.
    let mut rows: Vec<(Absence, bool, i64)> = Vec::new();
    for i in 0..PEOPLE {
        if !rng.chance(60) {
            continue;
        }
        let email =
            rng.chance(70).then(|| format!("p{}@example.com", if rng.chance(85) { i } else { rng.next(PEOPLE) }));
        let active = rng.chance(85);
        let a = Absence { sub: format!("p{i}"), email, stand_in: person(&mut rng) };
        rows.push((a, active, rng.next(1_000) as i64));
    }
    db.execute_batch(
        "DELETE FROM approval_events; DELETE FROM approval_principals; DELETE FROM approvals; DELETE FROM out_of_office;",
    )
    .unwrap();
    db.execute(
        "INSERT INTO approvals (id, task_token, token_sha256, request_sha256, status, title, approver_count, created_at,
           expires_at, requested_by_json, allow_self_approval)
         VALUES ('a', 't', 'tok', 'req', 'pending', 'x', ?1, ?2, ?3, ?4, ?5)",
        (listed.len() as i64, NOW, NOW + 10_000, keys(&requesters), allow_self as i64),
    )
    .unwrap();
    for p in &listed {
        db.execute(
            "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at) VALUES ('a', ?1, ?2, ?3, ?4)",
            (p.kind(), p.value(), p.key(), NOW + 10_000),
        )
        .unwrap();
    }
    for (a, active, updated) in &rows {
        let (starts, ends) = if *active { (NOW - 1, NOW + 1) } else { (NOW + 1, NOW + 2) };
        db.execute(
            "INSERT INTO out_of_office (sub, email, delegate, starts_at, ends_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            (&a.sub, &a.email, a.stand_in.key(), starts, ends, updated),
        )
        .unwrap();
    }
    for sql in routing_sql() {
        let mut stmt = db.prepare(&sql).unwrap();
        let n = stmt.parameter_count();
        let all: [&dyn rusqlite::ToSql; 4] = [&"a", &NOW, &"tok", &"req"];
        stmt.execute(rusqlite::params_from_iter(all.iter().take(n))).unwrap();
    }
    let mut stmt = db.prepare(ROUTED_SQL).unwrap();
    let sql: Vec<Routing> = stmt
        .query_map(["a"], |r| {
            let (slot, to): (String, String) = (r.get(0)?, r.get(1)?);
            Ok(Routing { slot: Principal::from_key(&slot).unwrap(), stand_in: Principal::from_key(&to).unwrap() })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut active: Vec<&(Absence, bool, i64)> = rows.iter().filter(|r| r.1).collect();
    active.sort_by_key(|r| -r.2);
    let absences: Vec<Absence> = active.into_iter().map(|r| r.0.clone()).collect();
    let rule = route(&listed, &absences, &Requesters { principals: &requesters, allow_self_approval: allow_self });
    (sql, rule)
}

#[test]
fn d1_routes_exactly_what_the_rule_routes() {
    let (db, mut routed) = (migrated(), 0);
    for seed in 1..=600 {
        let (sql, rule) = case(&db, seed);
        assert_eq!(sql, rule, "seed {seed}");
        routed += rule.len();
    }
    // The cases exercise routing, not only its refusals.
    assert!(routed > 100, "{routed}");
}

//! The D1 backend, split by concern: [`approvals`] (registration and loading), [`votes`] (votes, the claim
//! and the final writes), [`events`] (the audit trail's statements and export), [`view`] (the approval
//! page's one round trip), [`inbox`], [`delegation`], [`schedule`], [`on_expiry`] and [`maintenance`] (cron
//! and mail bookkeeping). The claim is the single source of exactly-once: one conditional UPDATE that also
//! records the callback attempt, and whose returned row says who won.
//!
//! Every D1 call goes through [`D1Store::call`]: counted per request (a batch is one round trip), retried
//! with bounded jittered backoff when D1 reports a transient failure (reads and idempotent writes only: every
//! write here is conditional or keyed so that running it twice is running it once), bounded in time, and —
//! in dev/bench only — made to fail on purpose by the `D1_FAULTS` switch, through the same error path.

mod approvals;
mod delegation;
mod events;
mod inbox;
mod maintenance;
mod on_expiry;
mod push;
mod schedule;
mod view;
mod votes;

use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either};
use ringi_core::adapters::d1::{classify_d1_error, D1ErrorKind, D1_RETRY, D1_TRY_TIMEOUT_MS};
use ringi_core::dev::faults::{injected_message, Injection};
use ringi_core::dev::latency::Remote;
use ringi_core::sql::{SqlArg, SqlCond};
use ringi_core::ApiError;
use serde::Deserialize;
use serde_json::json;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Delay, Env};

use crate::error::OrInternal;
use crate::platform::{log, random_unit};
use crate::probe::Probe;
use crate::store::port;

port::impl_approval_store!(inherent D1Store);
port::impl_audit_store!(inherent D1Store);
port::impl_upkeep_store!(inherent D1Store);
port::impl_governance_store!(inherent D1Store);
port::impl_schedule_store!(inherent D1Store);
port::impl_on_expiry_store!(inherent D1Store);
port::impl_push_store!(inherent D1Store);

/// A D1 call that failed for good (after retries when it was worth retrying).
#[derive(Debug)]
pub struct D1Failure {
    pub kind: D1ErrorKind,
    pub message: String,
    pub what: &'static str,
    pub call: u32,
    pub tries: u32,
}

impl From<D1Failure> for ApiError {
    /// Logged with context (no secrets: D1 messages carry no bound values). A deterministic error is a
    /// bug (500); anything else means storage is unavailable right now (503, `Retry-After`).
    fn from(f: D1Failure) -> Self {
        let permanent = f.kind == D1ErrorKind::Permanent;
        log(
            if permanent { "error" } else { "warn" },
            "d1_failed",
            json!({"what": f.what, "call": f.call, "tries": f.tries, "kind": format!("{:?}", f.kind), "error": f.message}),
        );
        if permanent {
            ApiError::Internal
        } else {
            ApiError::storage_unavailable()
        }
    }
}

/// One SQL statement with its bound values (a batch is a list of these).
pub(crate) struct Stmt {
    sql: String,
    args: Vec<JsValue>,
}

impl Stmt {
    pub(crate) fn new(sql: impl Into<String>, args: Vec<JsValue>) -> Self {
        Self { sql: sql.into(), args }
    }
}

/// A statement core built (`ringi_core::sql`), its values bound as D1 takes them.
impl From<SqlCond> for Stmt {
    fn from(c: SqlCond) -> Self {
        Self { args: c.args.iter().map(arg).collect(), sql: c.sql }
    }
}

pub struct D1Store {
    db: D1Database,
    probe: Rc<Probe>,
}

pub(crate) fn s(v: &str) -> JsValue {
    JsValue::from_str(v)
}

pub(crate) fn n(v: i64) -> JsValue {
    // D1 binds JS numbers; i64 would become a BigInt. Milliseconds fit exactly in an f64.
    JsValue::from_f64(v as f64)
}

pub(crate) fn opt(v: Option<&str>) -> JsValue {
    v.map(JsValue::from_str).unwrap_or(JsValue::NULL)
}

/// A value core's SQL binds, as D1 takes it.
pub(crate) fn arg(a: &SqlArg) -> JsValue {
    match a {
        SqlArg::Text(t) => s(t),
        SqlArg::Int(i) => n(*i),
        SqlArg::Null => JsValue::NULL,
    }
}

impl D1Store {
    pub fn open(env: &Env, probe: Rc<Probe>) -> Result<Self, ApiError> {
        Ok(Self { db: env.d1("DB").internal("D1 binding DB")?, probe })
    }

    /// This request's round trips (AWS calls count there too).
    pub fn probe(&self) -> &Probe {
        &self.probe
    }

    fn prepare(&self, stmt: &Stmt) -> worker::Result<D1PreparedStatement> {
        self.db.prepare(&stmt.sql).bind(&stmt.args)
    }

    /// One try of a call: bounded in time, failed on purpose when the fault switch says so.
    async fn try_once<T, Fut>(&self, call: u32, what: &str, injection: Injection, f: Fut) -> Result<T, String>
    where
        Fut: Future<Output = worker::Result<T>>,
    {
        if injection == Injection::Before {
            return Err(injected_message(call, what));
        }
        let timeout = Delay::from(Duration::from_millis(D1_TRY_TIMEOUT_MS));
        let outcome = match select(Box::pin(f), Box::pin(timeout)).await {
            Either::Left((r, _)) => r.map_err(|e| e.to_string()),
            Either::Right(_) => Err(format!("D1_ERROR: D1 call timed out ({D1_TRY_TIMEOUT_MS} ms)")),
        };
        match (outcome, injection) {
            (Ok(_), Injection::After) => Err(injected_message(call, what)),
            (o, _) => o,
        }
    }

    /// Runs one D1 call: numbered, bounded in time, retried while D1 says the failure is transient (every
    /// statement passed here is a read or an idempotent write), and failed on purpose when `D1_FAULTS`
    /// says so — before the statement runs, or after it ran (a write whose answer was lost).
    async fn call<T, F, Fut>(&self, what: &'static str, f: F) -> Result<T, D1Failure>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = worker::Result<T>>,
    {
        let call = self.probe.start_d1_call();
        let rand01 = self.probe.draw();
        let mut attempt = 1;
        loop {
            // Each try is a round trip to D1's primary: a modeled placement pays its RTT every time.
            self.probe.before_round_trip(Remote::D1).await;
            let injection = self.probe.inject(call, what, attempt, rand01);
            let message = match self.try_once(call, what, injection, f()).await {
                Ok(v) => return Ok(v),
                Err(m) => m,
            };
            let kind = classify_d1_error(&message);
            if kind != D1ErrorKind::Transient || attempt >= D1_RETRY.max_attempts {
                return Err(D1Failure { kind, message, what, call, tries: attempt });
            }
            log("info", "d1_retry", json!({"what": what, "call": call, "attempt": attempt, "error": message}));
            Delay::from(Duration::from_millis(D1_RETRY.backoff_ms(attempt, random_unit()))).await;
            attempt += 1;
        }
    }

    /// All rows of a query, deserialized; `what` names the call in logs and fault specs.
    async fn rows<T: for<'de> Deserialize<'de>>(&self, stmt: Stmt, what: &'static str) -> Result<Vec<T>, ApiError> {
        let stmt = &stmt;
        Ok(self.call(what, || async move { self.prepare(stmt)?.all().await?.results::<T>() }).await?)
    }

    async fn first<T: for<'de> Deserialize<'de>>(&self, stmt: Stmt, what: &'static str) -> Result<Option<T>, ApiError> {
        let stmt = &stmt;
        Ok(self.call(what, || async move { self.prepare(stmt)?.first::<T>(None).await }).await?)
    }

    /// Runs a write; how many rows it changed.
    async fn changes(&self, stmt: Stmt, what: &'static str) -> Result<usize, ApiError> {
        let stmt = &stmt;
        let changed = self
            .call(what, || async move {
                let r = self.prepare(stmt)?.run().await?;
                Ok(r.meta()?.and_then(|m| m.changes).unwrap_or(0))
            })
            .await?;
        self.note_events(std::slice::from_ref(stmt));
        Ok(changed)
    }

    /// Several statements in one D1 transaction.
    async fn batch(&self, stmts: &[Stmt], what: &'static str) -> Result<Vec<worker::D1Result>, D1Failure> {
        let results = self.batch_only(stmts, what).await?;
        self.note_events(stmts);
        Ok(results)
    }

    /// [`Self::batch`] without noting the events it wrote (the seal's own writes).
    async fn batch_only(&self, stmts: &[Stmt], what: &'static str) -> Result<Vec<worker::D1Result>, D1Failure> {
        self.call(what, || async move {
            let prepared = stmts.iter().map(|st| self.prepare(st)).collect::<worker::Result<Vec<_>>>()?;
            self.db.batch(prepared).await
        })
        .await
    }

    /// Notes for the seal after the response that events may have been written (every event insert starts with
    /// [`events::INSERT`]; the seal reads which ones are unsealed).
    fn note_events(&self, stmts: &[Stmt]) {
        if stmts.iter().any(|st| st.sql.starts_with(events::INSERT)) {
            self.probe.wrote_events([]);
        }
    }
}

/// Rows a statement of a batch changed.
fn changed(result: Option<&worker::D1Result>) -> usize {
    result.and_then(|r| r.meta().ok().flatten()).and_then(|m| m.changes).unwrap_or(0)
}

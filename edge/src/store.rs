//! D1 storage adapter. The claim (`claim`) is the single source of exactly-once: one conditional UPDATE
//! that also records the callback attempt, and whose returned row says who won.
//!
//! Every D1 call goes through [`Store::call`]: counted per request, retried with bounded jittered backoff
//! when D1 reports a transient failure (reads and idempotent writes only: every write here is conditional
//! or keyed so that running it twice is running it once), bounded in time, and — in dev/bench only — made
//! to fail on purpose by the `D1_FAULTS` switch, through the same error path.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either};
use ringi_core::approval::{ApprovalState, ApprovalStatus, Quorum, Verdict};
use ringi_core::form::FormField;
use ringi_core::principal::Principal;
use ringi_core::register::NewApproval;
use ringi_core::storage::{
    classify_d1_error, injected_message, D1ErrorKind, FaultRng, FaultSpec, Injection, D1_RETRY, D1_TRY_TIMEOUT_MS,
};
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Delay, Env};

use crate::error::OrInternal;
use crate::platform::{log, random_unit};

/// Per request (or cron run): how many D1 calls and tries it made, and the faults to inject, if any.
pub struct D1Probe {
    calls: Cell<u32>,
    tries: Cell<u32>,
    faults: Option<FaultSpec>,
    rng: RefCell<FaultRng>,
}

impl D1Probe {
    pub fn new(faults: Option<FaultSpec>) -> Rc<Self> {
        thread_local! {
            static REQUESTS: Cell<u64> = const { Cell::new(0) };
        }
        // A seeded spec gives each request of the isolate its own, reproducible sequence.
        let n = REQUESTS.with(|r| {
            r.set(r.get() + 1);
            r.get()
        });
        let seed = match faults.as_ref().and_then(|f| f.seed) {
            Some(s) => s.wrapping_add(n.wrapping_mul(0x9E37_79B9)),
            None => (random_unit() * 1e15) as u64,
        };
        Rc::new(Self { calls: Cell::new(0), tries: Cell::new(0), faults, rng: RefCell::new(FaultRng::new(seed)) })
    }

    pub fn calls(&self) -> u32 {
        self.calls.get()
    }

    pub fn tries(&self) -> u32 {
        self.tries.get()
    }

    /// The generator's number for one call (drawn once per call, so `pct` chooses calls, not tries).
    fn draw(&self) -> f64 {
        if self.faults.is_some() {
            self.rng.borrow_mut().next_unit()
        } else {
            0.0
        }
    }

    fn inject(&self, call: u32, what: &str, attempt: u32, rand01: f64) -> Injection {
        match &self.faults {
            None => Injection::None,
            Some(f) => f.decide(call, what, attempt, rand01),
        }
    }
}

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
            ApiError::StorageUnavailable
        }
    }
}

type D1Try<T> = Result<T, String>;

/// Which callback attempt may have reached Step Functions (the earliest one not known to have failed).
#[derive(Debug, Clone, Deserialize)]
pub struct Attempt {
    pub attempt_id: Option<String>,
    pub attempt_verdict: Option<String>,
    pub attempt_sub: Option<String>,
}

impl Attempt {
    pub fn verdict(&self) -> Option<Verdict> {
        self.attempt_verdict.as_deref().and_then(Verdict::parse)
    }
}

/// A row of `approvals`.
#[derive(Debug, Deserialize)]
pub struct ApprovalRow {
    pub id: String,
    task_token: Option<String>,
    status: String,
    pub title: String,
    pub summary: String,
    details_json: String,
    form_json: String,
    quorum: String,
    pub approver_count: f64,
    context_json: String,
    pub locale: Option<String>,
    pub created_at: f64,
    pub expires_at: f64,
    pub claimed_until: Option<f64>,
    pub decided_at: Option<f64>,
    confirmed: f64,
    pub attempt_sub: Option<String>,
    pub attempt_by: Option<String>,
    pub registered_by: Option<String>,
}

/// The authenticated registrant: what approvers see as "Registered by", and its registration rate.
pub struct Registrant<'a> {
    pub label: &'a str,
    pub rate_per_minute: u32,
}

/// What [`Store::insert`] did.
pub enum Inserted {
    Created,
    /// The ID or the task token is taken: nothing was written (also when an earlier try of this very insert
    /// went through but its answer was lost: the caller then finds the same request, as for a redelivery).
    Exists,
    /// The credential is over its rate: nothing was written.
    RateLimited {
        retry_after: u32,
    },
}

/// An existing registration, as far as a new one is compared with it.
#[derive(Debug, Deserialize)]
pub struct Registered {
    pub id: String,
    pub token_sha256: String,
    pub request_sha256: Option<String>,
    pub expires_at: f64,
}

fn json_object(s: &str) -> Map<String, Value> {
    serde_json::from_str(s).unwrap_or_default()
}

/// The domain status of a stored `(status, confirmed)`; a corrupt pair is an error (logged), never a guess.
pub fn stored_status(id: &str, status: &str, confirmed: f64) -> Result<(ApprovalStatus, Option<Verdict>), ApiError> {
    ApprovalStatus::from_stored(status, confirmed as i64).map_err(|e| {
        log("error", "corrupt_row", json!({"approvalId": id, "error": e.to_string()}));
        ApiError::Internal
    })
}

impl ApprovalRow {
    /// The status and, once decided, the verdict.
    pub fn status(&self) -> Result<(ApprovalStatus, Option<Verdict>), ApiError> {
        stored_status(&self.id, &self.status, self.confirmed)
    }

    pub fn state(&self) -> Result<ApprovalState, ApiError> {
        Ok(ApprovalState {
            status: self.status()?.0,
            expires_at: self.expires_at as i64,
            claimed_until: self.claimed_until.map(|t| t as i64),
        })
    }

    pub fn token(&self) -> Option<TaskToken> {
        self.task_token.as_deref().and_then(|t| TaskToken::parse(t).ok())
    }

    pub fn quorum(&self) -> Quorum {
        Quorum::parse(&self.quorum).unwrap_or(Quorum::Any)
    }

    pub fn form(&self) -> Vec<FormField> {
        serde_json::from_str(&self.form_json).unwrap_or_default()
    }

    pub fn details(&self) -> Map<String, Value> {
        json_object(&self.details_json)
    }

    pub fn context(&self) -> Map<String, Value> {
        json_object(&self.context_json)
    }
}

/// An approval as the routes need it.
pub struct Loaded {
    pub row: ApprovalRow,
    pub principals: Vec<Principal>,
    pub decisions: Vec<DecisionRow>,
}

/// A row of `decisions`.
#[derive(Debug, Clone, Deserialize)]
pub struct DecisionRow {
    pub sub: String,
    pub principal: String,
    pub email: Option<String>,
    pub username: Option<String>,
    pub decision: String,
    pub comment: Option<String>,
    pub feedback_json: Option<String>,
    pub at: f64,
}

impl DecisionRow {
    pub fn feedback(&self) -> Option<Map<String, Value>> {
        self.feedback_json.as_deref().map(json_object)
    }
}

pub struct Store {
    db: D1Database,
    probe: Rc<D1Probe>,
}

pub fn pkey(p: &Principal) -> String {
    format!("{}:{}", p.kind(), p.value())
}

fn s(v: &str) -> JsValue {
    JsValue::from_str(v)
}

fn n(v: i64) -> JsValue {
    // D1 binds JS numbers; i64 would become a BigInt. Milliseconds fit exactly in an f64.
    JsValue::from_f64(v as f64)
}

fn opt(v: Option<&str>) -> JsValue {
    v.map(JsValue::from_str).unwrap_or(JsValue::NULL)
}

impl Store {
    pub fn open(env: &Env, probe: Rc<D1Probe>) -> Result<Self, ApiError> {
        Ok(Self { db: env.d1("DB").internal("D1 binding DB")?, probe })
    }

    fn stmt(&self, sql: &str, args: &[JsValue]) -> worker::Result<D1PreparedStatement> {
        self.db.prepare(sql).bind(args)
    }

    /// Runs one D1 call: numbered, bounded in time, retried while D1 says the failure is transient (every
    /// statement passed here is a read or an idempotent write), and failed on purpose when `D1_FAULTS`
    /// says so — before the statement runs, or after it ran (a write whose answer was lost).
    async fn call<T, F, Fut>(&self, what: &'static str, f: F) -> Result<T, D1Failure>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = worker::Result<T>>,
    {
        let call = self.probe.calls.get() + 1;
        self.probe.calls.set(call);
        let rand01 = self.probe.draw();
        let mut attempt = 1;
        loop {
            self.probe.tries.set(self.probe.tries.get() + 1);
            let injection = self.probe.inject(call, what, attempt, rand01);
            let result: D1Try<T> = if injection == Injection::Before {
                Err(injected_message(call, what))
            } else {
                let timeout = Delay::from(Duration::from_millis(D1_TRY_TIMEOUT_MS));
                let outcome = match select(Box::pin(f()), Box::pin(timeout)).await {
                    Either::Left((r, _)) => r.map_err(|e| e.to_string()),
                    Either::Right(_) => Err(format!("D1_ERROR: D1 call timed out ({D1_TRY_TIMEOUT_MS} ms)")),
                };
                match (outcome, injection) {
                    (Ok(_), Injection::After) => Err(injected_message(call, what)),
                    (o, _) => o,
                }
            };
            let message = match result {
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
    async fn rows<T: for<'de> Deserialize<'de>>(
        &self,
        sql: &str,
        args: &[JsValue],
        what: &'static str,
    ) -> Result<Vec<T>, ApiError> {
        Ok(self.call(what, || async move { self.stmt(sql, args)?.all().await?.results::<T>() }).await?)
    }

    async fn first<T: for<'de> Deserialize<'de>>(
        &self,
        sql: &str,
        args: &[JsValue],
        what: &'static str,
    ) -> Result<Option<T>, ApiError> {
        Ok(self.call(what, || async move { self.stmt(sql, args)?.first::<T>(None).await }).await?)
    }

    async fn changes(&self, sql: &str, args: &[JsValue], what: &'static str) -> Result<usize, ApiError> {
        Ok(self
            .call(what, || async move {
                let r = self.stmt(sql, args)?.run().await?;
                Ok(r.meta()?.and_then(|m| m.changes).unwrap_or(0))
            })
            .await?)
    }

    /// Several statements in one D1 transaction.
    async fn batch(
        &self,
        stmts: &[(String, Vec<JsValue>)],
        what: &'static str,
    ) -> Result<Vec<worker::D1Result>, D1Failure> {
        self.call(what, || async move {
            let prepared = stmts.iter().map(|(sql, args)| self.stmt(sql, args)).collect::<worker::Result<Vec<_>>>()?;
            self.db.batch(prepared).await
        })
        .await
    }

    pub async fn get(&self, id: &ApprovalId) -> Result<Option<ApprovalRow>, ApiError> {
        self.first("SELECT * FROM approvals WHERE id = ?1", &[s(id.as_str())], "get").await
    }

    /// The approval with its principals and decisions, in one D1 round trip (one batch, one snapshot).
    pub async fn load(&self, id: &ApprovalId) -> Result<Option<Loaded>, ApiError> {
        #[derive(Deserialize)]
        struct PrincipalRow {
            kind: String,
            value: String,
        }
        let arg = vec![s(id.as_str())];
        let results = self
            .batch(
                &[
                    ("SELECT * FROM approvals WHERE id = ?1".into(), arg.clone()),
                    (
                        "SELECT kind, value FROM approval_principals WHERE approval_id = ?1 ORDER BY rowid".into(),
                        arg.clone(),
                    ),
                    ("SELECT * FROM decisions WHERE approval_id = ?1 ORDER BY at, sub".into(), arg),
                ],
                "load",
            )
            .await?;
        let [approval, principals, decisions] = results.as_slice() else {
            return Err(ApiError::Internal);
        };
        let Some(row) = approval.results::<ApprovalRow>().internal("D1 approval row")?.into_iter().next() else {
            return Ok(None);
        };
        let principals = principals
            .results::<PrincipalRow>()
            .internal("D1 principal rows")?
            .iter()
            .filter_map(|r| Principal::from_parts(&r.kind, &r.value))
            .collect();
        let decisions = decisions.results().internal("D1 decision rows")?;
        Ok(Some(Loaded { row, principals, decisions }))
    }

    pub async fn decisions(&self, id: &ApprovalId) -> Result<Vec<DecisionRow>, ApiError> {
        self.rows("SELECT * FROM decisions WHERE approval_id = ?1 ORDER BY at, sub", &[s(id.as_str())], "decisions")
            .await
    }

    /// Counts the registration against `credential`'s minute and, unless that count is over `rate_per_minute`,
    /// inserts the approval and its principals — one transaction, one round trip.
    pub async fn insert(
        &self,
        id: &ApprovalId,
        a: &NewApproval,
        registrant: &Registrant<'_>,
        now: i64,
        remind_window_ms: i64,
    ) -> Result<Inserted, ApiError> {
        #[derive(Deserialize)]
        struct Count {
            count: f64,
        }
        let window_start = now - now.rem_euclid(60_000);
        let reminded_at = if a.expires_at - now <= remind_window_ms { n(now) } else { JsValue::NULL };
        let mail_state = if a.notify.is_empty() { "none" } else { "pending" };
        // Appended to each insert (its parameters follow the statement's own): nothing is written once the
        // credential is over its rate.
        let rate_args = [s(registrant.label), n(window_start), n(i64::from(registrant.rate_per_minute))];
        let within_rate = |mut args: Vec<JsValue>| -> (String, Vec<JsValue>) {
            let i = args.len() + 1;
            args.extend(rate_args.iter().cloned());
            let sql = format!(
                "(SELECT count FROM registration_rate WHERE credential = ?{i} AND window_start = ?{}) <= ?{}",
                i + 1,
                i + 2
            );
            (sql, args)
        };
        let mut batch = vec![(
            "INSERT INTO registration_rate (credential, window_start, count) VALUES (?1, ?2, 1)
             ON CONFLICT (credential, window_start) DO UPDATE SET count = count + 1 RETURNING count"
                .to_owned(),
            vec![s(registrant.label), n(window_start)],
        )];
        let (rate_sql, args) = within_rate(vec![
            s(id.as_str()),
            s(a.token.expose()),
            s(&a.token.fingerprint()),
            s(&a.title),
            s(&a.summary),
            s(&Value::Object(a.details.clone()).to_string()),
            s(&serde_json::to_string(&a.form).internal("form json")?),
            s(&a.quorum.as_string()),
            n(a.approvers.len() as i64),
            s(&Value::Object(a.context.clone()).to_string()),
            s(&serde_json::to_string(&a.notify).internal("notify json")?),
            opt(a.locale.as_deref()),
            n(now),
            n(a.expires_at),
            reminded_at,
            s(mail_state),
            s(&a.request_sha256),
            s(registrant.label),
        ]);
        batch.push((
            format!(
                "INSERT INTO approvals (id, task_token, token_sha256, status, title, summary, details_json, form_json,
                   quorum, approver_count, context_json, notify_json, locale, created_at, expires_at, reminded_at,
                   mail_state, request_sha256, registered_by)
                 SELECT ?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18
                 WHERE {rate_sql}"
            ),
            args,
        ));
        for p in &a.approvers {
            let (rate_sql, args) =
                within_rate(vec![s(id.as_str()), s(p.kind()), s(p.value()), s(&pkey(p)), n(a.expires_at)]);
            batch.push((
                format!(
                    "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at)
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE {rate_sql}"
                ),
                args,
            ));
        }
        let results = match self.batch(&batch, "insert").await {
            Ok(results) => results,
            Err(e) if e.message.contains("UNIQUE") || e.message.contains("constraint") => return Ok(Inserted::Exists),
            Err(e) => return Err(e.into()),
        };
        let count = results
            .first()
            .and_then(|r| r.results::<Count>().ok())
            .and_then(|rows| rows.first().map(|c| c.count as i64))
            .ok_or(ApiError::Internal)?;
        if count > i64::from(registrant.rate_per_minute) {
            let retry_after = ((window_start + 60_000 - now) as u32).div_ceil(1000).max(1);
            return Ok(Inserted::RateLimited { retry_after });
        }
        Ok(Inserted::Created)
    }

    /// The approvals an insert collided with: the same ID, or the same task token.
    pub async fn registered(&self, id: &ApprovalId, token_sha256: &str) -> Result<Vec<Registered>, ApiError> {
        self.rows(
            "SELECT id, token_sha256, request_sha256, expires_at FROM approvals WHERE id = ?1 OR token_sha256 = ?2",
            &[s(id.as_str()), s(token_sha256)],
            "registered",
        )
        .await
    }

    /// Takes the exclusive right to call Step Functions until `until` and, in the same statement, records
    /// this attempt (verdict, who, when, id = `claim_id`) unless an earlier attempt that may have been
    /// delivered is recorded already: that one is kept, since if it was delivered it is what closed the
    /// task. Exactly one concurrent caller wins; `Some(recorded attempt)` for the winner. Running it again
    /// with the same `claim_id` (a retry whose first answer was lost) wins again.
    #[allow(clippy::too_many_arguments)]
    pub async fn claim(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        until: i64,
        verdict: Verdict,
        sub: &str,
        by: &str,
    ) -> Result<Option<Attempt>, ApiError> {
        let rows: Vec<Attempt> = self
            .rows(
                "UPDATE approvals SET status = 'claimed', claim_id = ?1, claimed_until = ?2,
                   attempt_id = COALESCE(attempt_id, ?1),
                   attempt_verdict = CASE WHEN attempt_id IS NULL THEN ?5 ELSE attempt_verdict END,
                   attempt_sub = CASE WHEN attempt_id IS NULL THEN ?6 ELSE attempt_sub END,
                   attempt_by = CASE WHEN attempt_id IS NULL THEN ?7 ELSE attempt_by END,
                   attempt_at = CASE WHEN attempt_id IS NULL THEN ?4 ELSE attempt_at END
                 WHERE id = ?3 AND expires_at > ?4 AND task_token IS NOT NULL
                   AND (status = 'pending' OR (status = 'claimed' AND (claimed_until <= ?4 OR claim_id = ?1)))
                 RETURNING attempt_id, attempt_verdict, attempt_sub",
                &[s(claim_id), n(until), s(id.as_str()), n(now), s(verdict.as_str()), s(sub), s(by)],
                "claim",
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// The callback was delivered (Step Functions said 200): final, confirmed status, token dropped, the
    /// attempt record cleared, the decision kept for the audit trail.
    pub async fn finish(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        status: ApprovalStatus,
        vote: &Vote<'_>,
    ) -> Result<(), ApiError> {
        let update = (
            format!(
                "UPDATE approvals SET status = ?1, decision = ?1, confirmed = 1, decided_at = ?2, task_token = NULL,
                   claim_id = NULL, claimed_until = NULL, {CLEAR_ATTEMPT} WHERE id = ?3 AND claim_id = ?4"
            ),
            vec![s(status.as_str()), n(vote.at), s(id.as_str()), s(claim_id)],
        );
        self.batch(&[update, self.vote_stmt(id, vote), self.close_stmt(id, vote.at)], "finish").await?;
        Ok(())
    }

    /// Step Functions says the task is closed after an attempt that may have been delivered: the recorded
    /// attempt's verdict, unconfirmed (`confirmed = 0`), token dropped. `vote`: this request's decision,
    /// recorded when it is the attempt in question.
    pub async fn unconfirmed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        vote: Option<&Vote<'_>>,
    ) -> Result<(), ApiError> {
        let mut stmts = vec![(
            format!(
                "UPDATE approvals SET status = {ATTEMPT_STATUS}, decision = {ATTEMPT_STATUS}, confirmed = 0,
                   decided_at = ?1, task_token = NULL, claim_id = NULL, claimed_until = NULL
                 WHERE id = ?2 AND claim_id = ?3 AND attempt_verdict IS NOT NULL"
            ),
            vec![n(now), s(id.as_str()), s(claim_id)],
        )];
        if let Some(v) = vote {
            stmts.push(self.vote_stmt(id, v));
        }
        stmts.push(self.close_stmt(id, now));
        self.batch(&stmts, "unconfirmed").await?;
        Ok(())
    }

    /// Moves the approval from its approvers' pending inboxes to their decided ones.
    fn close_stmt(&self, id: &ApprovalId, at: i64) -> (String, Vec<JsValue>) {
        (
            "UPDATE approval_principals SET open = 0, sort_at = ?1 WHERE approval_id = ?2".into(),
            vec![n(at), s(id.as_str())],
        )
    }

    /// Step Functions says the task is closed and no attempt of ours may have closed it: expired.
    pub async fn expire(&self, id: &ApprovalId, claim_id: &str, now: i64) -> Result<(), ApiError> {
        let update = (
            format!(
                "UPDATE approvals SET status = 'expired', task_token = NULL, claim_id = NULL, claimed_until = NULL,
                   decided_at = ?1, {CLEAR_ATTEMPT} WHERE id = ?2 AND claim_id = ?3"
            ),
            vec![n(now), s(id.as_str()), s(claim_id)],
        );
        self.batch(&[update, self.close_stmt(id, now)], "expire").await?;
        Ok(())
    }

    /// The callback did not go through (or was never sent): make the approval decidable again. `not_sent`:
    /// no try of this claim can have reached Step Functions, so its attempt record (if it is this claim's)
    /// is cleared; otherwise it stays, and a later "task closed" resolves to its verdict, unconfirmed.
    pub async fn release(&self, id: &ApprovalId, claim_id: &str, not_sent: bool) -> Result<(), ApiError> {
        let clear = |col: &str| format!("{col} = CASE WHEN ?3 = 1 AND attempt_id = ?2 THEN NULL ELSE {col} END");
        let sql = format!(
            "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL, {}
             WHERE id = ?1 AND claim_id = ?2 AND status = 'claimed'",
            ["attempt_verdict", "attempt_sub", "attempt_by", "attempt_at", "attempt_id"].map(clear).join(", ")
        );
        self.changes(&sql, &[s(id.as_str()), s(claim_id), n(i64::from(not_sent))], "release").await.map(drop)
    }

    /// Records one approver's vote (idempotent: an approver votes once).
    pub async fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> Result<(), ApiError> {
        let (sql, args) = self.vote_stmt(id, vote);
        self.changes(&sql, &args, "record_vote").await.map(drop)
    }

    fn vote_stmt(&self, id: &ApprovalId, v: &Vote<'_>) -> (String, Vec<JsValue>) {
        (
            "INSERT OR IGNORE INTO decisions (approval_id, sub, principal, email, username, decision, comment,
               feedback_json, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                .into(),
            vec![
                s(id.as_str()),
                s(v.sub),
                s(&v.principal),
                opt(v.email),
                opt(v.username),
                s(v.decision),
                opt(v.comment),
                v.feedback.map(|f| s(&Value::Object(f.clone()).to_string())).unwrap_or(JsValue::NULL),
                n(v.at),
            ],
        )
    }
}

/// SET clause that forgets the attempt record.
const CLEAR_ATTEMPT: &str =
    "attempt_id = NULL, attempt_verdict = NULL, attempt_sub = NULL, attempt_by = NULL, attempt_at = NULL";
/// The stored status of the recorded attempt's verdict.
const ATTEMPT_STATUS: &str = "(CASE attempt_verdict WHEN 'reject' THEN 'rejected' ELSE 'approved' END)";

/// One approver's decision as stored in `decisions`.
pub struct Vote<'a> {
    pub sub: &'a str,
    pub principal: String,
    pub email: Option<&'a str>,
    pub username: Option<&'a str>,
    pub decision: &'a str,
    pub comment: Option<&'a str>,
    pub feedback: Option<&'a Map<String, Value>>,
    pub at: i64,
}

/// A row of the inbox query (the approval plus its approve count).
#[derive(Debug, Deserialize)]
pub struct InboxRow {
    pub id: String,
    pub status: String,
    pub confirmed: f64,
    pub title: String,
    pub summary: String,
    pub quorum: String,
    pub approver_count: f64,
    pub context_json: String,
    pub created_at: f64,
    pub expires_at: f64,
    pub decided_at: Option<f64>,
    pub sort_at: f64,
    pub approvals: f64,
}

/// Rows one cron step touches at most per run (every 5 minutes): a backlog drains over runs instead of
/// one statement running into D1's limits.
const CRON_BATCH: i64 = 500;

const MAIL_COLUMNS: &str = "id, title, summary, notify_json, context_json, locale, expires_at, registered_by";

/// What the mailer needs of an approval.
#[derive(Debug, Deserialize)]
pub struct MailRow {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub notify_json: String,
    pub context_json: String,
    pub locale: Option<String>,
    pub expires_at: f64,
    pub registered_by: Option<String>,
}

impl Store {
    /// One page of the caller's inbox. `cursor` is (sort_at, id) of the last item already shown.
    pub async fn inbox(
        &self,
        principal_keys: &[String],
        pending: bool,
        now: i64,
        cursor: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<InboxRow>, ApiError> {
        let (c_at, c_id) =
            cursor.unwrap_or(if pending { (i64::MIN / 2, String::new()) } else { (i64::MAX / 2, "~".into()) });
        let mut args: Vec<JsValue> = principal_keys.iter().map(|k| s(k)).collect();
        args.extend([n(if pending { now } else { i64::MAX / 2 }), n(c_at), s(&c_id), n(limit as i64)]);
        self.rows(&ringi_core::inbox::inbox_sql(principal_keys.len(), pending), &args, "inbox").await
    }

    pub async fn mail_row(&self, id: &ApprovalId) -> Result<Option<MailRow>, ApiError> {
        self.first(&format!("SELECT {MAIL_COLUMNS} FROM approvals WHERE id = ?1"), &[s(id.as_str())], "mail_row").await
    }

    /// Records a mail outcome. Retried like the rest: a lost answer may count one attempt twice (one
    /// retry fewer, never one mail more).
    pub async fn set_mail_state(&self, id: &str, state: &str) -> Result<(), ApiError> {
        self.changes(
            "UPDATE approvals SET mail_state = ?1, mail_attempts = mail_attempts + 1 WHERE id = ?2",
            &[s(state), s(id)],
            "set_mail_state",
        )
        .await
        .map(drop)
    }

    // ---------------------------------------------------------------- cron
    /// Open approvals past their expiry close (token dropped): `expired`, or — when a callback attempt
    /// may have been delivered — that attempt's verdict, unconfirmed. Returns how many.
    pub async fn expire_due(&self, now: i64) -> Result<usize, ApiError> {
        let expired = self
            .changes(
                &format!(
                    "UPDATE approvals SET
                       status = CASE WHEN attempt_verdict IS NULL THEN 'expired' ELSE {ATTEMPT_STATUS} END,
                       decision = CASE WHEN attempt_verdict IS NULL THEN decision ELSE {ATTEMPT_STATUS} END,
                       confirmed = CASE WHEN attempt_verdict IS NULL THEN 1 ELSE 0 END,
                       task_token = NULL, claim_id = NULL, claimed_until = NULL, decided_at = expires_at
                     WHERE id IN (SELECT id FROM approvals WHERE expires_at <= ?1
                       AND (status = 'pending' OR (status = 'claimed' AND claimed_until <= ?1)) LIMIT ?2)"
                ),
                &[n(now), n(CRON_BATCH)],
                "expire_due",
            )
            .await?;
        // Open inbox rows are keyed by expiry, so the due ones are exactly those with sort_at <= now.
        self.changes(
            "UPDATE approval_principals SET open = 0
             WHERE rowid IN (SELECT rowid FROM approval_principals WHERE open = 1 AND sort_at <= ?1 LIMIT ?2)",
            &[n(now), n(CRON_BATCH * 4)],
            "close_due",
        )
        .await?;
        Ok(expired)
    }

    /// Claims whose holder died (lease over) go back to pending (their attempt record stays).
    pub async fn release_stale_claims(&self, now: i64) -> Result<usize, ApiError> {
        self.changes(
            "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL
             WHERE id IN (SELECT id FROM approvals WHERE status = 'claimed' AND claimed_until <= ?1 LIMIT ?2)",
            &[n(now), n(CRON_BATCH)],
            "release_stale_claims",
        )
        .await
    }

    /// Deletes closed approvals decided before `before` (the TTL of seed 000), with their audit rows.
    /// Registration counters of minutes before `rates_before` go too.
    pub async fn purge(&self, before: i64, rates_before: i64) -> Result<usize, ApiError> {
        let old = format!(
            "SELECT id FROM approvals WHERE status IN ('approved', 'rejected', 'expired') AND decided_at < ?1 \
             ORDER BY id LIMIT {CRON_BATCH}"
        );
        let results = self
            .batch(
                &[
                    (format!("DELETE FROM decisions WHERE approval_id IN ({old})"), vec![n(before)]),
                    (format!("DELETE FROM approval_principals WHERE approval_id IN ({old})"), vec![n(before)]),
                    (format!("DELETE FROM approvals WHERE id IN ({old})"), vec![n(before)]),
                    (
                        format!(
                            "DELETE FROM registration_rate WHERE rowid IN
                               (SELECT rowid FROM registration_rate WHERE window_start < ?1 LIMIT {})",
                            CRON_BATCH * 4
                        ),
                        vec![n(rates_before)],
                    ),
                ],
                "purge",
            )
            .await?;
        Ok(results.get(2).and_then(|r| r.meta().ok().flatten()).and_then(|m| m.changes).unwrap_or(0))
    }

    /// Open approvals whose request mail failed (bounded attempts), or is still `pending` although it was
    /// registered before `sender_gone_before` (the worker that was to send it after its response died).
    pub async fn mail_retries(
        &self,
        now: i64,
        max_attempts: i64,
        sender_gone_before: i64,
    ) -> Result<Vec<MailRow>, ApiError> {
        self.rows(
            &format!(
                "SELECT {MAIL_COLUMNS} FROM approvals
                 WHERE (mail_state = 'failed' OR (mail_state = 'pending' AND created_at < ?3))
                   AND mail_attempts < ?1 AND status IN ('pending', 'claimed') AND expires_at > ?2 LIMIT 50"
            ),
            &[n(max_attempts), n(now), n(sender_gone_before)],
            "mail_retries",
        )
        .await
    }

    /// Open approvals inside the reminder window that were not reminded yet. (Approvals registered inside
    /// the window count as reminded at insert: their request mail is recent enough.)
    pub async fn reminders_due(&self, now: i64, window_ms: i64) -> Result<Vec<MailRow>, ApiError> {
        self.rows(
            &format!(
                "SELECT {MAIL_COLUMNS} FROM approvals
                 WHERE status IN ('pending', 'claimed') AND reminded_at IS NULL AND expires_at > ?1
                   AND expires_at <= ?1 + ?2 LIMIT 50"
            ),
            &[n(now), n(window_ms)],
            "reminders_due",
        )
        .await
    }

    pub async fn mark_reminded(&self, id: &str, now: i64) -> Result<(), ApiError> {
        self.changes(
            "UPDATE approvals SET reminded_at = ?1 WHERE id = ?2 AND reminded_at IS NULL",
            &[n(now), s(id)],
            "mark_reminded",
        )
        .await
        .map(drop)
    }
}

//! D1 storage adapter. The claim (`claim`) is the single source of exactly-once: one conditional UPDATE
//! whose changed-row count says who won.

use ringi_core::approval::{ApprovalState, ApprovalStatus, Quorum};
use ringi_core::form::FormField;
use ringi_core::principal::Principal;
use ringi_core::register::NewApproval;
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde::Deserialize;
use serde_json::{Map, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Env};

use crate::error::OrInternal;

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
    /// The ID or the task token is taken: nothing was written.
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

impl ApprovalRow {
    pub fn status(&self) -> ApprovalStatus {
        ApprovalStatus::parse(&self.status).unwrap_or(ApprovalStatus::Expired)
    }

    pub fn state(&self) -> ApprovalState {
        ApprovalState {
            status: self.status(),
            expires_at: self.expires_at as i64,
            claimed_until: self.claimed_until.map(|t| t as i64),
        }
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

pub struct Store(D1Database);

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
    pub fn open(env: &Env) -> Result<Self, ApiError> {
        env.d1("DB").internal("D1 binding DB").map(Self)
    }

    fn stmt(&self, sql: &str, args: &[JsValue]) -> Result<D1PreparedStatement, ApiError> {
        self.0.prepare(sql).bind(args).internal("D1 bind")
    }

    /// All rows of a query, deserialized; `what` names it in the log if D1 fails.
    async fn rows<T: for<'de> Deserialize<'de>>(
        &self,
        sql: &str,
        args: &[JsValue],
        what: &str,
    ) -> Result<Vec<T>, ApiError> {
        self.stmt(sql, args)?.all().await.internal(what)?.results().internal(what)
    }

    async fn changes(&self, sql: &str, args: &[JsValue]) -> Result<usize, ApiError> {
        let r = self.stmt(sql, args)?.run().await.internal("D1 write")?;
        Ok(r.meta().internal("D1 meta")?.and_then(|m| m.changes).unwrap_or(0))
    }

    pub async fn get(&self, id: &ApprovalId) -> Result<Option<ApprovalRow>, ApiError> {
        self.stmt("SELECT * FROM approvals WHERE id = ?1", &[s(id.as_str())])?
            .first(None)
            .await
            .internal("D1 read approval")
    }

    /// The approval with its principals and decisions, in one D1 round trip (one batch, one snapshot).
    pub async fn load(&self, id: &ApprovalId) -> Result<Option<Loaded>, ApiError> {
        #[derive(Deserialize)]
        struct PrincipalRow {
            kind: String,
            value: String,
        }
        let arg = [s(id.as_str())];
        let results = self
            .0
            .batch(vec![
                self.stmt("SELECT * FROM approvals WHERE id = ?1", &arg)?,
                self.stmt("SELECT kind, value FROM approval_principals WHERE approval_id = ?1 ORDER BY rowid", &arg)?,
                self.stmt("SELECT * FROM decisions WHERE approval_id = ?1 ORDER BY at, sub", &arg)?,
            ])
            .await
            .internal("D1 load approval")?;
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
        self.rows(
            "SELECT * FROM decisions WHERE approval_id = ?1 ORDER BY at, sub",
            &[s(id.as_str())],
            "D1 read decisions",
        )
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
        let mut batch = vec![self.stmt(
            "INSERT INTO registration_rate (credential, window_start, count) VALUES (?1, ?2, 1)
             ON CONFLICT (credential, window_start) DO UPDATE SET count = count + 1 RETURNING count",
            &[s(registrant.label), n(window_start)],
        )?];
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
        batch.push(self.stmt(
            &format!(
                "INSERT INTO approvals (id, task_token, token_sha256, status, title, summary, details_json, form_json,
                   quorum, approver_count, context_json, notify_json, locale, created_at, expires_at, reminded_at,
                   mail_state, request_sha256, registered_by)
                 SELECT ?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18
                 WHERE {rate_sql}"
            ),
            &args,
        )?);
        for p in &a.approvers {
            let (rate_sql, args) =
                within_rate(vec![s(id.as_str()), s(p.kind()), s(p.value()), s(&pkey(p)), n(a.expires_at)]);
            batch.push(self.stmt(
                &format!(
                    "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at)
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE {rate_sql}"
                ),
                &args,
            )?);
        }
        let results = match self.0.batch(batch).await {
            Ok(results) => results,
            Err(e) if e.to_string().contains("UNIQUE") || e.to_string().contains("constraint") => {
                return Ok(Inserted::Exists)
            }
            Err(e) => return Err(e).internal("D1 insert approval"),
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
            "D1 read registered",
        )
        .await
    }

    /// Takes the exclusive right to call Step Functions until `until`. Exactly one concurrent caller wins.
    pub async fn claim(&self, id: &ApprovalId, claim_id: &str, now: i64, until: i64) -> Result<bool, ApiError> {
        let changed = self
            .changes(
                "UPDATE approvals SET status = 'claimed', claim_id = ?1, claimed_until = ?2
                 WHERE id = ?3 AND expires_at > ?4 AND task_token IS NOT NULL
                   AND (status = 'pending' OR (status = 'claimed' AND claimed_until <= ?4))",
                &[s(claim_id), n(until), s(id.as_str()), n(now)],
            )
            .await?;
        Ok(changed == 1)
    }

    /// The callback was delivered: final status, token dropped, the decision kept for the audit trail.
    pub async fn finish(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        status: ApprovalStatus,
        vote: &Vote<'_>,
    ) -> Result<(), ApiError> {
        let update = self.stmt(
            "UPDATE approvals SET status = ?1, decision = ?1, decided_at = ?2, task_token = NULL, claim_id = NULL,
               claimed_until = NULL WHERE id = ?3 AND claim_id = ?4",
            &[s(status.as_str()), n(vote.at), s(id.as_str()), s(claim_id)],
        )?;
        let insert = self.vote_stmt(id, vote, "INSERT OR IGNORE")?;
        let close = self.close_stmt(id, vote.at)?;
        self.0.batch(vec![update, insert, close]).await.internal("D1 finish decision").map(drop)
    }

    /// Moves the approval from its approvers' pending inboxes to their decided ones.
    fn close_stmt(&self, id: &ApprovalId, at: i64) -> Result<D1PreparedStatement, ApiError> {
        self.stmt(
            "UPDATE approval_principals SET open = 0, sort_at = ?1 WHERE approval_id = ?2",
            &[n(at), s(id.as_str())],
        )
    }

    /// Step Functions says the task is closed: the approval is expired and its token useless.
    pub async fn expire(&self, id: &ApprovalId, claim_id: &str, now: i64) -> Result<(), ApiError> {
        let update = self.stmt(
            "UPDATE approvals SET status = 'expired', task_token = NULL, claim_id = NULL, claimed_until = NULL,
               decided_at = ?1 WHERE id = ?2 AND claim_id = ?3",
            &[n(now), s(id.as_str()), s(claim_id)],
        )?;
        self.0.batch(vec![update, self.close_stmt(id, now)?]).await.internal("D1 expire").map(drop)
    }

    /// The callback did not go through: make the approval decidable again.
    pub async fn release(&self, id: &ApprovalId, claim_id: &str) -> Result<(), ApiError> {
        self.changes(
            "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL
             WHERE id = ?1 AND claim_id = ?2 AND status = 'claimed'",
            &[s(id.as_str()), s(claim_id)],
        )
        .await
        .map(drop)
    }

    /// Records one approver's vote; `Ok(false)` if that approver had already voted.
    pub async fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> Result<bool, ApiError> {
        let r = self.vote_stmt(id, vote, "INSERT OR IGNORE")?.run().await.internal("D1 record vote")?;
        Ok(r.meta().internal("D1 meta")?.and_then(|m| m.changes).unwrap_or(0) == 1)
    }

    fn vote_stmt(&self, id: &ApprovalId, v: &Vote<'_>, verb: &str) -> Result<D1PreparedStatement, ApiError> {
        self.stmt(
            &format!(
                "{verb} INTO decisions (approval_id, sub, principal, email, username, decision, comment, feedback_json, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ),
            &[
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
        self.rows(&ringi_core::inbox::inbox_sql(principal_keys.len(), pending), &args, "D1 inbox").await
    }

    pub async fn mail_row(&self, id: &ApprovalId) -> Result<Option<MailRow>, ApiError> {
        self.stmt(&format!("SELECT {MAIL_COLUMNS} FROM approvals WHERE id = ?1"), &[s(id.as_str())])?
            .first(None)
            .await
            .internal("D1 mail row")
    }

    pub async fn set_mail_state(&self, id: &str, state: &str) -> Result<(), ApiError> {
        self.changes(
            "UPDATE approvals SET mail_state = ?1, mail_attempts = mail_attempts + 1 WHERE id = ?2",
            &[s(state), s(id)],
        )
        .await
        .map(drop)
    }

    // ---------------------------------------------------------------- cron
    /// Pending approvals past their expiry become `expired` (token dropped). Returns how many.
    pub async fn expire_due(&self, now: i64) -> Result<usize, ApiError> {
        let expired = self
            .changes(
                "UPDATE approvals SET status = 'expired', task_token = NULL, claim_id = NULL, claimed_until = NULL,
                   decided_at = expires_at
                 WHERE id IN (SELECT id FROM approvals WHERE expires_at <= ?1
                   AND (status = 'pending' OR (status = 'claimed' AND claimed_until <= ?1)) LIMIT ?2)",
                &[n(now), n(CRON_BATCH)],
            )
            .await?;
        // Open inbox rows are keyed by expiry, so the due ones are exactly those with sort_at <= now.
        self.changes(
            "UPDATE approval_principals SET open = 0
             WHERE rowid IN (SELECT rowid FROM approval_principals WHERE open = 1 AND sort_at <= ?1 LIMIT ?2)",
            &[n(now), n(CRON_BATCH * 4)],
        )
        .await?;
        Ok(expired)
    }

    /// Claims whose holder died (lease over) go back to pending.
    pub async fn release_stale_claims(&self, now: i64) -> Result<usize, ApiError> {
        self.changes(
            "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL
             WHERE id IN (SELECT id FROM approvals WHERE status = 'claimed' AND claimed_until <= ?1 LIMIT ?2)",
            &[n(now), n(CRON_BATCH)],
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
        let batch = vec![
            self.stmt(&format!("DELETE FROM decisions WHERE approval_id IN ({old})"), &[n(before)])?,
            self.stmt(&format!("DELETE FROM approval_principals WHERE approval_id IN ({old})"), &[n(before)])?,
            self.stmt(&format!("DELETE FROM approvals WHERE id IN ({old})"), &[n(before)])?,
            self.stmt(
                &format!(
                    "DELETE FROM registration_rate WHERE rowid IN
                       (SELECT rowid FROM registration_rate WHERE window_start < ?1 LIMIT {})",
                    CRON_BATCH * 4
                ),
                &[n(rates_before)],
            )?,
        ];
        let results = self.0.batch(batch).await.internal("D1 purge")?;
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
            "D1 mail retries",
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
            "D1 reminders",
        )
        .await
    }

    pub async fn mark_reminded(&self, id: &str, now: i64) -> Result<(), ApiError> {
        self.changes("UPDATE approvals SET reminded_at = ?1 WHERE id = ?2", &[n(now), s(id)]).await.map(drop)
    }
}

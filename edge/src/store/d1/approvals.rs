//! Registering approvals and reading them back.

use ringi_core::adapters::mail::MailState;
use ringi_core::api::register::NewApproval;
use ringi_core::base::principal::Principal;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::sql::registration;
use ringi_core::{ApiError, ApprovalId};
use serde::Deserialize;
use serde_json::{json, Value};
use wasm_bindgen::JsValue;

use super::events::{event_once_stmt, Once};
use super::{arg, changed, n, opt, s, D1Store, Stmt};
use crate::error::OrInternal;
use crate::store::port::decision::{Inserted, Registered, Registrant};
use crate::store::port::rows::{
    self, ApprovalRow, DecisionRow, Loaded, PrincipalRow, APPROVAL_COLUMNS, DECISION_COLUMNS, PRINCIPAL_COLUMNS,
};

#[derive(Deserialize)]
struct Count {
    count: f64,
}

/// The statements of one registration. Each insert carries the rate condition (its parameters follow the
/// statement's own), so nothing is written once the credential is over its rate.
struct InsertBatch<'a> {
    id: &'a ApprovalId,
    a: &'a NewApproval,
    registrant: &'a Registrant<'a>,
    window_start: i64,
}

impl InsertBatch<'_> {
    fn within_rate(&self, sql: &str, mut args: Vec<JsValue>) -> Stmt {
        let (label, per_minute) = (self.registrant.label, self.registrant.rate_per_minute);
        let rate = registration::within_rate(args.len() + 1, label, self.window_start, per_minute);
        args.extend(rate.args.iter().map(arg));
        Stmt::new(sql.replace("{rate}", &rate.sql), args)
    }

    fn count(&self) -> Stmt {
        registration::count(self.registrant.label, self.window_start).into()
    }

    /// The approval, unless its ID or task token is taken (then no row changes).
    fn approval(&self, now: i64, reminded_at: JsValue) -> Result<Stmt, ApiError> {
        let a = self.a;
        let args = vec![
            s(self.id.as_str()),
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
            opt(a.locale.map(|l| l.as_str())),
            n(now),
            n(a.expires_at),
            reminded_at,
            s(MailState::initial(a.notify.len()).as_str()),
            s(&a.request_sha256),
            s(self.registrant.label),
            s(&Value::from(a.requested_by.iter().map(Principal::key).collect::<Vec<_>>()).to_string()),
            n(i64::from(a.allow_self_approval)),
            s(a.on_expiry.as_str()),
            // The chat channels: all of them due, delivered after the response like the mail.
            s(&serde_json::to_string(&a.channels).internal("chat json")?),
            s(MailState::initial(a.channels.len()).as_str()),
            a.task_expires_at.map_or(JsValue::NULL, n),
            opt(a.target.as_ref().map(|t| t.account.as_str())),
            opt(a.target.as_ref().map(|t| t.region.as_str())),
            match &a.require_sign_in {
                Some(r) => s(&serde_json::to_string(r).internal("requireSignIn json")?),
                None => JsValue::NULL,
            },
        ];
        Ok(self.within_rate(
            "INSERT INTO approvals (id, task_token, token_sha256, status, title, summary, details_json, form_json,
               quorum, approver_count, context_json, notify_json, locale, created_at, expires_at, reminded_at,
               mail_state, request_sha256, registered_by, requested_by_json, allow_self_approval, on_expiry,
               chat_json, chat_due_json, chat_state, task_expires_at, aws_account, aws_region, require_sign_in_json)
             SELECT ?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
               ?20, ?21, ?22, ?22, ?23, ?24, ?25, ?26, ?27
             WHERE {rate} ON CONFLICT DO NOTHING",
            args,
        ))
    }

    /// A registration that wrote nothing does not count against the rate (as if it had not been made).
    /// Runs right after [`Self::approval`], whose changed rows `changes()` reports.
    fn uncount_if_nothing_written(&self) -> Stmt {
        let (label, per_minute) = (self.registrant.label, self.registrant.rate_per_minute);
        registration::uncount_if_nothing_written(label, self.window_start, per_minute).into()
    }

    /// The approver rows, only for the approval of this very request (a taken ID keeps its own approvers).
    fn principals(&self) -> Vec<Stmt> {
        let (a, id) = (self.a, self.id.as_str());
        a.approvers
            .iter()
            .map(|p| {
                let args = vec![
                    s(id),
                    s(p.kind()),
                    s(p.value()),
                    s(&p.key()),
                    n(a.expires_at),
                    s(&a.token.fingerprint()),
                    s(&a.request_sha256),
                ];
                self.within_rate(
                    "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at)
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE {rate} AND EXISTS (SELECT 1 FROM approvals
                       WHERE id = ?1 AND token_sha256 = ?6 AND request_sha256 = ?7)
                     ON CONFLICT DO NOTHING",
                    args,
                )
            })
            .collect()
    }
}

impl InsertBatch<'_> {
    /// The `registered` event of this very request's approval (once: a redelivery writes none).
    fn registered_event(&self, now: i64) -> Stmt {
        let a = self.a;
        let mut detail =
            json!({"approvers": a.approvers.len(), "quorum": a.quorum.as_string(), "notified": a.notify.len()});
        if !a.channels.is_empty() {
            detail["channels"] = a.channels.len().into();
        }
        event_once_stmt(
            self.id,
            now,
            EventKind::Registered,
            &Actor::Registrant { id: self.registrant.label.to_owned() },
            detail.as_object().expect("an object"),
            Once {
                key: "registered",
                when: "EXISTS (SELECT 1 FROM approvals WHERE id = ?1 AND token_sha256 = ?8 AND request_sha256 = ?9)",
                args: vec![s(&a.token.fingerprint()), s(&a.request_sha256)],
            },
        )
    }
}

/// The statements of [`D1Store::load`]: the approval, its principals, its votes.
pub(super) fn load_stmts(id: &ApprovalId) -> Vec<Stmt> {
    let arg = || vec![s(id.as_str())];
    vec![
        Stmt::new(format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1"), arg()),
        Stmt::new(
            format!("SELECT {PRINCIPAL_COLUMNS} FROM approval_principals WHERE approval_id = ?1 ORDER BY rowid"),
            arg(),
        ),
        decisions_stmt(id),
    ]
}

pub(super) fn decisions_stmt(id: &ApprovalId) -> Stmt {
    Stmt::new(
        format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE approval_id = ?1 ORDER BY at, sub"),
        vec![s(id.as_str())],
    )
}

/// Reads the results of [`load_stmts`] (the first three of a batch).
pub(super) fn read_loaded(id: &ApprovalId, results: &[worker::D1Result]) -> Result<Option<Loaded>, ApiError> {
    let [approval, principals, decisions, ..] = results else {
        return Err(ApiError::Internal);
    };
    let Some(row) = approval.results::<ApprovalRow>().internal("D1 approval row")?.into_iter().next() else {
        return Ok(None);
    };
    let principals = principals.results::<PrincipalRow>().internal("D1 principal rows")?;
    let seats = principals.iter().map(PrincipalRow::typed).collect::<Result<Vec<_>, _>>();
    let seats = seats.map_err(rows::corrupt(id.as_str()))?;
    Ok(Some(Loaded {
        principals: ringi_core::domain::delegation::listed(&seats),
        seats,
        votes: rows::votes(id, decisions.results::<DecisionRow>().internal("D1 decision rows")?)?,
        approval: row.typed()?,
    }))
}

impl D1Store {
    pub async fn get(&self, id: &ApprovalId) -> Result<Option<rows::Approval>, ApiError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1");
        let row: Option<ApprovalRow> = self.first(Stmt::new(sql, vec![s(id.as_str())]), "get").await?;
        row.map(ApprovalRow::typed).transpose()
    }

    /// The approval with its principals and votes, in one D1 round trip (one batch, one snapshot).
    pub async fn load(&self, id: &ApprovalId) -> Result<Option<Loaded>, ApiError> {
        let results = self.batch(&load_stmts(id), "load").await?;
        read_loaded(id, &results)
    }

    /// Counts the registration against `credential`'s minute and, unless that count is over `rate_per_minute`,
    /// inserts the approval and its principals — one transaction, one round trip. A taken ID or task token
    /// changes no row (`ON CONFLICT DO NOTHING`): that is [`Inserted::Exists`].
    pub async fn insert(
        &self,
        id: &ApprovalId,
        a: &NewApproval,
        registrant: &Registrant<'_>,
        now: i64,
        remind_window_ms: i64,
    ) -> Result<Inserted, ApiError> {
        let window = ringi_core::domain::rate::RateWindow::at(now);
        let window_start = window.start;
        let reminded_at =
            ringi_core::domain::schedule::reminded_at_registration(&a.schedule, now, a.expires_at, remind_window_ms)
                .map_or(JsValue::NULL, n);
        let batch = InsertBatch { id, a, registrant, window_start };
        let mut stmts = vec![batch.count(), batch.approval(now, reminded_at)?, batch.uncount_if_nothing_written()];
        stmts.extend(batch.principals());
        stmts.push(batch.registered_event(now));
        stmts.extend(super::schedule::insert_stmts(id, &a.schedule, &a.token.fingerprint(), &a.request_sha256));
        // Out-of-office routing in the same round trip (registration stays one D1 call).
        stmts.extend(super::delegation::routing_stmts(id, now, &a.token.fingerprint(), &a.request_sha256));
        stmts.push(super::delegation::routed_stmt(id));
        let results = self.batch(&stmts, "insert").await?;
        let count = results
            .first()
            .and_then(|r| r.results::<Count>().ok())
            .and_then(|rows| rows.first().map(|c| c.count as i64))
            .ok_or(ApiError::Internal)?;
        if count > i64::from(registrant.rate_per_minute) {
            return Ok(Inserted::RateLimited { retry_after: window.retry_after_secs });
        }
        if changed(results.get(1)) != 1 {
            return Ok(Inserted::Exists);
        }
        let routed = results.last().map(super::delegation::read_routed).transpose()?.unwrap_or_default();
        Ok(Inserted::Created { routed })
    }

    /// The approvals an insert collided with: the same ID, or the same task token.
    pub async fn registered(&self, id: &ApprovalId, token_sha256: &str) -> Result<Vec<Registered>, ApiError> {
        let sql =
            "SELECT id, token_sha256, request_sha256, expires_at FROM approvals WHERE id = ?1 OR token_sha256 = ?2";
        self.rows(Stmt::new(sql, vec![s(id.as_str()), s(token_sha256)]), "registered").await
    }
}

//! Web Push on D1 (`ringi_core::sql::push`): the devices' subscriptions and the outbox.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::adapters::webpush::{endpoint_hash, PushTargets, Subscription, MAX_DEVICES};
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::sql::push::{self, NewDevice};
use ringi_core::{ApiError, ApprovalId};
use serde::Deserialize;

use super::events::event_stmt;
use super::{changed, D1Store, Stmt};
use crate::error::OrInternal;
use crate::store::port::push::{PushDevice, PushOwner, PushRetry, PushTried};
use crate::store::port::rows::{mail_jobs, MailRow, MAIL_COLUMNS};

#[derive(Deserialize)]
struct RetryRow {
    approval_id: String,
    kind: String,
    #[serde(flatten)]
    device: PushDevice,
}

impl D1Store {
    pub async fn subscribe(&self, who: &PushOwner<'_>, s: &Subscription, lang: &str, now: i64) -> Result<(), ApiError> {
        let (p256dh, auth) = (URL_SAFE_NO_PAD.encode(&s.p256dh), URL_SAFE_NO_PAD.encode(&s.auth));
        let device = endpoint_hash(&s.endpoint);
        let stmt = push::subscribe(&NewDevice {
            device: &device,
            endpoint: &s.endpoint,
            sub: who.sub,
            email: who.email,
            groups: who.groups,
            p256dh: &p256dh,
            auth: &auth,
            lang,
            now,
        });
        match self.changes(stmt.into(), "push_subscribe").await? {
            0 => Err(ApiError::TooManyDevices(MAX_DEVICES)),
            _ => Ok(()),
        }
    }

    pub async fn unsubscribe(&self, sub: &str, endpoint: &str) -> Result<bool, ApiError> {
        let stmts: Vec<Stmt> = push::unsubscribe(sub, &endpoint_hash(endpoint)).into_iter().map(Into::into).collect();
        let results = self.batch(&stmts, "push_unsubscribe").await?;
        Ok(changed(results.get(1)) > 0)
    }

    pub async fn push_due(
        &self,
        id: &ApprovalId,
        kind: &str,
        targets: &PushTargets,
        now: i64,
    ) -> Result<Vec<PushDevice>, ApiError> {
        let stmts: Vec<Stmt> = push::due(id.as_str(), kind, targets, now).into_iter().map(Into::into).collect();
        let results = self.batch(&stmts, "push_due").await?;
        results.get(1).ok_or(ApiError::Internal)?.results::<PushDevice>().internal("D1 push devices")
    }

    pub async fn push_done(&self, id: &ApprovalId, kind: &str, tried: &[PushTried], now: i64) -> Result<(), ApiError> {
        let mut stmts: Vec<Stmt> = Vec::new();
        for t in tried {
            stmts.extend(push::done(id.as_str(), kind, &t.device, t.outcome, now).into_iter().map(Stmt::from));
            stmts.push(event_stmt(id, now, EventKind::Pushed, &Actor::System, &t.detail(kind)));
        }
        if stmts.is_empty() {
            return Ok(());
        }
        self.batch(&stmts, "push_done").await.map(drop).map_err(Into::into)
    }

    pub async fn push_retries(
        &self,
        now: i64,
        max_attempts: i64,
        sender_gone_before: i64,
    ) -> Result<Vec<PushRetry>, ApiError> {
        let [cleanup, select] = push::retries(now, max_attempts, sender_gone_before);
        let jobs = Stmt::new(
            format!("SELECT {MAIL_COLUMNS} FROM approvals WHERE id IN (SELECT approval_id FROM ({}))", select.sql),
            select.args.iter().map(super::arg).collect(),
        );
        let results = self.batch(&[cleanup.into(), select.into(), jobs], "push_retries").await?;
        let rows = results.get(1).ok_or(ApiError::Internal)?.results::<RetryRow>().internal("D1 push retries")?;
        let jobs = mail_jobs(results.get(2).ok_or(ApiError::Internal)?.results::<MailRow>().internal("D1 mail rows")?);
        let mut out: Vec<PushRetry> = Vec::new();
        for r in rows {
            let Some(job) = jobs.iter().find(|j| j.id.as_str() == r.approval_id) else { continue };
            match out.iter_mut().find(|p| p.job.id.as_str() == r.approval_id && p.kind == r.kind) {
                Some(p) => p.devices.push(r.device),
                None => out.push(PushRetry { job: job.clone(), kind: r.kind, devices: vec![r.device] }),
            }
        }
        Ok(out)
    }
}

//! `GET /api/v1/approvals/{id}`: one approval as an approver sees it. Unknown and not-yours are the same 404.

use ringi_core::approval::ApprovalStatus;
use ringi_core::principal::Identity;
use ringi_core::time::format_rfc3339;
use ringi_core::wire::{ApprovalView, AuditEntry, Progress};
use ringi_core::{ApiError, ApprovalId};
use worker::{Request, Response};

use super::Ctx;
use crate::auth::authenticate;
use crate::platform::now_ms;
use crate::store::{ApprovalRow, DecisionRow, Loaded, Store};

pub async fn get(req: &Request, ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    let who = authenticate(req, &ctx.cfg, &ctx.cfg.user_rules()).await?;
    let id = ApprovalId::parse(id).map_err(|_| ApiError::NotFound)?;
    let store = ctx.store()?;
    let Loaded { row, principals, decisions } = load_for(&store, &id, &who).await?;
    super::json(200, &view(&row, principals, &decisions, &who, now_ms())?)
}

/// The approval, if it exists *and* the caller is one of its approvers (else the same 404).
pub async fn load_for(store: &Store, id: &ApprovalId, who: &Identity) -> Result<Loaded, ApiError> {
    let loaded = store.load(id).await?.ok_or(ApiError::NotFound)?;
    if !who.is_approver(&loaded.principals) {
        return Err(ApiError::NotFound);
    }
    Ok(loaded)
}

pub fn audit_entry(d: &DecisionRow) -> AuditEntry {
    AuditEntry {
        decision: d.decision.clone(),
        by: d.email.clone().or_else(|| d.username.clone()).unwrap_or_else(|| d.principal.clone()),
        comment: d.comment.clone(),
        feedback: d.feedback(),
        at: format_rfc3339(d.at as i64),
    }
}

pub fn progress(row: &ApprovalRow, decisions: &[DecisionRow]) -> Progress {
    Progress {
        approvals: decisions.iter().filter(|d| d.decision == "approve").count() as u32,
        required: row.quorum().required(row.approver_count as usize),
    }
}

fn view(
    row: &ApprovalRow,
    approvers: Vec<ringi_core::principal::Principal>,
    decisions: &[DecisionRow],
    who: &Identity,
    now: i64,
) -> Result<ApprovalView, ApiError> {
    let (stored, verdict) = row.status()?;
    let status: ApprovalStatus = stored.effective(row.expires_at as i64, now);
    let unconfirmed = status == ApprovalStatus::DecidedUnconfirmed;
    Ok(ApprovalView {
        id: row.id.clone(),
        status,
        verdict,
        attempted_by: if unconfirmed { row.attempt_by.clone().or_else(|| row.attempt_sub.clone()) } else { None },
        title: row.title.clone(),
        summary: row.summary.clone(),
        details: row.details(),
        form: row.form(),
        approvers,
        quorum: row.quorum(),
        progress: progress(row, decisions),
        created_at: format_rfc3339(row.created_at as i64),
        expires_at: format_rfc3339(row.expires_at as i64),
        decided_at: row.decided_at.map(|t| format_rfc3339(t as i64)),
        context: row.context(),
        registered_by: row.registered_by.clone(),
        locale: row.locale.clone(),
        my_decision: decisions.iter().find(|d| d.sub == who.sub).map(audit_entry),
        decisions: decisions.iter().map(audit_entry).collect(),
    })
}

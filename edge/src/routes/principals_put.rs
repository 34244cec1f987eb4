//! `PUT /api/v1/approvals/{id}/principals`: an operator (a member of `ADMIN_GROUP`) replaces a pending
//! approval's listed principals, with a reason (`ringi_core::domain::rules::reassign` decides; the store commits under
//! its guards). Audited as a `reassigned` event (who, why, what changed); added `{email}` principals are
//! mailed. Anyone else gets `403 forbidden` whatever the ID (the answer says nothing about the approval).

use ringi_core::adapters::mail::Handover;
use ringi_core::base::principal::Identity;
use ringi_core::domain::delegation::ReassignRequest;
use ringi_core::domain::rules;
use ringi_core::domain::vote::progress;
use ringi_core::domain::vote::Progress;
use ringi_core::{ApiError, ApprovalId};
use serde::Serialize;
use worker::{Request, Response};

use super::http::Ctx;
use crate::mailer::{emails, send_handover_of};
use crate::platform::now_ms;
use crate::store::{ApprovalStore, GovernanceStore, Store};

/// The answer: the approval's listed principals now, and its progress against them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Reassigned {
    id: String,
    approvers: Vec<ringi_core::base::principal::Principal>,
    progress: Progress,
}

pub async fn put(
    req: &mut Request,
    ctx: &Ctx,
    store: &Store,
    who: &Identity,
    id: &ApprovalId,
) -> Result<Response, ApiError> {
    if !ctx.cfg.is_admin(who) {
        return Err(ApiError::Forbidden("only operators (members of ADMIN_GROUP) reassign approvers".into()));
    }
    let body = super::http::body_bytes(req).await?;
    let request = ReassignRequest::parse(&body)?;
    let loaded = store.load(id).await?.ok_or(ApiError::NotFound)?;
    let now = now_ms();
    let change = rules::reassign(&loaded.snapshot(), who, &request.approvers, &ctx.cfg.mail_allowed_domains, now)?;
    let actor = super::http::actor(who);
    if !store.reassign(&loaded, &change, &request.approvers, &actor, &request.reason, now).await? {
        // Decided, expired or approved through a removed slot between the load and the write.
        return Err(ApiError::changed_meanwhile());
    }
    let (cfg, env, probe, mail_id) = (ctx.cfg.clone(), ctx.env.clone(), ctx.probe.clone(), id.clone());
    let (to, reason, by) =
        (emails(&change.added), request.reason.clone(), actor.display().unwrap_or_default().to_owned());
    let added = change.added.clone();
    ctx.after_response(async move {
        let h = Handover::Reassigned { by: &by, reason: &reason };
        send_handover_of(&cfg, &env, probe, &mail_id, &to, h, &added).await
    });
    let progress = progress(loaded.approval.quorum, request.approvers.len(), &loaded.votes);
    super::http::json(200, &Reassigned { id: id.to_string(), approvers: request.approvers, progress })
}

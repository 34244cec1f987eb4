//! `POST /api/v1/approvals/{id}/delegation`: an approver hands their slot on one approval to another principal,
//! with a note (`ringi_core::domain::rules::delegate` decides; the store commits under its guards). The delegate is
//! mailed (an `{email}` delegate) and finds it in their inbox; the hand-over is a `delegated` event. Not an
//! approver: the same 404 as for no approval.

use ringi_core::adapters::mail::Handover;
use ringi_core::base::principal::Identity;
use ringi_core::domain::delegation::{DelegationRequest, DelegationView};
use ringi_core::domain::rules;
use ringi_core::{ApiError, ApprovalId};
use worker::{Request, Response};

use super::http::Ctx;
use crate::mailer::{emails, send_handover_of};
use crate::platform::now_ms;
use crate::store::{GovernanceStore, Store};

pub async fn post(
    req: &mut Request,
    ctx: &Ctx,
    store: &Store,
    who: &Identity,
    id: &ApprovalId,
) -> Result<Response, ApiError> {
    let body = super::http::body_bytes(req).await?;
    let loaded = super::approval_get::load_for(store, id, who).await?;
    // Checked after the approver check: a non-approver learns nothing from a 400.
    let request = DelegationRequest::parse(&body)?;
    let now = now_ms();
    let handover = rules::delegate(&loaded.snapshot(), who, &request.to, &ctx.cfg.mail_allowed_domains, now)?;
    let actor = super::http::actor(who);
    if !store.delegate(&loaded, &handover, &actor, request.note.as_deref(), now).await? {
        // The approval changed between the load and the write (decided, voted, the slot moved).
        return Err(ApiError::changed_meanwhile());
    }
    let (cfg, env, probe, mail_id) = (ctx.cfg.clone(), ctx.env.clone(), ctx.probe.clone(), id.clone());
    let (to, note, by) = (emails([&handover.to]), request.note.clone(), actor.display().unwrap_or_default().to_owned());
    let delegate = [handover.to.clone()];
    ctx.after_response(async move {
        let h = Handover::Delegated { by: &by, note: note.as_deref() };
        send_handover_of(&cfg, &env, probe, &mail_id, &to, h, &delegate).await
    });
    super::http::json(
        200,
        &DelegationView {
            slot: handover.slot,
            to: handover.to,
            by: actor.display().map(str::to_owned),
            note: request.note,
            depth: handover.depth,
            routed: false,
        },
    )
}

//! Approval emails through SES v2 SendEmail (SigV4, service `ses`). A failure never loses the approval:
//! it is stored first, mailed after the response, the outcome is recorded, and the cron retries failed
//! mails and mails whose sender vanished (`mail_state` still `pending` after [`crate::cron`]'s grace).

use std::rc::Rc;

use futures_util::future::{join, join_all};
use ringi_core::adapters::mail::{
    compose, compose_handover, ses_send_email_body, Handover, Mail, MailInput, MailKind, MailState,
};
use ringi_core::base::principal::{joined, Principal};
use ringi_core::config::Config;
use ringi_core::{ApiError, ApprovalId};
use serde_json::json;
use worker::Env;

use crate::aws::{signed_post, AwsPost, AwsService, MAIL_TIMEOUT};
use crate::platform::log;
use crate::probe::Probe;
use crate::store::{MailJob, ScheduleStore, Store};

/// Sends one message per recipient of `to` (those of the approval's `notify` who have not voted yet, the
/// escalation's addresses …), with an escalation's note. `row.notify` stays what the registration was allowed:
/// the send-time check compares with it. `Ok(true)`: every recipient accepted; `Ok(false)`: mail is off or
/// nobody is mailed.
pub async fn send_to(
    cfg: &Config,
    probe: &Probe,
    row: &MailJob,
    to: &[String],
    kind: MailKind,
    note: Option<&str>,
) -> Result<bool, String> {
    outcome(send_counted(cfg, probe, row, to, kind, note).await)
}

/// `Ok(true)`: every recipient accepted; `Ok(false)`: mail is off or nobody is mailed.
fn outcome(report: Option<MailReport>) -> Result<bool, String> {
    match report {
        None => Ok(false),
        Some(r) if r.failed == 0 => Ok(true),
        Some(r) => Err(format!("{} of {} recipients failed", r.failed, r.recipients)),
    }
}

/// What SES said to one mail run.
#[derive(Debug, Clone, Copy)]
pub struct MailReport {
    pub recipients: usize,
    pub failed: usize,
}

impl MailReport {
    /// The `mailed` event's detail.
    pub fn detail(&self, kind: MailKind) -> serde_json::Map<String, serde_json::Value> {
        let kind = format!("{kind:?}").to_lowercase();
        let d = json!({"mail": kind, "recipients": self.recipients, "accepted": self.recipients - self.failed, "failed": self.failed});
        d.as_object().cloned().unwrap_or_default()
    }
}

/// [`send_to`], counted; `None`: mail is off or nobody is mailed.
async fn send_counted(
    cfg: &Config,
    probe: &Probe,
    row: &MailJob,
    to: &[String],
    kind: MailKind,
    note: Option<&str>,
) -> Option<MailReport> {
    let url = cfg.approval_url(row.id.as_str());
    let requesters = joined(&row.requested_by);
    let mail = compose(&MailInput { note, ..mail_input(row, kind, &url, &requesters) });
    deliver(cfg, probe, row, to, &mail, &format!("{kind:?}")).await
}

fn mail_input<'a>(row: &'a MailJob, kind: MailKind, url: &'a str, requesters: &'a str) -> MailInput<'a> {
    MailInput {
        kind,
        title: &row.title,
        summary: &row.summary,
        url,
        // Who asked: the context's words, else the requesters.
        requested_by: row.context.requested_by_or(requesters),
        on_expiry: row.on_expiry.verdict(),
        registered_by: row.registered_by.as_deref(),
        expires_at_ms: row.expires_at,
        locale: row.locale,
        note: None,
    }
}

/// The request mail for the people an approval was handed to (a delegate, an out-of-office stand-in, a
/// principal an operator added): once, after the response, not retried by the cron (they see it in their
/// inbox either way).
pub async fn send_handover(
    cfg: &Config,
    probe: &Probe,
    row: &MailJob,
    to: &[String],
    handover: &Handover<'_>,
) -> Result<bool, String> {
    let url = cfg.approval_url(row.id.as_str());
    let requesters = joined(&row.requested_by);
    let mail = compose_handover(&mail_input(row, MailKind::Request, &url, &requesters), handover);
    outcome(deliver(cfg, probe, row, to, &mail, "Handover").await)
}

/// [`send_handover`] after a response, logged (nobody is left to answer); `principals`: the devices of those
/// handed the approval get a push (`crate::push`).
pub async fn send_handover_of(
    cfg: &Config,
    env: &Env,
    probe: Rc<Probe>,
    id: &ApprovalId,
    to: &[String],
    h: Handover<'_>,
    principals: &[Principal],
) {
    let outcome = async {
        let store = Store::open(env, probe.clone())?;
        if let Some(row) = store.mail_job(id).await? {
            let _ = send_handover(cfg, store.probe(), &row, to, &h).await;
            if !principals.is_empty() {
                let _ = crate::push::send(cfg, &store, &row, "handover", principals).await;
            }
        }
        Ok::<_, ApiError>(())
    };
    if let Err(e) = outcome.await {
        log("error", "mail_not_sent", json!({"approvalId": id.as_str(), "error": e.to_string()}));
    }
}

/// The emails among principals (a `{sub}` or `{group}` stand-in has none: it finds the approval in its inbox).
pub fn emails<'a>(ps: impl IntoIterator<Item = &'a Principal>) -> Vec<String> {
    ps.into_iter()
        .filter_map(|p| match p {
            Principal::Email(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// One message per recipient, in parallel; `None`: mail is off or nobody is to be mailed.
async fn deliver(
    cfg: &Config,
    probe: &Probe,
    row: &MailJob,
    recipients: &[String],
    mail: &Mail,
    kind: &str,
) -> Option<MailReport> {
    let from = cfg.mail_from.as_deref()?;
    // The API refuses recipients outside the rule; this catches any stored before it applied, or come another way.
    let (recipients, refused) =
        ringi_core::domain::recipients::mailable(recipients, &row.notify, &cfg.mail_allowed_domains);
    if refused > 0 {
        log(
            "warn",
            "mail_recipients_refused",
            json!({"approvalId": row.id.as_str(), "kind": kind, "refused": refused}),
        );
    }
    if recipients.is_empty() {
        return None;
    }
    let endpoint = format!("{}/v2/email/outbound-emails", cfg.ses_endpoint);
    // Recipients in parallel: the whole message fits in one MAIL_TIMEOUT, inside the time a worker may
    // run after its response.
    let sends = recipients.iter().map(|to| {
        let body = ses_send_email_body(from, to, mail);
        let endpoint = &endpoint;
        async move {
            let headers = [("content-type", "application/json")];
            signed_post(
                cfg,
                probe,
                &AwsPost {
                    url: endpoint,
                    service: AwsService::Ses,
                    headers: &headers,
                    body: &body,
                    timeout: MAIL_TIMEOUT,
                },
            )
            .await
        }
    });
    let mut failed = 0;
    for outcome in join_all(sends).await {
        let status = match &outcome {
            Ok((s, _)) => *s,
            Err(_) => 0,
        };
        if !(200..300).contains(&status) {
            failed += 1;
            let detail = match &outcome {
                Ok((_, text)) => {
                    ringi_core::adapters::sfn::error_code(text).unwrap_or_else(|| format!("HTTP {status}"))
                }
                Err(e) => e.clone(),
            };
            log("warn", "mail_failed", json!({"approvalId": row.id.as_str(), "kind": kind, "error": detail}));
        }
    }
    log(
        "info",
        "mail_sent",
        json!({"approvalId": row.id.as_str(), "kind": kind, "recipients": recipients.len(), "failed": failed}),
    );
    Some(MailReport { recipients: recipients.len(), failed })
}

/// Sends the request mail of a just-stored approval and records the outcome for the cron.
pub async fn send_request(cfg: &Config, store: &Store, row: &MailJob) -> Result<(), ApiError> {
    let report = send_counted(cfg, store.probe(), row, &row.notify, MailKind::Request, None).await;
    let state = match report {
        None => MailState::None,
        Some(r) if r.failed == 0 => MailState::Sent,
        Some(_) => MailState::Failed,
    };
    let detail = report.map(|r| r.detail(MailKind::Request));
    store.set_mail_state(&row.id, state, detail.as_ref().map(|d| (d, crate::platform::now_ms()))).await
}

/// [`send_request`] (and the chat notifications, `crate::chat`) for an approval that was just stored, run after
/// the response: nobody is left to answer, so failures are logged (and the `mail_state` / `chat_state` left
/// for the cron).
/// `routed`: the slots out-of-office routing handed on at registration, (absent approver, stand-in); their
/// stand-ins get the hand-over mail.
pub async fn send_request_of(
    cfg: &Config,
    env: &Env,
    probe: Rc<Probe>,
    id: &ApprovalId,
    routed: &[(Principal, Principal)],
) {
    let outcome = async {
        let store = Store::open(env, probe.clone())?;
        let Some(row) = store.mail_job(id).await? else { return Ok(()) };
        // The chat channels and the deciders' devices get the same request, alongside (their outcomes are
        // recorded on their own).
        let push = crate::push::send_to_deciders(cfg, &store, &row, "request");
        let ((sent, chat), _) =
            join(join(send_request(cfg, &store, &row), crate::chat::send(cfg, &store, &row)), push).await;
        if let Err(e) = chat {
            log("error", "chat_not_recorded", json!({"approvalId": id.as_str(), "error": e.to_string()}));
        }
        for (absent, stand_in) in routed {
            let h = Handover::Routed { absent: absent.value(), note: None };
            let _ = send_handover(cfg, store.probe(), &row, &emails([stand_in]), &h).await;
        }
        sent
    };
    if let Err(e) = outcome.await {
        log("error", "mail_not_recorded", json!({"approvalId": id.as_str(), "error": e.to_string()}));
    }
    log("debug", "round_trips", json!({"after": "register", "roundTrips": probe.round_trips().to_string()}));
}

//! Approval emails through SES v2 SendEmail (SigV4, service `ses`). A failure never loses the approval:
//! it is stored first, mailed after the response, the outcome is recorded, and the cron retries failed
//! mails and mails whose sender vanished (`mail_state` still `pending` after [`crate::cron`]'s grace).

use futures_util::future::join_all;
use ringi_core::config::Config;
use ringi_core::mail::{compose, ses_send_email_body, MailInput, MailKind};
use serde_json::{json, Map, Value};

use crate::aws::{signed_post, MAIL_TIMEOUT};
use crate::platform::log;
use crate::store::MailRow;

/// "Requested by" line: the execution or state machine from the registration's `context`.
fn requested_by(context: &Map<String, Value>) -> Option<String> {
    ["requestedBy", "executionArn", "stateMachineArn", "executionName", "stateName"]
        .iter()
        .find_map(|k| context.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

/// Sends one message per recipient. `Ok(true)`: every recipient accepted; `Ok(false)`: mail is off.
pub async fn send(cfg: &Config, row: &MailRow, kind: MailKind) -> Result<bool, String> {
    let Some(from) = cfg.mail_from.as_deref() else { return Ok(false) };
    let recipients: Vec<String> = serde_json::from_str(&row.notify_json).unwrap_or_default();
    if recipients.is_empty() {
        return Ok(false);
    }
    let context: Map<String, Value> = serde_json::from_str(&row.context_json).unwrap_or_default();
    let by = requested_by(&context);
    let url = cfg.approval_url(&row.id);
    let mail = compose(&MailInput {
        kind,
        title: &row.title,
        summary: &row.summary,
        url: &url,
        requested_by: by.as_deref(),
        registered_by: row.registered_by.as_deref(),
        expires_at_ms: row.expires_at as i64,
        locale: row.locale.as_deref(),
    });
    let endpoint = format!("{}/v2/email/outbound-emails", cfg.ses_endpoint);
    // Recipients in parallel: the whole message fits in one MAIL_TIMEOUT, inside the time a worker may
    // run after its response.
    let sends =
        recipients.iter().map(|to| {
            let body = ses_send_email_body(from, to, &mail);
            let endpoint = &endpoint;
            async move {
                signed_post(cfg, endpoint, "ses", &[("content-type", "application/json")], &body, MAIL_TIMEOUT).await
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
                Ok((_, text)) => ringi_core::sfn::error_code(text).unwrap_or_else(|| format!("HTTP {status}")),
                Err(e) => e.clone(),
            };
            log("warn", "mail_failed", json!({"approvalId": row.id, "kind": format!("{kind:?}"), "error": detail}));
        }
    }
    log(
        "info",
        "mail_sent",
        json!({"approvalId": row.id, "kind": format!("{kind:?}"), "recipients": recipients.len(), "failed": failed}),
    );
    if failed == 0 {
        Ok(true)
    } else {
        Err(format!("{failed} of {} recipients failed", recipients.len()))
    }
}

/// Sends the request mail of a just-stored approval and records the outcome for the cron.
pub async fn send_request(
    cfg: &Config,
    store: &crate::store::Store,
    row: &MailRow,
) -> Result<(), ringi_core::ApiError> {
    let state = match send(cfg, row, MailKind::Request).await {
        Ok(true) => "sent",
        Ok(false) => "none",
        Err(_) => "failed",
    };
    store.set_mail_state(&row.id, state).await
}

/// [`send_request`] for an approval that was just stored, run after the response: nobody is left to
/// answer, so failures are logged (and the `mail_state` left for the cron).
pub async fn send_request_of(
    cfg: &Config,
    env: &worker::Env,
    d1: std::rc::Rc<crate::store::D1Probe>,
    id: &ringi_core::ApprovalId,
) {
    let outcome = async {
        let store = crate::store::Store::open(env, d1)?;
        match store.mail_row(id).await? {
            Some(row) => send_request(cfg, &store, &row).await,
            None => Ok(()),
        }
    };
    if let Err(e) = outcome.await {
        log("error", "mail_not_recorded", json!({"approvalId": id.as_str(), "error": e.to_string()}));
    }
}

//! Chat notifications (core::adapters::chat) through the Workers fetch API: after the registration's response, like the
//! request mail, and retried by the cron. One POST per channel still due, in parallel; what each channel said
//! is recorded with the approval (the channels still due, `chat_state`) and as `notified` events, by channel
//! name. The URL and the signing secret are never logged: a platform error that quotes the URL is scrubbed.

use futures_util::future::join_all;
use ringi_core::adapters::chat::{
    payload, scrub, signature_header, ChannelKind, ChannelName, ChatInput, SIGNATURE_HEADER,
};
use ringi_core::adapters::mail::MailState;
use ringi_core::base::principal::joined;
use ringi_core::config::Config;
use ringi_core::ApiError;
use serde_json::{json, Map, Value};

use crate::aws::MAIL_TIMEOUT;
use crate::fetch::post;
use crate::platform::{log, now_ms};
use crate::store::{MailJob, ScheduleStore, Store};

/// What one channel said: `Ok` when it accepted the message (2xx), else why not (no URL in it).
struct Tried {
    name: ChannelName,
    /// `None`: the channel is no longer configured (dropped, not retried).
    via: Option<ChannelKind>,
    outcome: Result<(), String>,
}

impl Tried {
    /// The `notified` event's detail.
    fn detail(&self) -> Map<String, Value> {
        let mut d = json!({"channel": self.name.as_str(), "delivered": self.outcome.is_ok()});
        if let Some(via) = self.via {
            d["via"] = via.as_str().into();
        }
        if let Err(e) = &self.outcome {
            d["error"] = e.clone().into();
        }
        d.as_object().cloned().unwrap_or_default()
    }
}

async fn post_one(cfg: &Config, job: &MailJob, name: &ChannelName, message: &ChatInput<'_>) -> Tried {
    let Some(channel) = cfg.chat_channels.get(name) else {
        // Registered, then removed from CHAT_CHANNELS: nothing to post to (not retried).
        return Tried { name: name.clone(), via: None, outcome: Err("the channel is no longer configured".into()) };
    };
    let now = now_ms();
    let body = payload(channel.kind, message, name, now).to_string();
    let signature = channel.secret.as_deref().map(|secret| signature_header(secret, now.div_euclid(1000), &body));
    let mut headers = vec![("content-type", "application/json"), ("user-agent", "ringi")];
    if let Some(sig) = signature.as_deref() {
        headers.push((SIGNATURE_HEADER, sig));
    }
    let outcome = match post(&channel.url, &headers, &body, MAIL_TIMEOUT).await {
        Ok((status, _)) if (200..300).contains(&status) => Ok(()),
        // The body is the receiver's, and may repeat what it was sent to: only the status is kept.
        Ok((status, _)) => Err(format!("HTTP {status}")),
        Err(e) => Err(scrub(&e, &cfg.chat_channels)),
    };
    if let Err(e) = &outcome {
        log(
            "warn",
            "chat_failed",
            json!({"approvalId": job.id.as_str(), "channel": name.as_str(), "via": channel.kind.as_str(), "error": e}),
        );
    }
    Tried { name: name.clone(), via: Some(channel.kind), outcome }
}

/// Posts the request to the job's channels still due and records the outcome (1 round trip); nothing to
/// do without channels due.
pub async fn send(cfg: &Config, store: &Store, job: &MailJob) -> Result<(), ApiError> {
    if job.chat_due.is_empty() {
        return Ok(());
    }
    let url = cfg.approval_url(job.id.as_str());
    let requesters = joined(&job.requested_by);
    let message = ChatInput {
        approval_id: job.id.as_str(),
        title: &job.title,
        url: &url,
        registered_by: job.registered_by.as_deref(),
        requested_by: job.context.requested_by_or(&requesters),
        expires_at_ms: job.expires_at,
    };
    let tried = join_all(job.chat_due.iter().map(|name| post_one(cfg, job, name, &message))).await;
    // A channel that is gone is dropped with the delivered ones; the others stay due for the cron.
    let still_due: Vec<ChannelName> =
        tried.iter().filter(|t| t.outcome.is_err() && t.via.is_some()).map(|t| t.name.clone()).collect();
    let state = if still_due.is_empty() { MailState::Sent } else { MailState::Failed };
    log(
        "info",
        "chat_sent",
        json!({"approvalId": job.id.as_str(), "channels": tried.len(), "failed": tried.iter().filter(|t| t.outcome.is_err()).count()}),
    );
    let details: Vec<Map<String, Value>> = tried.iter().map(Tried::detail).collect();
    store.set_chat_state(&job.id, state, &still_due, &details, now_ms()).await
}

//! `PUT/DELETE /api/v1/me/push`: this device's push subscription, stored for the signed-in person (by the
//! verified `sub`, with the verified email and groups of the token, so that approvals naming them by email or
//! group reach the device) or removed (sign-out, notifications turned off). Without `VAPID_KEY` the installation
//! sends no push: `push_not_configured`.

use ringi_core::adapters::webpush::{PushHosts, SubscriptionBody, UnsubscribeBody};
use ringi_core::base::principal::Identity;
use ringi_core::base::text::is_loopback_origin;
use ringi_core::config::Config;
use ringi_core::ApiError;
use serde_json::json;
use worker::{Method, Request, Response};

use crate::platform::now_ms;
use crate::store::{PushOwner, PushStore, Store};

pub async fn handle(req: &mut Request, cfg: &Config, store: &Store, who: &Identity) -> Result<Response, ApiError> {
    let body = super::http::body_bytes(req).await?;
    match req.method() {
        Method::Put => {
            // What is wrong with the request first (the same checks with push off: the default push services),
            // then whether this installation pushes at all.
            let parsed = SubscriptionBody::parse(&body)?;
            let hosts = cfg
                .push
                .as_ref()
                .map_or_else(|| PushHosts::defaults(is_loopback_origin(&cfg.public_base_url)), |p| p.hosts.clone());
            let subscription = parsed.check(&hosts)?;
            cfg.push.as_ref().ok_or(ApiError::PushNotConfigured)?;
            // The email reaches approvals naming the person by email: only a verified one.
            let email = who.email.as_deref().filter(|_| cfg.routes_by_email()).map(str::to_ascii_lowercase);
            let owner = PushOwner { sub: &who.sub, email: email.as_deref(), groups: &who.groups };
            store.subscribe(&owner, &subscription, parsed.lang(), now_ms()).await?;
            super::http::json(200, &json!({"subscribed": true}))
        }
        _ => {
            let parsed = UnsubscribeBody::parse(&body)?;
            store.unsubscribe(&who.sub, parsed.endpoint.trim()).await?;
            super::http::json(200, &json!({"subscribed": false}))
        }
    }
}

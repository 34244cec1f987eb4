//! This device's Web Push subscription (design.md §9 "Push"), through the browser's service worker registration
//! (`public/sw.js` shows the notifications). Forgetting it (sign-out, turning it off) is `app/boot.js`'s
//! `ringiForgetPushDevice`, so that the approval page's wasm only calls it; the settings page (full bundle)
//! reads the state and turns notifications on, through `js_sys::Reflect` rather than more web-sys bindings.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

fn get(target: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(target, &key.into()).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

/// Can this device hold a push subscription at all? Only with notifications granted (a subscription is
/// `userVisibleOnly`): otherwise sign-out has nothing to forget and leaves at once.
pub fn may_be_subscribed() -> bool {
    get(&js_sys::global(), "Notification")
        .and_then(|n| get(&n, "permission"))
        .and_then(|p| p.as_string())
        .is_some_and(|p| p == "granted")
}

/// Signing out (or turning notifications off): the worker forgets this device, then the browser does
/// (`app/boot.js`, with this tab's bearer). Best effort.
pub async fn forget_this_device() {
    let Some(f) = get(&js_sys::global(), "ringiForgetPushDevice").and_then(|f| f.dyn_into::<Function>().ok()) else {
        return;
    };
    let bearer = crate::infra::auth::bearer().map_or(JsValue::NULL, |b| JsValue::from_str(&b));
    if let Ok(p) = f.call1(&JsValue::NULL, &bearer).and_then(JsCast::dyn_into::<Promise>) {
        let _ = JsFuture::from(p).await;
    }
}

/// `target.method(...args)` awaited (a promise) or as returned.
#[cfg(feature = "admin")]
async fn call(target: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = get(target, method).ok_or_else(|| JsValue::from_str(method))?.dyn_into()?;
    let out = f.apply(target, &args.iter().collect())?;
    match out.dyn_into::<Promise>() {
        Ok(p) => JsFuture::from(p).await,
        Err(v) => Ok(v),
    }
}

/// The service worker registration of this page, if any (none: push is not possible here).
#[cfg(feature = "admin")]
async fn registration() -> Option<JsValue> {
    let container = get(&get(&js_sys::global(), "navigator")?, "serviceWorker")?;
    call(&container, "getRegistration", &[]).await.ok().filter(|r| !r.is_undefined())
}

/// This device's current subscription, if any.
#[cfg(feature = "admin")]
async fn subscription() -> Option<JsValue> {
    let manager = get(&registration().await?, "pushManager")?;
    call(&manager, "getSubscription", &[]).await.ok().filter(|s| !s.is_null() && !s.is_undefined())
}

/// What the settings page shows about this device.
#[cfg(feature = "admin")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushState {
    /// This browser cannot (no service worker, PushManager or Notification), or the installation sends none.
    Unsupported,
    /// The person refused notifications for this site: only the browser's settings can change it.
    Blocked,
    Off,
    On,
}

#[cfg(feature = "admin")]
impl PushState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unsupported => "unsupported",
            Self::Blocked => "blocked",
            Self::Off => "off",
            Self::On => "on",
        }
    }
}

#[cfg(feature = "admin")]
fn permission() -> Option<String> {
    get(&get(&js_sys::global(), "Notification")?, "permission")?.as_string()
}

/// This device's state (`supported`: the installation has a VAPID key).
#[cfg(feature = "admin")]
pub async fn state(supported: bool) -> PushState {
    let global = js_sys::global();
    if !supported || get(&global, "PushManager").is_none() || permission().is_none() {
        return PushState::Unsupported;
    }
    if registration().await.is_none() {
        return PushState::Unsupported;
    }
    match (permission().as_deref(), subscription().await) {
        (Some("denied"), _) => PushState::Blocked,
        (_, Some(_)) => PushState::On,
        _ => PushState::Off,
    }
}

/// Turns notifications on for this device: the browser's permission, its subscription with the installation's
/// `applicationServerKey` (`vapid`, base64url), then the worker stores it. `Err` says why not.
#[cfg(feature = "admin")]
pub async fn turn_on(vapid: &str, lang: &str) -> Result<(), String> {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    let notification = get(&js_sys::global(), "Notification").ok_or("no Notification API")?;
    let granted = call(&notification, "requestPermission", &[]).await.map_err(|_| "permission request failed")?;
    if granted.as_string().as_deref() != Some("granted") {
        return Err("permission not granted".into());
    }
    let manager = get(&registration().await.ok_or("no service worker")?, "pushManager").ok_or("no PushManager")?;
    let key = URL_SAFE_NO_PAD.decode(vapid).map_err(|_| "bad applicationServerKey")?;
    let options = js_sys::Object::new();
    let _ = Reflect::set(&options, &"userVisibleOnly".into(), &true.into());
    let _ = Reflect::set(&options, &"applicationServerKey".into(), &js_sys::Uint8Array::from(key.as_slice()).into());
    let sub = call(&manager, "subscribe", &[options.into()]).await.map_err(|e| describe(&e))?;
    let json = call(&sub, "toJSON", &[]).await.map_err(|e| describe(&e))?;
    let text = js_sys::JSON::stringify(&json).map_err(|e| describe(&e))?;
    let mut body: serde_json::Value = serde_json::from_str(&String::from(text)).map_err(|e| e.to_string())?;
    body["lang"] = lang.into();
    if let Err(e) = crate::infra::api::push_subscribe(&body).await {
        // The worker refused it: the browser's subscription would only be a dangling one.
        let _ = call(&sub, "unsubscribe", &[]).await;
        return Err(e.to_string());
    }
    Ok(())
}

#[cfg(feature = "admin")]
fn describe(e: &JsValue) -> String {
    get(e, "message").and_then(|m| m.as_string()).or_else(|| e.as_string()).unwrap_or_else(|| "failed".into())
}

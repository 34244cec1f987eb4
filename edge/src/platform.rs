//! The few things the worker takes from its JS host: clock, randomness, structured logs.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ringi_core::adapters::discovery::IdpFetchError;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

thread_local! {
    /// The dev-only test clock's offset (`TEST_CLOCK`) of the request or cron run being polled; 0 otherwise.
    static CLOCK_OFFSET_MS: Cell<i64> = const { Cell::new(0) };
}

/// The approvals' "now": expiry, leases, reminders and schedules, purge, the outcome on expiry, the times
/// recorded, and how often the issuer's keys and discovery document may be fetched again. The test clock moves it
/// forward (see [`with_clock`]); in production it is the host's clock.
pub fn now_ms() -> i64 {
    wall_ms() + CLOCK_OFFSET_MS.with(Cell::get)
}

/// The host's clock, never moved: what others' clocks judge too — a JWT's validity window, AWS request
/// signatures — and real waiting, such as how long another request's key fetch counts as in flight.
pub fn wall_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// Runs `fut` with [`now_ms`] moved `offset_ms` forward. The offset is in place only while `fut` itself is
/// polled, so requests the isolate interleaves each keep their own.
pub fn with_clock<F: Future>(offset_ms: i64, fut: F) -> impl Future<Output = F::Output> {
    WithClock { offset_ms, fut: Box::pin(fut) }
}

/// `fut` on the clock of the request that spawns it: work that runs after the response (`wait_until`).
pub fn same_clock<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    with_clock(CLOCK_OFFSET_MS.with(Cell::get), fut)
}

struct WithClock<F> {
    offset_ms: i64,
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for WithClock<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let outer = CLOCK_OFFSET_MS.with(|c| c.replace(self.offset_ms));
        let polled = self.fut.as_mut().poll(cx);
        CLOCK_OFFSET_MS.with(|c| c.set(outer));
        polled
    }
}

fn crypto() -> web_sys::Crypto {
    js_sys::Reflect::get(&js_sys::global(), &"crypto".into())
        .expect("globalThis.crypto exists in workerd")
        .unchecked_into()
}

pub fn subtle() -> web_sys::SubtleCrypto {
    crypto().subtle()
}

/// A WebCrypto algorithm object: `{name, <param>: <value>, …}`.
pub fn algorithm(name: &str, params: &[(&str, JsValue)]) -> js_sys::Object {
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &"name".into(), &name.into());
    for (k, v) in params {
        let _ = js_sys::Reflect::set(&o, &(*k).into(), v);
    }
    o
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    crypto().get_random_values_with_u8_array(&mut buf).expect("crypto.getRandomValues");
    buf
}

/// Uniform in [0, 1) for retry jitter.
pub fn random_unit() -> f64 {
    let b = random_bytes::<4>();
    f64::from(u32::from_le_bytes(b)) / (f64::from(u32::MAX) + 1.0)
}

/// One JSON log line. Callers pass only non-secret fields: never a token, JWT, key or signature.
pub fn log(level: &str, event: &str, mut fields: Value) {
    if let Value::Object(m) = &mut fields {
        m.insert("level".into(), level.into());
        m.insert("event".into(), event.into());
    }
    worker::console_log!("{fields}");
}

/// GETs `url` and returns its body when the answer is a 200, giving up (and aborting the fetch) after
/// `timeout`: the issuer's JWKS and discovery document. A redirect is answered as an error, not followed.
pub async fn get_text(url: &str, timeout: std::time::Duration) -> Result<String, IdpFetchError> {
    use futures_util::future::{select, Either};
    use worker::{AbortController, Delay, Fetch, Request, RequestInit, RequestRedirect};

    // Not followed: a redirect is a failure of its own (`IdpFetchError::Redirect`).
    let mut init = RequestInit::new();
    init.with_redirect(RequestRedirect::Manual);
    let req = Request::new_with_init(url, &init).map_err(|e| IdpFetchError::Network(format!("bad URL: {e}")))?;
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = async move {
        let mut resp =
            Fetch::Request(req).send_with_signal(&signal).await.map_err(|e| IdpFetchError::Network(e.to_string()))?;
        if let Some(e) = IdpFetchError::from_status(resp.status_code()) {
            return Err(e);
        }
        resp.text().await.map_err(|e| IdpFetchError::Network(e.to_string()))
    };
    match select(Box::pin(exchange), Box::pin(Delay::from(timeout))).await {
        Either::Left((outcome, _)) => outcome,
        Either::Right(_) => {
            controller.abort();
            Err(IdpFetchError::Timeout { secs: timeout.as_secs() })
        }
    }
}

//! The issuer's JWKS, per isolate and keyed by its URL: fetched once for all concurrent requests, with the
//! in-flight rules of `ringi_core::adapters::jwks::JwksCache` (a fetch counts as in flight for at most `JWKS_IN_FLIGHT_MS`).
//! A redirect from the JWKS URL is a failed fetch, not followed (`crate::platform::get_text`). The refetch limit
//! follows the worker's clock (the dev-only test clock skips it); the in-flight window is real waiting.
//!
//! A request that finds another request's fetch in flight waits for it without polling: it parks on a
//! JS promise it created itself, which the fetching request resolves when its fetch ends. The promise
//! belongs to the waiting request, so workerd runs the wake-up in that request's own context (a Rust
//! future or once-cell shared between requests would resume the waiter inside the fetcher's context, and
//! be cancelled with it). A fetching request that is cancelled never resolves anything: the waiters' own
//! timers end their wait when the in-flight mark expires.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use futures_util::future::{select, Either};
use js_sys::{Function, Promise};
use ringi_core::adapters::jwks::{Jwk, Jwks, JwksCache, KeyLookup, JWKS_IN_FLIGHT_MS};
use ringi_core::adapters::jwt::JwtError;
use serde_json::json;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use worker::Delay;

use crate::platform::{log, now_ms, wall_ms};

/// A JWKS fetch gets this long before it is abandoned (the verifying request then answers 401).
const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(3);

/// A request parked until the fetch begun at `mark` ends.
struct Waiter {
    id: u64,
    mark: i64,
    wake: Function,
}

thread_local! {
    // Per isolate: survives across requests, so the JWKS is fetched once.
    static JWKS: RefCell<JwksCache> = RefCell::new(JwksCache::default());
    static WAITERS: RefCell<Vec<Waiter>> = const { RefCell::new(Vec::new()) };
    static NEXT_WAITER: Cell<u64> = const { Cell::new(0) };
}

/// Ends the in-flight mark and wakes its waiters when the fetching future ends or is dropped; a future
/// that is simply never resumed (its request cancelled) is covered by the mark's expiry.
struct InFlight(i64);

impl InFlight {
    fn begin(url: &str) -> Self {
        Self(JWKS.with(|c| c.borrow_mut().begin_fetch(url, now_ms(), wall_ms())))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        JWKS.with(|c| c.borrow_mut().end_fetch(self.0));
        let woken: Vec<Waiter> = WAITERS.with(|w| {
            let (woken, rest) = w.borrow_mut().drain(..).partition(|w| w.mark == self.0);
            *w.borrow_mut() = rest;
            woken
        });
        for w in woken {
            let _ = w.wake.call0(&JsValue::UNDEFINED);
        }
    }
}

/// Parks until the fetch begun at `mark` ends, or at most until `deadline` (ms). `false`: timed out.
async fn wait_for(mark: i64, deadline: i64) -> bool {
    let id = NEXT_WAITER.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    let mut wake = None;
    let woken = Promise::new(&mut |resolve, _| wake = Some(resolve));
    let Some(wake) = wake else { return false };
    WAITERS.with(|w| w.borrow_mut().push(Waiter { id, mark, wake }));
    let left = Duration::from_millis(deadline.saturating_sub(wall_ms()).max(0) as u64);
    match select(JsFuture::from(woken), Box::pin(Delay::from(left))).await {
        Either::Left(_) => true,
        Either::Right(_) => {
            WAITERS.with(|w| w.borrow_mut().retain(|w| w.id != id));
            false
        }
    }
}

/// The key `kid` of the configured JWKS: from the cache, else after a fetch (this request's, or the one
/// in flight, waited for at most until its mark expires).
pub async fn key_for(kid: &str, jwks_url: &str) -> Result<Jwk, JwtError> {
    // Bounded: one in-flight window of waiting, then one fetch of our own at most.
    let deadline = wall_ms() + JWKS_IN_FLIGHT_MS + 1_000;
    loop {
        let now = wall_ms();
        let (lookup, in_flight) =
            JWKS.with(|c| (c.borrow().lookup(jwks_url, kid, now_ms()), c.borrow().in_flight_mark(now)));
        match (lookup, in_flight) {
            (KeyLookup::Found(k), _) => return Ok(k),
            (_, Some(mark)) if now < deadline => {
                if !wait_for(mark, (mark + JWKS_IN_FLIGHT_MS).min(deadline)).await && wall_ms() >= deadline {
                    return Err(JwtError::JwksUnavailable("timed out waiting for a concurrent fetch".into()));
                }
            }
            (_, Some(_)) => return Err(JwtError::JwksUnavailable("timed out waiting for a concurrent fetch".into())),
            (KeyLookup::NotFound, None) => return Err(JwtError::UnknownKid),
            (KeyLookup::Fetch, None) => return fetch_and_find(kid, jwks_url).await,
        }
    }
}

async fn fetch_and_find(kid: &str, jwks_url: &str) -> Result<Jwk, JwtError> {
    let mark = InFlight::begin(jwks_url);
    let fetched = fetch_jwks(jwks_url).await;
    let error = match fetched {
        Ok(jwks) => {
            JWKS.with(|c| c.borrow_mut().store(jwks_url, jwks, now_ms()));
            None
        }
        Err(e) => {
            log("warn", "jwks_fetch_failed", json!({"url": jwks_url, "error": e}));
            Some(e)
        }
    };
    drop(mark);
    match JWKS.with(|c| c.borrow().lookup(jwks_url, kid, now_ms())) {
        KeyLookup::Found(k) => Ok(k),
        _ => Err(error.map(JwtError::JwksUnavailable).unwrap_or(JwtError::UnknownKid)),
    }
}

/// GETs the JWKS, giving up (and aborting the fetch) after [`JWKS_FETCH_TIMEOUT`].
async fn fetch_jwks(url: &str) -> Result<Jwks, String> {
    let body = crate::platform::get_text(url, JWKS_FETCH_TIMEOUT).await.map_err(|e| e.to_string())?;
    serde_json::from_str(&body).map_err(|e| e.to_string())
}

//! ringi edge worker: the API of design.md §2 plus the SPA's static assets, on Cloudflare Workers.

mod assets;
mod auth;
mod aws;
mod chat;
mod config;
mod cron;
mod dev_reload;
mod discovery;
mod error;
mod federation;
mod fetch;
mod jwks;
mod keys;
mod mailer;
mod on_expiry;
mod platform;
mod probe;
mod push;
mod receipt;
mod routes;
mod sfn_client;
mod store;

use ringi_core::config::Config;
use ringi_core::dev::clock::ClockOffset;
use ringi_core::dev::faults::FaultSpec;
use ringi_core::dev::latency::Delays;
use ringi_core::dev::switch::cron_part;
use ringi_core::ApiError;
use serde_json::json;
use worker::{event, Context, Env, Headers, Request, Response, Result, ScheduleContext, ScheduledEvent};

use crate::error::error_response;
use crate::platform::log;
use crate::probe::Probe;

/// Dev/bench only: the per-request D1 fault spec, honoured when `D1_FAULTS=header`.
const FAULT_HEADER: &str = "x-ringi-d1-fault";
/// Dev/bench only: the per-request delays (`d1=80,aws=80`), honoured when `INJECT_LATENCY=header`.
const LATENCY_HEADER: &str = "x-ringi-latency";
/// Dev/test only: how many seconds ahead of the host's clock this request's "now" runs, honoured when
/// `TEST_CLOCK=header` (a cron run: the trigger's `clock=` part).
const CLOCK_HEADER: &str = "x-ringi-clock";
/// Dev/bench only: the request's round trips (`d1=2;sfn=1;ses=0`), sent while a dev switch is on.
const ROUND_TRIPS_HEADER: &str = "x-ringi-round-trips";

/// The faults this request runs with: none in production (the config refuses the switch there).
fn request_faults(cfg: &Config, req: &Request) -> Result<Option<FaultSpec>, ApiError> {
    let given = req.headers().get(FAULT_HEADER).ok().flatten();
    cfg.d1_faults.resolve(given.as_deref(), FaultSpec::parse).map_err(|e| ApiError::invalid(FAULT_HEADER, e))
}

/// The delays this request's round trips are given: none in production (the config refuses the switch).
fn request_delays(cfg: &Config, req: &Request) -> Result<Delays, ApiError> {
    let given = req.headers().get(LATENCY_HEADER).ok().flatten();
    let delays = cfg.inject_latency.resolve(given.as_deref(), Delays::parse);
    delays.map(Option::unwrap_or_default).map_err(|e| ApiError::invalid(LATENCY_HEADER, e))
}

/// The test clock's offset for this request, in milliseconds: 0 in production (the config refuses the switch).
fn request_clock(cfg: &Config, req: &Request) -> Result<i64, ApiError> {
    let given = req.headers().get(CLOCK_HEADER).ok().flatten();
    let offset = cfg.test_clock.resolve(given.as_deref(), ClockOffset::parse);
    offset.map(|o| o.unwrap_or_default().ms()).map_err(|e| ApiError::invalid(CLOCK_HEADER, e))
}

/// Sent with every response, with [`csp`]; the SPA is built to run under that CSP (no inline script or style).
const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
    ("strict-transport-security", "max-age=63072000; includeSubDomains"),
    ("x-frame-options", "DENY"),
    // Sign-in is a full-page redirect, never a popup: nothing needs a window handle across origins.
    ("cross-origin-opener-policy", "same-origin"),
    // The approver app uses none of these powerful features (and neither may anything it embeds).
    (
        "permissions-policy",
        "accelerometer=(), autoplay=(), camera=(), display-capture=(), encrypted-media=(), fullscreen=(), \
         geolocation=(), gyroscope=(), hid=(), magnetometer=(), microphone=(), midi=(), payment=(), \
         picture-in-picture=(), publickey-credentials-get=(), screen-wake-lock=(), serial=(), usb=(), \
         xr-spatial-tracking=()",
    ),
];

/// The Content-Security-Policy. `connect-src` is the worker itself plus the origins the SPA talks to: the
/// Hosted UI domain (`/oauth2/token`) and the issuer, and for an OIDC issuer the discovered token endpoint
/// (known once the document is cached, which serving the HTML page makes sure of). Without a valid
/// configuration, only `'self'`. `script_sources`: the hashes of the page's own inline scripts (its start-up
/// script), the only inline code allowed.
fn csp(cfg: Option<&ringi_core::config::Config>, script_sources: &[String]) -> String {
    let mut connect = vec!["'self'".to_owned()];
    if let Some(cfg) = cfg {
        let token_endpoint = match cfg.profile {
            ringi_core::adapters::idp::IdpProfile::Oidc => discovery::cached().map(|d| d.token_endpoint),
            ringi_core::adapters::idp::IdpProfile::Cognito => None,
        };
        for url in [Some(cfg.cognito_domain.clone()), Some(cfg.issuer.clone()), token_endpoint].into_iter().flatten() {
            if let Some(origin) = ringi_core::config::origin_of(&url).filter(|o| !connect.contains(o)) {
                connect.push(origin);
            }
        }
    }
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{}; style-src 'self'; img-src 'self' data:; \
         connect-src {}; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'",
        script_sources.iter().map(|s| format!(" {s}")).collect::<String>(),
        connect.join(" ")
    )
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, worker_ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    let path = req.path();
    let loaded = config::load(&env).ok();
    let mut script_sources = Vec::new();
    let resp = if routes::is_api(&path) {
        let mut probe = None;
        let outcome = match config::load(&env) {
            Ok(cfg) => match request_faults(&cfg, &req)
                .and_then(|f| Ok((f, request_delays(&cfg, &req)?, request_clock(&cfg, &req)?)))
            {
                Ok((faults, delays, clock_ms)) => {
                    let p = Probe::new(faults, delays);
                    probe = Some((p.clone(), cfg.dev_switches_on()));
                    let ctx = routes::Ctx { env, cfg, worker: worker_ctx, probe: p };
                    let outcome = platform::with_clock(clock_ms, routes::dispatch(req, &ctx)).await;
                    // The events this request wrote are sealed into their hash chains after the response.
                    platform::with_clock(clock_ms, async { ctx.after_response(async {}) }).await;
                    outcome
                }
                Err(e) => Err(e),
            },
            Err(e) => {
                log("error", "config_invalid", json!({"error": e.to_string()}));
                Err(ApiError::Internal)
            }
        };
        let mut resp = outcome.unwrap_or_else(|e| error_response(&e));
        let _ = resp.headers_mut().set("cache-control", "no-store");
        if let Some((p, switch_on)) = probe {
            // Work after the response (the request mail) is not in these: it has its own log line.
            let trips = p.round_trips().to_string();
            log("debug", "round_trips", json!({"path": path, "roundTrips": trips, "d1Tries": p.d1_tries()}));
            if switch_on {
                // Dev/bench only: lets tests assert the round-trip budget and aim faults at every D1 call.
                let _ = resp.headers_mut().set(ROUND_TRIPS_HEADER, &trips);
            }
        }
        resp
    } else if let Some(cfg) = loaded.as_deref().filter(|c| c.dev_reload.enabled() && dev_reload::is_dev_path(&path)) {
        dev_reload::serve(&path, &env, &cfg.public_base_url).await?
    } else {
        let served = assets::serve(req, &env).await?;
        script_sources = served.script_sources;
        served.response
    };
    // After the response: a page response has just made sure the discovery document is known.
    with_security_headers(resp, &csp(loaded.as_deref(), &script_sources))
}

fn with_security_headers(resp: Response, csp: &str) -> Result<Response> {
    // Asset responses carry immutable headers: copy them into a fresh set.
    let headers = Headers::new();
    for (k, v) in resp.headers().entries() {
        headers.set(&k, &v)?;
    }
    headers.set("content-security-policy", csp)?;
    for (k, v) in SECURITY_HEADERS {
        headers.set(k, v)?;
    }
    // index.html names the hashed wasm/JS of the current build: always revalidate it.
    if headers.get("content-type")?.is_some_and(|t| t.starts_with("text/html")) {
        headers.set("cache-control", "no-cache")?;
    }
    Ok(resp.with_headers(headers))
}

#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    console_error_panic_hook::set_once();
    let cron = event.cron();
    // Dev/test only: with TEST_CLOCK=header the run's "now" moves by the trigger's `clock=` part (whole seconds,
    // as the request header); a malformed one is ignored, as the cron's other dev parts are.
    let clock = config::load(&env)
        .ok()
        .and_then(|cfg| cfg.test_clock.resolve(cron_part(&cron, "clock"), ClockOffset::parse).ok().flatten());
    let clock_ms = clock.unwrap_or_default().ms();
    if let Err(e) = platform::with_clock(clock_ms, cron::run(&env, &cron)).await {
        log("error", "cron_failed", json!({"error": e}));
    }
}

//! Dev only (`DEV_RELOAD=on`, `make dev`): the live reload's script and build paths, and the build a page is
//! tagged with (`ringi_core::dev::reload`). A rebuilt worker is a new isolate; a rebuilt SPA, new pages.

use ringi_core::adapters::assets::FULL_BUNDLE_PAGE;
use ringi_core::dev::reload::{build_id, BUILD_PATH, SCRIPT, SCRIPT_PATH};
use worker::{Env, Headers, Response, Result};

use crate::platform::random_bytes;

thread_local! {
    // Drawn on first use (randomness is not available while the script is loaded), then fixed for the isolate.
    static ISOLATE: u64 = u64::from_le_bytes(random_bytes::<8>());
}

pub fn is_dev_path(path: &str) -> bool {
    path == SCRIPT_PATH || path == BUILD_PATH
}

pub async fn serve(path: &str, env: &Env, base_url: &str) -> Result<Response> {
    let (body, content_type) = if path == SCRIPT_PATH {
        (SCRIPT.to_owned(), "text/javascript; charset=utf-8")
    } else {
        (current_build(env, base_url).await?, "text/plain; charset=utf-8")
    };
    let headers = Headers::new();
    headers.set("content-type", content_type)?;
    headers.set("cache-control", "no-store")?;
    Ok(Response::ok(body)?.with_headers(headers))
}

/// This isolate and the SPA's two pages as stored now.
pub async fn current_build(env: &Env, base_url: &str) -> Result<String> {
    let assets = env.assets("ASSETS")?;
    let mut pages = Vec::new();
    for page in ["/", FULL_BUNDLE_PAGE] {
        pages.push(assets.fetch(format!("{base_url}{page}"), None).await?.text().await?);
    }
    let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
    Ok(build_id(ISOLATE.with(|i| *i), &pages))
}

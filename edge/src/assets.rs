//! The SPA's files from the `ASSETS` binding: the HTML with the runtime configuration embedded (the SPA then
//! needs no `/config.json` request before it can route), and the content-hashed wasm/JS/CSS precompressed
//! (`.br` / `.gz` beside each, written at build time by `scripts/build/precompress.mjs`) with an immutable
//! year-long cache; everything else as stored.

use ringi_core::adapters::assets::{
    accepted_encodings, embed_config, hashed_asset_type, in_full_bundle, inline_script_sources, FULL_BUNDLE_PAGE,
    IMMUTABLE,
};
use serde_json::json;
use worker::{
    EncodeBody, Env, Headers, Method, Request, RequestInit, RequestRedirect, Response, ResponseBuilder, Result,
};

use crate::config;
use crate::platform::log;

/// A served file, with the CSP sources its inline scripts need (a page's start-up script; none for other files).
pub struct Served {
    pub response: Response,
    pub script_sources: Vec<String>,
}

pub async fn serve(req: Request, env: &Env) -> Result<Served> {
    let path = req.path();
    if is_page(&path) {
        return serve_page(req, env, &path).await;
    }
    Ok(Served { response: serve_file(req, env, &path).await?, script_sources: Vec::new() })
}

async fn serve_file(req: Request, env: &Env, path: &str) -> Result<Response> {
    let assets = env.assets("ASSETS")?;
    let method = req.method();
    if let Some(content_type) = hashed_asset_type(path) {
        if method == Method::Get && req.headers().get("range")?.is_none() {
            let accept = req.headers().get("accept-encoding")?.unwrap_or_default();
            let url = req.url()?;
            for encoding in accepted_encodings(&accept) {
                let mut file = url.clone();
                file.set_path(&format!("{path}{}", encoding.suffix()));
                file.set_query(None);
                let resp = assets.fetch(file.to_string(), None).await?;
                if !is_file(&resp)? {
                    continue;
                }
                let headers = Headers::new();
                headers.set("content-type", content_type)?;
                headers.set("content-encoding", encoding.token())?;
                headers.set("vary", "accept-encoding")?;
                headers.set("cache-control", IMMUTABLE)?;
                if let Some(etag) = resp.headers().get("etag")? {
                    headers.set("etag", &etag)?;
                }
                let (_, body) = resp.into_parts();
                // Manual: the body is already encoded; the runtime must send it as is, not compress it again.
                return Ok(ResponseBuilder::new()
                    .with_status(200)
                    .with_headers(headers)
                    .with_encode_body(EncodeBody::Manual)
                    .body(body));
            }
        }
        let resp = assets.fetch_request(req).await?;
        if !is_file(&resp)? {
            return Ok(resp);
        }
        // Asset responses carry immutable headers: a copy.
        let headers = copy_headers(&resp, &[])?;
        headers.set("content-type", content_type)?;
        headers.set("vary", "accept-encoding")?;
        headers.set("cache-control", IMMUTABLE)?;
        return Ok(resp.with_headers(headers));
    }
    assets.fetch_request(req).await
}

async fn serve_page(req: Request, env: &Env, path: &str) -> Result<Served> {
    let assets = env.assets("ASSETS")?;
    let method = req.method();
    let as_built = |response| Ok(Served { response, script_sources: Vec::new() });
    // A page (the SPA's HTML): conditional headers are dropped, because the HTML below is not the stored file
    // (configuration added), so the file's validators do not apply to it — and the asset store must not answer
    // 304 without the body.
    let headers = Headers::new();
    for (k, v) in req.headers().entries() {
        if !matches!(k.as_str(), "if-none-match" | "if-modified-since" | "if-match" | "if-unmodified-since") {
            headers.set(&k, &v)?;
        }
    }
    let mut init = RequestInit::new();
    init.with_method(method.clone()).with_headers(headers).with_redirect(RequestRedirect::Manual);
    // The rare pages come with the full bundle's HTML, every other app path with the emailed link's one.
    let mut page_url = req.url()?;
    if in_full_bundle(path) {
        page_url.set_path(FULL_BUNDLE_PAGE);
    }
    let forwarded = Request::new_with_init(page_url.as_str(), &init)?;
    // The SPA's configuration alongside the file: for an OIDC issuer on a cold isolate it needs the discovery
    // document, whose fetch then overlaps the asset read instead of following it.
    let cfg = config::load(env).ok();
    let spa = async {
        match &cfg {
            Some(c) => crate::discovery::spa_config(c).await,
            None => None,
        }
    };
    let (resp, spa) = futures_util::future::join(assets.fetch_request(forwarded), spa).await;
    let mut resp = resp?;
    let html = resp.headers().get("content-type")?.is_some_and(|t| t.starts_with("text/html"));
    if !html || resp.status_code() != 200 {
        return as_built(resp);
    }
    let headers = copy_headers(&resp, &["etag", "last-modified", "content-length"])?;
    if method == Method::Head {
        return as_built(ResponseBuilder::new().with_status(200).with_headers(headers).empty());
    }
    let page = resp.text().await?;
    let script_sources = inline_script_sources(&page);
    // Without a valid configuration the page goes out as built and the SPA asks /config.json (which explains).
    let page = match spa.map(|c| serde_json::to_string(&c)) {
        Some(Ok(cfg_json)) => embed_config(&page, &cfg_json).unwrap_or_else(|| {
            log("warn", "config_not_embedded", json!({"reason": "no </head> in the HTML"}));
            page.clone()
        }),
        _ => page,
    };
    let page = match cfg.as_ref().filter(|c| c.dev_reload.enabled()) {
        Some(c) => {
            let build = crate::dev_reload::current_build(env, &c.public_base_url).await?;
            ringi_core::dev::reload::with_reload_script(&page, &build).unwrap_or(page)
        }
        None => page,
    };
    let response = ResponseBuilder::new().with_status(200).with_headers(headers).fixed(page.into_bytes());
    Ok(Served { response, script_sources })
}

/// An app path (`/`, `/a/{id}`, `/auth/callback` …) or an `.html` file: answered with the SPA's HTML. Paths
/// naming another file (`/favicon.svg`, the hashed wasm …) are served as stored.
fn is_page(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    !last.contains('.') || last.ends_with(".html")
}

/// A stored file, not the SPA fallback (`index.html` answers any unknown path with 200).
fn is_file(resp: &Response) -> Result<bool> {
    Ok(resp.status_code() == 200 && !resp.headers().get("content-type")?.is_some_and(|t| t.starts_with("text/html")))
}

fn copy_headers(resp: &Response, except: &[&str]) -> Result<Headers> {
    let headers = Headers::new();
    for (k, v) in resp.headers().entries() {
        if !except.contains(&k.as_str()) {
            headers.set(&k, &v)?;
        }
    }
    Ok(headers)
}

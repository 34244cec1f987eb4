//! oauth2's [`AsyncHttpClient`] on the browser's fetch (gloo-net): the one request the `oauth2` crate makes,
//! the code exchange at the token endpoint.

use std::future::Future;
use std::pin::Pin;

use gloo_net::http::RequestBuilder;
use oauth2::{AsyncHttpClient, HttpRequest, HttpResponse};

/// oauth2's [`AsyncHttpClient`] on the browser's fetch (gloo-net).
pub struct GlooHttp;

#[derive(Debug)]
pub struct HttpError(String);

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpError {}

impl<'c> AsyncHttpClient<'c> for GlooHttp {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(send(request))
    }
}

async fn send(request: HttpRequest) -> Result<HttpResponse, HttpError> {
    let err = |e: gloo_net::Error| HttpError(e.to_string());
    let (parts, body) = request.into_parts();
    let mut builder = RequestBuilder::new(&parts.uri.to_string())
        .method(parts.method)
        // The token endpoint is another origin: no cookies, no referrer.
        .credentials(web_sys::RequestCredentials::Omit)
        .referrer_policy(web_sys::ReferrerPolicy::NoReferrer);
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            builder = builder.header(name.as_str(), value);
        }
    }
    let request = if body.is_empty() {
        builder.build().map_err(err)?
    } else {
        builder.body(js_sys::Uint8Array::from(body.as_slice())).map_err(err)?
    };
    let response = request.send().await.map_err(err)?;
    let mut out = oauth2::http::Response::builder().status(response.status());
    // oauth2 only reads the content type; copying every header would link http's header-name parser.
    if let Some(content_type) = response.headers().get("content-type") {
        out = out.header(oauth2::http::header::CONTENT_TYPE, content_type);
    }
    let bytes = response.binary().await.map_err(err)?;
    out.body(bytes).map_err(|e| HttpError(e.to_string()))
}

//! How the worker serves the SPA's files: the runtime configuration embedded in the HTML (one request less on
//! a phone's first load), and the content-hashed wasm/JS/CSS served precompressed (brotli or gzip, made at
//! build time by `scripts/build/precompress.mjs`) with a year-long immutable cache.

/// The `id` of the `<script type="application/json">` element carrying the configuration in the HTML.
pub const CONFIG_ELEMENT_ID: &str = "ringi-config";

/// `Cache-Control` of a file whose name carries its content hash: a new build has new names.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Escapes JSON for a `<script type="application/json">` element: `<` (so `</script>` or `<!--` cannot end or
/// change the element), `>` and `&` as JSON `\u` escapes, which decode to the same string.
pub fn escape_json_for_html(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            // Line/paragraph separators are valid in JSON strings; escaped for any JavaScript consumer.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The HTML with the configuration as a non-executed data block before `</head>` (allowed by a CSP without
/// `'unsafe-inline'`: the browser never runs it). `None` when the document has no `</head>`.
pub fn embed_config(html: &str, config_json: &str) -> Option<String> {
    let at = html.find("</head>")?;
    let tag = format!(
        "<script type=\"application/json\" id=\"{CONFIG_ELEMENT_ID}\">{}</script>\n",
        escape_json_for_html(config_json)
    );
    let mut out = String::with_capacity(html.len() + tag.len());
    out.push_str(&html[..at]);
    out.push_str(&tag);
    out.push_str(&html[at..]);
    Some(out)
}

/// The CSP sources (`'sha256-…'`) that allow the page's inline scripts: every `<script>` without `src` that
/// the browser runs (data blocks such as the configuration are never run and need none). The start-up script is
/// inlined by the build so that a phone need not wait a round trip for it; the policy still allows no other
/// inline script.
pub fn inline_script_sources(html: &str) -> Vec<String> {
    use base64::{engine::general_purpose::STANDARD, Engine};
    use sha2::{Digest, Sha256};
    let mut sources = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("<script") {
        let after = &rest[at + "<script".len()..];
        let Some(tag_end) = after.find('>') else { break };
        let attrs = &after[..tag_end];
        let body = &after[tag_end + 1..];
        let Some(close) = body.find("</script") else { break };
        let runs = !attrs.contains(" src=") && !attrs.contains("type=\"application/json\"");
        let text = &body.as_bytes()[..close];
        if runs && !text.is_empty() {
            sources.push(format!("'sha256-{}'", STANDARD.encode(Sha256::digest(text))));
        }
        rest = &body[close..];
    }
    sources
}

/// A content encoding the build stores next to each hashed file (`name.br`, `name.gz`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Br,
    Gzip,
}

impl Encoding {
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Br => "br",
            Encoding::Gzip => "gzip",
        }
    }

    /// The suffix of the precompressed file.
    pub fn suffix(self) -> &'static str {
        match self {
            Encoding::Br => ".br",
            Encoding::Gzip => ".gz",
        }
    }
}

/// The precompressed encodings an `Accept-Encoding` allows, best first (brotli, then gzip). A coding with
/// `q=0` is refused; `*` allows both unless they are refused by name.
pub fn accepted_encodings(accept_encoding: &str) -> Vec<Encoding> {
    let named = |name: &str| -> Option<bool> {
        let mut wildcard = None;
        let mut found = None;
        for item in accept_encoding.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            if coding.eq_ignore_ascii_case(name) {
                found = Some(q > 0.0);
            } else if coding == "*" {
                wildcard = Some(q > 0.0);
            }
        }
        found.or(wildcard)
    };
    [Encoding::Br, Encoding::Gzip].into_iter().filter(|e| named(e.token()) == Some(true)).collect()
}

/// The `Content-Type` of a file Trunk named with its content hash (`ringi-app-1f84d73785430cc_bg.wasm`,
/// `boot-cd28c74441759699.js`, `main-fe3f972a966dd20e.css`, at the root); `None` for anything else.
pub fn hashed_asset_type(path: &str) -> Option<&'static str> {
    let name = path.strip_prefix('/')?;
    if name.contains('/') {
        return None;
    }
    let (stem, content_type) = if let Some(stem) = name.strip_suffix("_bg.wasm") {
        (stem, "application/wasm")
    } else if let Some(stem) = name.strip_suffix(".js") {
        (stem, "text/javascript; charset=utf-8")
    } else if let Some(stem) = name.strip_suffix(".css") {
        (stem, "text/css; charset=utf-8")
    } else {
        return None;
    };
    // Trunk writes the 64-bit hash in hex without leading zeros.
    let (base, hash) = stem.rsplit_once('-')?;
    let hashed = !base.is_empty() && (8..=16).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit());
    hashed.then_some(content_type)
}

/// The SPA comes as two bundles of the same app: `index.html` (what an emailed link loads: sign-in, inbox,
/// approval page) and `admin.html`, which adds the pages few people open. These app paths are answered with
/// the full one; `public/sw.js` keeps the same list (it passes their navigations to the network; a test
/// holds the two equal).
pub const FULL_BUNDLE_PATHS: [&str; 2] = ["/audit", "/settings"];

/// The HTML file the asset store is asked for, for an app path: the asset store serves `admin.html` at
/// `/admin` (its `.html` URLs redirect to the extensionless one), `index.html` for any other app path.
pub const FULL_BUNDLE_PAGE: &str = "/admin";

/// Whether an app path (query and fragment already removed) is one of the full bundle's pages.
pub fn in_full_bundle(path: &str) -> bool {
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    FULL_BUNDLE_PATHS.contains(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_scripts_are_allowed_by_their_hash_and_nothing_else() {
        let html = "<head><script type=\"module\" async>alert(1)</script><script type=\"module\" src=\"/a.js\">\
                    </script><script type=\"application/json\" id=\"ringi-config\">{}</script><script></script>\
                    </head>";
        // `printf 'alert(1)' | openssl dgst -sha256 -binary | base64`
        assert_eq!(inline_script_sources(html), ["'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"]);
        assert!(inline_script_sources("<p>no script</p>").is_empty());
        assert!(inline_script_sources("<script>never closed").is_empty());
    }

    #[test]
    fn config_is_embedded_before_head_end_and_cannot_close_the_element() {
        let html = "<html><head><title>t</title></head><body></body></html>";
        let out = embed_config(html, r#"{"a":"</script><script>alert(1)</script>","b":"x&y<!--"}"#).unwrap();
        assert!(out.starts_with("<html><head><title>t</title><script type=\"application/json\" id=\"ringi-config\">"));
        assert!(out.ends_with("</script>\n</head><body></body></html>"));
        assert_eq!(out.matches("</script>").count(), 1, "{out}");
        assert!(!out.contains("<!--"));
        let json = out.split("id=\"ringi-config\">").nth(1).unwrap().split("</script>").next().unwrap();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["a"], "</script><script>alert(1)</script>");
        assert_eq!(v["b"], "x&y<!--");
        assert_eq!(embed_config("<p>no head</p>", "{}"), None);
    }

    #[test]
    fn encodings_follow_accept_encoding() {
        use Encoding::*;
        assert_eq!(accepted_encodings("gzip, deflate, br, zstd"), vec![Br, Gzip]);
        assert_eq!(accepted_encodings("gzip, deflate"), vec![Gzip]);
        assert_eq!(accepted_encodings("br;q=0, gzip;q=0.5"), vec![Gzip]);
        assert_eq!(accepted_encodings("*"), vec![Br, Gzip]);
        assert_eq!(accepted_encodings("*, gzip;q=0"), vec![Br]);
        assert_eq!(accepted_encodings("identity"), vec![]);
        assert_eq!(accepted_encodings(""), vec![]);
        assert_eq!(accepted_encodings("BR"), vec![Br]);
    }

    #[test]
    fn hashed_assets_are_recognised() {
        assert_eq!(hashed_asset_type("/ringi-app-1f84d73785430cc_bg.wasm"), Some("application/wasm"));
        assert_eq!(hashed_asset_type("/ringi-app-1f84d73785430cc.js"), Some("text/javascript; charset=utf-8"));
        assert_eq!(hashed_asset_type("/boot-cd28c74441759699.js"), Some("text/javascript; charset=utf-8"));
        assert_eq!(hashed_asset_type("/main-fe3f972a966dd20e.css"), Some("text/css; charset=utf-8"));
        for other in [
            "/",
            "/index.html",
            "/favicon.svg",
            "/manifest.webmanifest",
            "/a/abcdefghijklmnop1234",
            "/icons/icon-192.png",
            "/boot.js",
            "/x/boot-cd28c74441759699.js",
            "/-cd28c74441759699.js",
            "/boot-nothex0000000.js",
            "/boot-cd28c74441759699.js.br",
            "/boot-cd28c74441759699.wasm",
        ] {
            assert_eq!(hashed_asset_type(other), None, "{other}");
        }
    }

    #[test]
    fn only_the_rare_pages_load_the_full_bundle() {
        for full in ["/audit", "/settings", "/settings/", "/audit/"] {
            assert!(in_full_bundle(full), "{full}");
        }
        for lean in
            ["/", "/a/abcdefghijklmnop1234", "/auth/callback", "/admin", "/audit/x", "/settingsx", "/a/audit", ""]
        {
            assert!(!in_full_bundle(lean), "{lean}");
        }
    }

    /// The service worker is plain JavaScript with its own copy of the list: it must name exactly these paths.
    #[test]
    fn the_service_worker_passes_exactly_the_full_bundle_pages_to_the_network() {
        let sw = include_str!("../../../public/sw.js");
        let line = sw.lines().find(|l| l.starts_with("const FULL_BUNDLE = ")).expect("FULL_BUNDLE in public/sw.js");
        let names = line.split_once("^\\/(").and_then(|(_, rest)| rest.split_once(")\\/?$/")).map(|(n, _)| n);
        let mut listed: Vec<String> =
            names.expect("the /^\\/(a|b)\\/?$/ form").split('|').map(|n| format!("/{n}")).collect();
        let mut paths: Vec<String> = FULL_BUNDLE_PATHS.iter().map(|p| p.to_string()).collect();
        listed.sort();
        paths.sort();
        assert_eq!(listed, paths);
    }
}

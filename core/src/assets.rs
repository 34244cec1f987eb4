//! How the worker serves the SPA's files: the runtime configuration embedded in the HTML (one request less on
//! a phone's first load).

/// The `id` of the `<script type="application/json">` element carrying the configuration in the HTML.
pub const CONFIG_ELEMENT_ID: &str = "ringi-config";

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

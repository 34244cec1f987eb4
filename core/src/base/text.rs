//! Text rules every layer shares: which characters a one-line field may hold, what counts as an email
//! address or a mail domain, and which URLs ringi calls (https, or http to a loopback host).

use std::net::Ipv4Addr;

/// Bidirectional overrides/isolates and zero-width characters: in a one-line field they can make text
/// render differently from what it says (a title that reads "Approve refund" but stores something else).
pub fn is_invisible_control(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{061C}')
}

/// A one-line field without [`is_invisible_control`] characters.
pub fn strip_invisible(s: &str) -> String {
    s.chars().filter(|c| !is_invisible_control(*c)).collect()
}

/// An address ringi accepts: one `@`, a dotted domain, no spaces, controls or list punctuation, 254 bytes at most.
pub fn valid_email(e: &str) -> bool {
    let Some((local, domain)) = e.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control() || c == '<' || c == '>' || c == ',')
}

/// A domain name as `MAIL_ALLOWED_DOMAINS` lists them (lower case, at least one dot).
pub fn valid_domain(d: &str) -> bool {
    valid_email(&format!("x@{d}")) && !d.contains('@')
}

/// `scheme://host[:port]` of a URL already accepted by [`check_url`] (the CSP's sources, a push service's
/// VAPID audience).
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    (!host_port.is_empty()).then(|| format!("{}://{}", scheme.to_ascii_lowercase(), host_port.to_ascii_lowercase()))
}

/// `http(s)://` with a loopback host (127.0.0.0/8, `localhost` or `[::1]`), any port: the host as parsed
/// ([`loopback`], the same check as `http://` URLs get), not a prefix of the text.
pub fn is_loopback_origin(url: &str) -> bool {
    url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).is_some_and(loopback)
}

/// Is the host of this URL (the part after the scheme) a loopback address: 127.0.0.0/8, `localhost` or
/// `[::1]`? The host a client would connect to: after any userinfo (`127.0.0.1@evil.example` is evil.example),
/// before the port or a path (browsers end the authority at `\` too), and a whole IPv4 address
/// (`127.0.0.1.nip.io` is a name).
fn loopback(after_scheme: &str) -> bool {
    let authority = after_scheme.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if host_port.starts_with('[') {
        // `[::1]` then nothing or a port: `[::1].evil.example` is no host at all.
        let (host, rest) = host_port.split_at(host_port.find(']').map_or(0, |i| i + 1));
        if rest.is_empty() || rest.starts_with(':') {
            host
        } else {
            ""
        }
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// An `https://` URL, or `http://` to a loopback host (the local stack and the tests); `Err` says what it must be.
pub fn check_url(v: &str) -> Result<(), String> {
    let ok = match (v.strip_prefix("https://"), v.strip_prefix("http://")) {
        (Some(rest), _) => !rest.is_empty(),
        (None, Some(rest)) => loopback(rest),
        (None, None) => false,
    };
    if ok {
        Ok(())
    } else {
        Err("must be an https:// URL (http:// only for 127.0.0.0/8, localhost, [::1])".into())
    }
}

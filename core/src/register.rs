//! `POST /api/v1/approvals`: parsing and validating a registration into a [`NewApproval`].

use serde_json::{Map, Value};

use crate::approval::Quorum;
use crate::error::ApiError;
use crate::form::{strip_form, strip_invisible, validate_form, FormField};
use crate::ids::{ApprovalId, TaskToken};
use crate::principal::Principal;
use crate::time::parse_rfc3339;

pub const MAX_APPROVERS: usize = 50;
pub const TITLE_MAX_CHARS: usize = 200;
pub const SUMMARY_MAX_CHARS: usize = 4_000;
pub const DETAILS_MAX_BYTES: usize = 32 * 1024;
pub const CONTEXT_MAX_BYTES: usize = 4 * 1024;
pub const MAX_EXPIRY_MS: i64 = 366 * 24 * 3600 * 1000;

/// A validated registration, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    /// `None`: the caller let ringi generate one.
    pub id: Option<ApprovalId>,
    pub token: TaskToken,
    pub approvers: Vec<Principal>,
    pub quorum: Quorum,
    pub title: String,
    pub summary: String,
    pub details: Map<String, Value>,
    pub form: Vec<FormField>,
    pub expires_at: i64,
    pub notify: Vec<String>,
    pub context: Map<String, Value>,
    pub locale: Option<String>,
    /// SHA-256 (hex) of the registration object as received (canonical JSON, envelope removed): tells a
    /// redelivery of the same request from a different request for the same task.
    pub request_sha256: String,
}

fn str_field<'a>(o: &'a Map<String, Value>, name: &str, required: bool) -> Result<Option<&'a str>, ApiError> {
    match o.get(name) {
        None | Some(Value::Null) if required => Err(ApiError::invalid(name, "is required")),
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid(name, "must be a string")),
    }
}

fn obj_field(o: &Map<String, Value>, name: &str, max_bytes: usize) -> Result<Map<String, Value>, ApiError> {
    match o.get(name) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) if Value::Object(m.clone()).to_string().len() <= max_bytes => Ok(m.clone()),
        Some(Value::Object(_)) => Err(ApiError::invalid(name, format!("must be at most {max_bytes} bytes of JSON"))),
        Some(_) => Err(ApiError::invalid(name, "must be a JSON object")),
    }
}

fn valid_email(e: &str) -> bool {
    let Some((local, domain)) = e.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control() || c == '<' || c == '>' || c == ',')
}

/// An EventBridge event delivered by an API destination carries the registration in `detail`.
pub fn unwrap_event_envelope(v: Value) -> Value {
    match v {
        Value::Object(mut o) if o.contains_key("detail-type") && o.get("detail").is_some_and(Value::is_object) => {
            o.remove("detail").unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// A domain name as `MAIL_ALLOWED_DOMAINS` lists them (lower case, at least one dot).
pub fn valid_domain(d: &str) -> bool {
    valid_email(&format!("x@{d}")) && !d.contains('@')
}

/// Validates a registration body; `now` is Unix ms. `notify` may name the approval's email approvers and
/// addresses in `mail_allowed_domains` (`MAIL_ALLOWED_DOMAINS`). Every error names the offending field.
pub fn parse_registration(body: &[u8], now: i64, mail_allowed_domains: &[String]) -> Result<NewApproval, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| ApiError::MalformedBody(e.to_string()))?;
    let v = unwrap_event_envelope(v);
    let request_sha256 = crate::hex_sha256(v.to_string().as_bytes());
    let o = v.as_object().ok_or_else(|| ApiError::invalid("body", "must be a JSON object"))?;
    const KNOWN: &[&str] = &[
        "approvalId",
        "taskToken",
        "approvers",
        "quorum",
        "title",
        "summary",
        "details",
        "form",
        "expiresAt",
        "timeoutSeconds",
        "notify",
        "context",
        "locale",
    ];
    if let Some(k) = o.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(ApiError::invalid(k.as_str(), "is not a known field"));
    }
    let id = str_field(o, "approvalId", false)?.map(ApprovalId::parse_chosen).transpose()?;
    let token = TaskToken::parse(str_field(o, "taskToken", true)?.unwrap_or_default())?;

    let raw_approvers = match o.get("approvers") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            return Err(ApiError::invalid("approvers", "at least one approver is required"))
        }
        Some(_) => return Err(ApiError::invalid("approvers", "must be an array")),
    };
    if raw_approvers.len() > MAX_APPROVERS {
        return Err(ApiError::invalid("approvers", format!("at most {MAX_APPROVERS} approvers")));
    }
    let mut approvers: Vec<Principal> = Vec::new();
    for (i, a) in raw_approvers.iter().enumerate() {
        let at = format!("approvers[{i}]");
        let p: Principal = serde_json::from_value(a.clone())
            .map_err(|_| ApiError::invalid(&at, "must be {\"sub\": …}, {\"email\": …} or {\"group\": …}"))?;
        let p = p.normalized();
        if p.value().is_empty() || p.value().chars().count() > 256 {
            return Err(ApiError::invalid(format!("{at}.{}", p.kind()), "must be 1-256 characters"));
        }
        if matches!(&p, Principal::Email(e) if !valid_email(e)) {
            return Err(ApiError::invalid(format!("{at}.email"), "is not an email address"));
        }
        if !approvers.contains(&p) {
            approvers.push(p);
        }
    }

    let quorum = match o.get("quorum") {
        None | Some(Value::Null) => Quorum::Any,
        Some(q) => serde_json::from_value::<Quorum>(q.clone())
            .map_err(|_| ApiError::invalid("quorum", "must be \"any\", \"all\" or a positive integer"))?,
    };
    let has_group = approvers.iter().any(|p| matches!(p, Principal::Group(_)));
    if let Quorum::N(n) = quorum {
        if n as usize > approvers.len() && !has_group {
            return Err(ApiError::invalid(
                "quorum",
                format!("needs {n} approvals but only {} approvers are listed", approvers.len()),
            ));
        }
    }

    // One-line texts lose bidi/zero-width controls, which could make them render as something else.
    let title = strip_invisible(str_field(o, "title", true)?.unwrap_or_default()).trim().to_owned();
    if title.is_empty() || title.chars().count() > TITLE_MAX_CHARS {
        return Err(ApiError::invalid("title", format!("must be 1-{TITLE_MAX_CHARS} characters")));
    }
    let summary = str_field(o, "summary", false)?.unwrap_or_default().to_owned();
    if summary.chars().count() > SUMMARY_MAX_CHARS {
        return Err(ApiError::invalid("summary", format!("must be at most {SUMMARY_MAX_CHARS} characters")));
    }
    let details = obj_field(o, "details", DETAILS_MAX_BYTES)?;
    let context = obj_field(o, "context", CONTEXT_MAX_BYTES)?;
    let mut form: Vec<FormField> = match o.get("form") {
        None | Some(Value::Null) => vec![],
        Some(f @ Value::Array(_)) => {
            serde_json::from_value(f.clone()).map_err(|e| ApiError::invalid("form", e.to_string()))?
        }
        Some(_) => return Err(ApiError::invalid("form", "must be an array of fields")),
    };
    strip_form(&mut form);
    validate_form(&form)?;

    let expires_at = match (str_field(o, "expiresAt", false)?, o.get("timeoutSeconds").filter(|v| !v.is_null())) {
        (Some(_), Some(_)) => return Err(ApiError::invalid("expiresAt", "give expiresAt or timeoutSeconds, not both")),
        (None, None) => return Err(ApiError::invalid("expiresAt", "expiresAt or timeoutSeconds is required")),
        (Some(s), None) => parse_rfc3339("expiresAt", s)?,
        (None, Some(t)) => {
            let secs = t
                .as_i64()
                .filter(|s| *s > 0)
                .ok_or_else(|| ApiError::invalid("timeoutSeconds", "must be a positive integer"))?;
            now.saturating_add(secs.saturating_mul(1000))
        }
    };
    let field = if o.contains_key("expiresAt") { "expiresAt" } else { "timeoutSeconds" };
    if expires_at <= now {
        return Err(ApiError::invalid(field, "must be in the future"));
    }
    if expires_at - now > MAX_EXPIRY_MS {
        return Err(ApiError::invalid(field, "must be at most one year ahead"));
    }

    let notify = match o.get("notify") {
        None | Some(Value::Null) => approvers
            .iter()
            .filter_map(|p| match p {
                Principal::Email(e) => Some(e.clone()),
                _ => None,
            })
            .collect(),
        Some(Value::Array(a)) if a.len() <= MAX_APPROVERS => {
            let mut out = Vec::new();
            for (i, e) in a.iter().enumerate() {
                let e = e
                    .as_str()
                    .map(|e| e.trim().to_ascii_lowercase())
                    .filter(|e| valid_email(e))
                    .ok_or_else(|| ApiError::invalid(format!("notify[{i}]"), "is not an email address"))?;
                let approver = approvers.iter().any(|p| matches!(p, Principal::Email(a) if *a == e));
                let domain = e.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
                if !approver && !mail_allowed_domains.iter().any(|d| d == domain) {
                    return Err(ApiError::invalid(
                        format!("notify[{i}]"),
                        "must be one of the approvers' emails or in a domain of MAIL_ALLOWED_DOMAINS",
                    ));
                }
                if !out.contains(&e) {
                    out.push(e);
                }
            }
            out
        }
        Some(_) => {
            return Err(ApiError::invalid("notify", format!("must be an array of at most {MAX_APPROVERS} emails")))
        }
    };
    let locale = match str_field(o, "locale", false)? {
        None => None,
        Some(l @ ("en" | "ja")) => Some(l.to_owned()),
        Some(_) => return Err(ApiError::invalid("locale", "must be \"en\" or \"ja\"")),
    };
    Ok(NewApproval {
        id,
        token,
        approvers,
        quorum,
        title,
        summary,
        details,
        form,
        expires_at,
        notify,
        context,
        locale,
        request_sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000_000;

    fn base() -> Value {
        json!({"taskToken": "tok", "approvers": [{"email": "Alice@Example.com"}, {"group": "finance"}],
               "title": "Deploy v2", "timeoutSeconds": 3600})
    }

    fn field_of(v: Value) -> String {
        match parse_registration(v.to_string().as_bytes(), NOW, &[]).unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        }
    }

    fn with(k: &str, val: Value) -> Value {
        let mut b = base();
        b[k] = val;
        b
    }

    #[test]
    fn request_fingerprint_is_the_same_for_a_redelivery_and_differs_for_another_request() {
        let parse = |v: &Value, now| parse_registration(v.to_string().as_bytes(), now, &[]).unwrap().request_sha256;
        let first = parse(&base(), NOW);
        // A redelivery seconds later (timeoutSeconds counts from receipt, the request itself is unchanged).
        assert_eq!(parse(&base(), NOW + 5_000), first);
        // The same request inside an EventBridge envelope (its id and time differ per delivery).
        let event = json!({"version": "0", "id": "e1", "detail-type": "ringi.approval.requested", "detail": base()});
        assert_eq!(parse(&event, NOW), first);
        assert_ne!(parse(&with("title", json!("Deploy v3")), NOW), first);
    }

    #[test]
    fn notify_names_only_approvers_or_allowed_domains() {
        let parse = |notify: Value, allowed: &[String]| {
            parse_registration(with("notify", notify).to_string().as_bytes(), NOW, allowed).map(|a| a.notify)
        };
        // The approvers' own addresses are always fine (case does not matter).
        assert_eq!(parse(json!(["ALICE@example.com"]), &[]).unwrap(), vec!["alice@example.com"]);
        let field = |r: Result<Vec<String>, ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        };
        assert_eq!(field(parse(json!(["alice@example.com", "ops@example.org"]), &[])), "notify[1]");
        let allowed = vec!["example.org".to_owned()];
        assert_eq!(parse(json!(["ops@example.org"]), &allowed).unwrap(), vec!["ops@example.org"]);
        // A look-alike domain is not the allowed one.
        assert_eq!(field(parse(json!(["ops@example.org.evil.test"]), &allowed)), "notify[0]");
        assert_eq!(field(parse(json!(["ops@sub.example.org"]), &allowed)), "notify[0]");
    }

    #[test]
    fn minimal_registration() {
        let a = parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap();
        assert_eq!(a.expires_at, NOW + 3_600_000);
        assert_eq!(a.approvers[0], Principal::Email("alice@example.com".into()));
        assert_eq!(a.notify, vec!["alice@example.com"]);
        assert_eq!(a.quorum, Quorum::Any);
        assert!(a.id.is_none());
    }

    #[test]
    fn eventbridge_envelope_is_accepted() {
        let ev = json!({"version": "0", "detail-type": "ringi.approval", "source": "x", "detail": base()});
        assert!(parse_registration(ev.to_string().as_bytes(), NOW, &[]).is_ok());
    }

    #[test]
    fn every_rule_names_its_field() {
        let mut no_token = base();
        no_token.as_object_mut().unwrap().remove("taskToken");
        assert_eq!(field_of(no_token), "taskToken");
        assert_eq!(field_of(with("taskToken", json!("x".repeat(2049)))), "taskToken");
        assert_eq!(field_of(with("approvers", json!([]))), "approvers");
        assert_eq!(field_of(with("approvers", json!([{"role": "x"}]))), "approvers[0]");
        assert_eq!(field_of(with("approvers", json!([{"email": "nope"}]))), "approvers[0].email");
        let mut three_of_two = with("quorum", json!(3));
        three_of_two["approvers"] = json!([{"sub": "a"}, {"sub": "b"}]);
        assert_eq!(field_of(three_of_two), "quorum");
        assert_eq!(field_of(with("quorum", json!("most"))), "quorum");
        assert_eq!(field_of(with("title", json!(""))), "title");
        assert_eq!(field_of(with("title", json!("t".repeat(201)))), "title");
        assert_eq!(field_of(with("summary", json!("s".repeat(4001)))), "summary");
        assert_eq!(field_of(with("details", json!([1]))), "details");
        assert_eq!(field_of(with("details", json!({"x": "y".repeat(DETAILS_MAX_BYTES)}))), "details");
        assert_eq!(field_of(with("form", json!([{"name": "a", "label": "A", "type": "date"}]))), "form");
        assert_eq!(field_of(with("form", json!([{"name": "a b", "label": "A", "type": "text"}]))), "form[0].name");
        assert_eq!(field_of(with("timeoutSeconds", json!(0))), "timeoutSeconds");
        assert_eq!(field_of(with("timeoutSeconds", json!(400 * 86_400))), "timeoutSeconds");
        assert_eq!(field_of(with("expiresAt", json!("2020-01-01T00:00:00Z"))), "expiresAt");
        let mut past = base();
        past.as_object_mut().unwrap().remove("timeoutSeconds");
        past["expiresAt"] = json!("2020-01-01T00:00:00Z");
        assert_eq!(field_of(past), "expiresAt");
        assert_eq!(field_of(with("notify", json!(["x"]))), "notify[0]");
        assert_eq!(field_of(with("locale", json!("fr"))), "locale");
        assert_eq!(field_of(with("approvalId", json!("short"))), "approvalId");
        assert_eq!(field_of(with("approvalId", json!("openapi-idem-0001"))), "approvalId");
        assert_eq!(field_of(with("title", json!("\u{202E}\u{200B}"))), "title");
        let long_help = json!([{"name": "a", "label": "A", "type": "text", "help": "h".repeat(501)}]);
        assert_eq!(field_of(with("form", long_help)), "form[0].help");
        assert_eq!(field_of(with("bogus", json!(1))), "bogus");
    }

    #[test]
    fn one_line_fields_lose_bidi_and_zero_width_controls() {
        let b = with("title", json!("Refund \u{202E}0001$\u{202C} to \u{200B}ACME\u{FEFF}"));
        let mut b = b;
        b["form"] = json!([{"name": "r", "label": "\u{2067}Risk\u{2069}", "type": "choice",
                            "options": ["low\u{061C}", "hi\u{200E}gh"]}]);
        let a = parse_registration(b.to_string().as_bytes(), NOW, &[]).unwrap();
        assert_eq!(a.title, "Refund 0001$ to ACME");
        assert_eq!(a.form[0].label, "Risk");
        assert_eq!(a.form[0].kind, crate::form::FieldKind::Choice { options: vec!["low".into(), "high".into()] });
        let chosen = with("approvalId", json!("wf-Q2hhbmdlIHJlcXVlc3QgMQ"));
        assert_eq!(
            parse_registration(chosen.to_string().as_bytes(), NOW, &[]).unwrap().id.unwrap().as_str(),
            "wf-Q2hhbmdlIHJlcXVlc3QgMQ"
        );
    }

    #[test]
    fn n_quorum_may_exceed_listed_principals_only_with_groups() {
        let mut b = with("quorum", json!(2));
        b["approvers"] = json!([{"group": "finance"}]);
        assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_ok());
        b["approvers"] = json!([{"sub": "a"}]);
        assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_err());
    }
}

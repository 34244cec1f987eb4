//! Step-up sign-in: an approval may ask that whoever decides it signed in recently (`maxAge`), at a given
//! authentication context (`acr`) or with a second factor (`mfa`). Registration reads and bounds the
//! requirement ([`parse`]) and refuses what the configured provider cannot prove ([`check_provable`]); a
//! decision is refused with `step_up_required` unless the verified token's `auth_time`, `acr` and `amr` meet
//! it at the worker's "now" ([`check`]). The requirement never changes after registration, so checking it
//! on the loaded approval before any write is enough: nothing a concurrent request does can make it hold.

use serde_json::Value;

use crate::base::error::ApiError;
use crate::base::sign_in::{SignIn, SignInRequirement};
use crate::domain::schedule::parse_duration;

/// The shortest `maxAge`: a sign-in round trip (the provider's page, the code exchange, the click) must fit.
pub const MIN_MAX_AGE_SECS: u32 = 60;
/// The longest `maxAge`: a day. A sign-in older than that is no "fresh" sign-in any more.
pub const MAX_MAX_AGE_SECS: u32 = 86_400;
/// `acr` values one registration may list.
pub const MAX_ACR_VALUES: usize = 5;
/// Characters of one `acr` value (URNs such as `urn:okta:loa:2fa:any` are far shorter).
pub const ACR_MAX_CHARS: usize = 200;

/// RFC 8176 methods that are a factor besides a password: with a knowledge factor they make two.
const SECOND_FACTORS: [&str; 11] = ["otp", "hwk", "swk", "sms", "tel", "sc", "fpt", "face", "iris", "retina", "vbm"];
/// RFC 8176 knowledge factors.
const KNOWLEDGE: [&str; 3] = ["pwd", "pin", "kba"];

/// Which sign-in claims the configured provider's tokens can carry (the configuration says, per provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provable {
    /// `acr`.
    pub acr: bool,
    /// `amr`.
    pub amr: bool,
}

/// `requireSignIn` of a registration: `{maxAge?: ISO 8601 duration, acr?: string | [string], mfa?: bool}`, at
/// least one of them. Errors name the member (`requireSignIn.maxAge`, …).
pub fn parse(v: &Value) -> Result<SignInRequirement, ApiError> {
    let field = |m: &str| format!("requireSignIn.{m}");
    let Value::Object(o) = v else {
        return Err(ApiError::invalid("requireSignIn", "must be {\"maxAge\": \"PT5M\", \"acr\": …, \"mfa\": true}"));
    };
    if let Some(k) = o.keys().find(|k| !["maxAge", "acr", "mfa"].contains(&k.as_str())) {
        return Err(ApiError::invalid(field(k), "is not a member of requireSignIn (maxAge, acr, mfa)"));
    }
    let max_age_seconds = match o.get("maxAge") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let secs = parse_duration(&field("maxAge"), s)? / 1000;
            if !(i64::from(MIN_MAX_AGE_SECS)..=i64::from(MAX_MAX_AGE_SECS)).contains(&secs) {
                return Err(ApiError::invalid(field("maxAge"), "must be between PT1M and P1D"));
            }
            Some(secs as u32)
        }
        Some(_) => return Err(ApiError::invalid(field("maxAge"), "must be an ISO 8601 duration such as \"PT5M\"")),
    };
    let acr = match o.get("acr") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![acr_value(&field("acr"), s)?],
        Some(Value::Array(items)) if (1..=MAX_ACR_VALUES).contains(&items.len()) => items
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Value::String(s) => acr_value(&format!("requireSignIn.acr[{i}]"), s),
                _ => Err(ApiError::invalid(format!("requireSignIn.acr[{i}]"), "must be a string")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::invalid(
                field("acr"),
                format!("must be a string or an array of 1-{MAX_ACR_VALUES} strings"),
            ))
        }
    };
    let mfa = match o.get("mfa") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::invalid(field("mfa"), "must be true or false")),
    };
    let required = SignInRequirement { max_age_seconds, acr, mfa };
    if required == SignInRequirement::default() {
        return Err(ApiError::invalid("requireSignIn", "must ask for something: maxAge, acr or mfa: true"));
    }
    Ok(required)
}

/// One `acr` value: it goes into the space-separated `acr_values` parameter and into a quoted
/// `WWW-Authenticate` parameter, so printable ASCII without spaces, quotes or backslashes (URIs and URNs are).
fn acr_value(field: &str, s: &str) -> Result<String, ApiError> {
    let bad = |c: char| !c.is_ascii_graphic() || c == '"' || c == '\\';
    if s.is_empty() || s.len() > ACR_MAX_CHARS || s.chars().any(bad) {
        return Err(ApiError::invalid(
            field,
            format!("must be 1-{ACR_MAX_CHARS} printable ASCII characters without spaces, quotes or backslashes"),
        ));
    }
    Ok(s.to_owned())
}

/// Registration: a requirement the configured provider's tokens can never prove would refuse every approver,
/// so the registration is refused instead, naming the member.
pub fn check_provable(required: &SignInRequirement, provable: Provable) -> Result<(), ApiError> {
    let why = "this ringi's identity provider (Cognito) puts no such claim in its tokens: only maxAge \
               (auth_time) can be checked";
    if !required.acr.is_empty() && !provable.acr {
        return Err(ApiError::invalid("requireSignIn.acr", why));
    }
    if required.mfa && !provable.amr {
        return Err(ApiError::invalid("requireSignIn.mfa", why));
    }
    Ok(())
}

/// Does the sign-in meet the requirement at `now_ms` (the worker's clock)? A claim the token lacks meets
/// nothing; an `auth_time` ahead of "now" (the provider's clock runs ahead) counts as just now.
pub fn met(required: &SignInRequirement, signed_in: &SignIn, now_ms: i64) -> bool {
    let fresh = required.max_age_seconds.is_none_or(|max| {
        signed_in.auth_time.is_some_and(|at| now_ms.div_euclid(1000).saturating_sub(at) <= i64::from(max))
    });
    let context =
        required.acr.is_empty() || signed_in.acr.iter().chain(&signed_in.contexts).any(|a| required.acr.contains(a));
    fresh && context && (!required.mfa || two_factors(&signed_in.amr))
}

/// `amr` shows a second factor: `mfa` itself, or a knowledge factor together with another kind of factor.
fn two_factors(amr: &[String]) -> bool {
    let has = |set: &[&str]| amr.iter().any(|m| set.contains(&m.as_str()));
    amr.iter().any(|m| m == "mfa") || (has(&KNOWLEDGE) && has(&SECOND_FACTORS))
}

/// RFC 9470's challenge for a refused decision, the `WWW-Authenticate` value: `insufficient_user_authentication`
/// with `max_age` and `acr_values` as required (`mfa` has no parameter there; the JSON body says it).
pub fn challenge(required: &SignInRequirement) -> String {
    let mut out = String::from(
        "Bearer error=\"insufficient_user_authentication\", error_description=\"A fresher or stronger sign-in is required\"",
    );
    if let Some(max) = required.max_age_seconds {
        out.push_str(&format!(", max_age=\"{max}\""));
    }
    if !required.acr.is_empty() {
        // acr values hold no whitespace, quotes or controls (`acr_value`), so they need no escaping.
        out.push_str(&format!(", acr_values=\"{}\"", required.acr.join(" ")));
    }
    out
}

/// The decision's check: `step_up_required` with the requirement unless the caller's sign-in meets it.
pub fn check(required: Option<&SignInRequirement>, signed_in: &SignIn, now_ms: i64) -> Result<(), ApiError> {
    match required {
        Some(r) if !met(r, signed_in, now_ms) => Err(ApiError::StepUpRequired(r.clone())),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW_MS: i64 = 1_000_000_000;
    const NOW: i64 = NOW_MS / 1000;

    fn signed_in(auth_time: Option<i64>, acr: Option<&str>, amr: &[&str]) -> SignIn {
        SignIn {
            auth_time,
            acr: acr.map(str::to_owned),
            amr: amr.iter().map(|m| m.to_string()).collect(),
            contexts: Vec::new(),
        }
    }

    fn field(r: Result<SignInRequirement, ApiError>) -> String {
        match r {
            Err(ApiError::Invalid { field, .. }) => field,
            other => panic!("expected a 400, got {other:?}"),
        }
    }

    #[test]
    fn registration_reads_and_bounds_the_requirement() {
        let r = parse(&json!({"maxAge": "PT5M"})).unwrap();
        assert_eq!(r, SignInRequirement { max_age_seconds: Some(300), ..Default::default() });
        let r = parse(&json!({"acr": "urn:x:loa:2", "mfa": true})).unwrap();
        assert_eq!((r.acr, r.mfa, r.max_age_seconds), (vec!["urn:x:loa:2".to_owned()], true, None));
        assert_eq!(parse(&json!({"acr": ["a", "b"]})).unwrap().acr, vec!["a", "b"]);
        assert_eq!(parse(&json!({"maxAge": "PT1M"})).unwrap().max_age_seconds, Some(60));
        assert_eq!(parse(&json!({"maxAge": "P1D"})).unwrap().max_age_seconds, Some(86_400));
        for (bad, at) in [
            (json!("PT5M"), "requireSignIn"),
            (json!({}), "requireSignIn"),
            (json!({"mfa": false}), "requireSignIn"),
            (json!({"maxAge": "PT59S"}), "requireSignIn.maxAge"),
            (json!({"maxAge": "P1DT1S"}), "requireSignIn.maxAge"),
            (json!({"maxAge": "5 minutes"}), "requireSignIn.maxAge"),
            (json!({"maxAge": 300}), "requireSignIn.maxAge"),
            (json!({"acr": ""}), "requireSignIn.acr"),
            (json!({"acr": []}), "requireSignIn.acr"),
            (json!({"acr": ["a", "b", "c", "d", "e", "f"]}), "requireSignIn.acr"),
            (json!({"acr": ["ok", "two words"]}), "requireSignIn.acr[1]"),
            (json!({"acr": "a\"b"}), "requireSignIn.acr"),
            (json!({"acr": "é"}), "requireSignIn.acr"),
            (json!({"acr": [1]}), "requireSignIn.acr[0]"),
            (json!({"mfa": "yes"}), "requireSignIn.mfa"),
            (json!({"maxAge": "PT5M", "amr": ["mfa"]}), "requireSignIn.amr"),
        ] {
            assert_eq!(field(parse(&bad)), at, "{bad}");
        }
    }

    #[test]
    fn a_provider_without_acr_or_amr_takes_only_max_age() {
        let cognito = Provable { acr: false, amr: false };
        let fresh = parse(&json!({"maxAge": "PT5M"})).unwrap();
        assert!(check_provable(&fresh, cognito).is_ok());
        let strong = parse(&json!({"maxAge": "PT5M", "mfa": true})).unwrap();
        assert!(
            matches!(check_provable(&strong, cognito), Err(ApiError::Invalid { field, .. }) if field == "requireSignIn.mfa")
        );
        let acr = parse(&json!({"acr": "urn:x"})).unwrap();
        assert!(
            matches!(check_provable(&acr, cognito), Err(ApiError::Invalid { field, .. }) if field == "requireSignIn.acr")
        );
        assert!(check_provable(&strong, Provable { acr: true, amr: true }).is_ok());
    }

    #[test]
    fn max_age_counts_from_auth_time_on_the_workers_clock() {
        let r = parse(&json!({"maxAge": "PT5M"})).unwrap();
        assert!(met(&r, &signed_in(Some(NOW - 300), None, &[]), NOW_MS));
        assert!(!met(&r, &signed_in(Some(NOW - 301), None, &[]), NOW_MS));
        // The same token goes stale as the clock moves on.
        assert!(met(&r, &signed_in(Some(NOW - 10), None, &[]), NOW_MS));
        assert!(!met(&r, &signed_in(Some(NOW - 10), None, &[]), NOW_MS + 291_000));
        // A provider clock ahead of ours is "just now"; no auth_time proves nothing.
        assert!(met(&r, &signed_in(Some(NOW + 30), None, &[]), NOW_MS));
        assert!(!met(&r, &signed_in(None, None, &["mfa"]), NOW_MS));
    }

    #[test]
    fn acr_must_be_one_listed_and_mfa_two_factors() {
        let acr = parse(&json!({"acr": ["urn:a", "urn:b"]})).unwrap();
        assert!(met(&acr, &signed_in(None, Some("urn:b"), &[]), NOW_MS));
        assert!(!met(&acr, &signed_in(None, Some("urn:c"), &[]), NOW_MS));
        assert!(!met(&acr, &signed_in(None, None, &["mfa"]), NOW_MS));
        let mfa = parse(&json!({"mfa": true})).unwrap();
        for (amr, ok) in [
            (&["pwd", "mfa"][..], true),
            (&["mfa"][..], true),
            (&["pwd", "otp"][..], true),
            (&["pin", "hwk"][..], true),
            (&["pwd"][..], false),
            (&["otp"][..], false),
            (&["hwk", "swk"][..], false),
            (&[][..], false),
        ] {
            assert_eq!(met(&mfa, &signed_in(Some(NOW), None, amr), NOW_MS), ok, "{amr:?}");
        }
        // Every member must hold at once.
        let all = parse(&json!({"maxAge": "PT5M", "acr": "urn:a", "mfa": true})).unwrap();
        assert!(met(&all, &signed_in(Some(NOW - 60), Some("urn:a"), &["pwd", "mfa"]), NOW_MS));
        assert!(!met(&all, &signed_in(Some(NOW - 600), Some("urn:a"), &["pwd", "mfa"]), NOW_MS));
        assert!(!met(&all, &signed_in(Some(NOW - 60), Some("urn:a"), &["pwd"]), NOW_MS));
    }

    #[test]
    fn the_challenge_follows_rfc_9470() {
        let r = parse(&json!({"maxAge": "PT5M", "acr": ["urn:a", "urn:b"]})).unwrap();
        let c = challenge(&r);
        assert!(c.starts_with("Bearer error=\"insufficient_user_authentication\""), "{c}");
        assert!(c.ends_with(", max_age=\"300\", acr_values=\"urn:a urn:b\""), "{c}");
        assert!(!challenge(&parse(&json!({"mfa": true})).unwrap()).contains("max_age"));
    }

    #[test]
    fn the_refusal_carries_what_is_needed() {
        let r = parse(&json!({"maxAge": "PT5M"})).unwrap();
        assert!(check(None, &SignIn::default(), NOW_MS).is_ok());
        assert!(check(Some(&r), &signed_in(Some(NOW), None, &[]), NOW_MS).is_ok());
        match check(Some(&r), &signed_in(Some(NOW - 3600), None, &[]), NOW_MS) {
            Err(ApiError::StepUpRequired(needed)) => assert_eq!(needed, r),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn entras_authentication_contexts_count_as_acr() {
        let required = SignInRequirement { acr: vec!["c2".into(), "c7".into()], ..Default::default() };
        let with = |contexts: &[&str], acr: Option<&str>| SignIn {
            contexts: contexts.iter().map(|c| c.to_string()).collect(),
            ..signed_in(Some(NOW), acr, &[])
        };
        assert!(met(&required, &with(&["c1", "c7"], Some("1")), NOW_MS));
        assert!(!met(&required, &with(&["c1"], Some("1")), NOW_MS));
        assert!(!met(&required, &with(&[], None), NOW_MS));
        assert!(met(&required, &with(&[], Some("c2")), NOW_MS));
    }
}

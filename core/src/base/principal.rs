//! Who may decide: approval principals, the caller's verified identity, and the authorization rule.

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::base::error::ApiError;
use crate::base::json::{FromJson, Members, ReadError};
use crate::base::text::valid_email;

/// One entry of an approval's approver list: `{"sub": …}`, `{"email": …}` or `{"group": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Principal {
    Sub(String),
    Email(String),
    Group(String),
}

impl FromJson for Principal {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let (kind, value) =
            Members::of(v)?.only().ok_or_else(|| ReadError::new("expected one of sub, email, group"))?;
        let value = String::from_json(value).map_err(|e| ReadError::new(format!("{kind}: {e}")))?;
        match kind {
            "sub" => Ok(Self::Sub(value)),
            "email" => Ok(Self::Email(value)),
            "group" => Ok(Self::Group(value)),
            other => Err(ReadError::new(format!("unknown `{other}`, expected sub, email or group"))),
        }
    }
}

impl Principal {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sub(_) => "sub",
            Self::Email(_) => "email",
            Self::Group(_) => "group",
        }
    }

    pub fn value(&self) -> &str {
        match self {
            Self::Sub(v) | Self::Email(v) | Self::Group(v) => v,
        }
    }

    /// Storage/index form; emails compare case-insensitively, as mail systems do.
    pub fn normalized(&self) -> Self {
        match self {
            Self::Email(e) => Self::Email(e.trim().to_ascii_lowercase()),
            Self::Sub(v) => Self::Sub(v.trim().to_owned()),
            Self::Group(v) => Self::Group(v.trim().to_owned()),
        }
    }

    /// The storage key `kind:value` (`approval_principals.pkey`, `decisions.principal`).
    pub fn key(&self) -> String {
        format!("{}:{}", self.kind(), self.value())
    }

    /// Reads a [`Principal::key`] back.
    pub fn from_key(key: &str) -> Option<Self> {
        let (kind, value) = key.split_once(':')?;
        Self::from_parts(kind, value)
    }

    pub fn from_parts(kind: &str, value: &str) -> Option<Self> {
        match kind {
            "sub" => Some(Self::Sub(value.to_owned())),
            "email" => Some(Self::Email(value.to_owned())),
            "group" => Some(Self::Group(value.to_owned())),
            _ => None,
        }
    }
}

/// Principals as one line ("a@x.example, group:ops"): how mail and chat name the requesters.
pub fn joined(principals: &[Principal]) -> String {
    principals.iter().map(Principal::value).collect::<Vec<_>>().join(", ")
}

/// The caller as established by a verified JWT; never built from anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub sub: String,
    /// Present only when the token says `email_verified: true`.
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub username: Option<String>,
    /// OAuth scopes of an access token (client-credentials registration).
    pub scopes: Vec<String>,
    /// `client_id` (access) or `aud` (id) of the token.
    pub client_id: String,
    /// How and when the person signed in (`auth_time`, `acr`, `amr`): what `requireSignIn` is checked against.
    pub sign_in: crate::base::sign_in::SignIn,
}

impl Identity {
    /// Every principal this caller answers to, normalized: the inbox queries exactly these.
    pub fn principals(&self) -> Vec<Principal> {
        let mut out = vec![Principal::Sub(self.sub.clone())];
        if let Some(email) = &self.email {
            out.push(Principal::Email(email.clone()).normalized());
        }
        out.extend(self.groups.iter().map(|g| Principal::Group(g.clone())));
        out
    }

    /// The authorization rule: the caller decides if any of its principals is listed.
    pub fn is_approver(&self, listed: &[Principal]) -> bool {
        let mine = self.principals();
        listed.iter().map(Principal::normalized).any(|p| mine.contains(&p))
    }
}

/// The most approvers one approval lists.
pub const MAX_APPROVERS: usize = 50;

/// An approval's approvers as listed: 1 to [`MAX_APPROVERS`], each [`checked_principal`], duplicates dropped.
pub fn approvers(raw: Option<Vec<Principal>>) -> Result<Vec<Principal>, ApiError> {
    let raw = raw.filter(|a| !a.is_empty());
    let raw = raw.ok_or_else(|| ApiError::invalid("approvers", "at least one approver is required"))?;
    if raw.len() > MAX_APPROVERS {
        return Err(ApiError::invalid("approvers", format!("at most {MAX_APPROVERS} approvers")));
    }
    let mut out: Vec<Principal> = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let p = checked_principal(&format!("approvers[{i}]"), p)?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// One principal, normalized, or the 400 that names it (`field` is its path: `approvers[1]`, `escalation.to[0]`,
/// `to`).
pub fn checked_principal(field: &str, p: &Principal) -> Result<Principal, ApiError> {
    let p = p.normalized();
    if p.value().is_empty() || p.value().chars().count() > 256 {
        return Err(ApiError::invalid(format!("{field}.{}", p.kind()), "must be 1-256 characters"));
    }
    if matches!(&p, Principal::Email(e) if !valid_email(e)) {
        return Err(ApiError::invalid(format!("{field}.email"), "is not an email address"));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Identity {
        Identity {
            sub: "sub-alice".into(),
            email: Some("Alice@Example.com".into()),
            groups: vec!["finance".into()],
            username: Some("alice".into()),
            scopes: vec![],
            client_id: "c".into(),
            sign_in: Default::default(),
        }
    }

    #[test]
    fn wire_shape_is_single_key_objects() {
        let p: Vec<Principal> = serde_json::from_str(r#"[{"sub":"a"},{"email":"b@x"},{"group":"g"}]"#).unwrap();
        assert_eq!(p, vec![Principal::Sub("a".into()), Principal::Email("b@x".into()), Principal::Group("g".into())]);
        assert!(serde_json::from_str::<Principal>(r#"{"role":"x"}"#).is_err());
        let p = Principal::Email("a@x:y".into());
        assert_eq!((p.key().as_str(), Principal::from_key(&p.key())), ("email:a@x:y", Some(p)));
        assert_eq!(Principal::from_key("role:x"), None);
    }

    #[test]
    fn matches_by_sub_email_or_group() {
        let a = alice();
        assert!(a.is_approver(&[Principal::Sub("sub-alice".into())]));
        assert!(a.is_approver(&[Principal::Email("alice@example.COM".into())]));
        assert!(a.is_approver(&[Principal::Group("finance".into())]));
        assert!(!a.is_approver(&[Principal::Group("Finance".into())]), "groups are case-sensitive");
        assert!(!a.is_approver(&[Principal::Sub("sub-bob".into()), Principal::Email("bob@example.com".into())]));
        assert!(!a.is_approver(&[]));
    }

    #[test]
    fn unverified_email_never_matches() {
        let mut a = alice();
        a.email = None;
        assert!(!a.is_approver(&[Principal::Email("alice@example.com".into())]));
    }
}

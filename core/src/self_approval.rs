//! Separation of duty: the people who asked for an approval (`requestedBy`) may see it but not decide it,
//! unless the registration says `allowSelfApproval: true`. A requester is a person, named by `sub` or by
//! email; a caller is one when a verified claim matches (its `sub`, or its email when `email_verified`).

use crate::approval::Quorum;
use crate::error::ApiError;
use crate::principal::{Identity, Principal};

/// Requesters one registration may name.
pub const MAX_REQUESTERS: usize = 10;

/// `requestedBy` checked: people only (`{sub}` or `{email}`), normalized, without repeats.
pub fn requesters(raw: Option<Vec<Principal>>) -> Result<Vec<Principal>, ApiError> {
    let raw = raw.unwrap_or_default();
    if raw.len() > MAX_REQUESTERS {
        return Err(ApiError::invalid("requestedBy", format!("at most {MAX_REQUESTERS} requesters")));
    }
    let mut out: Vec<Principal> = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let p = p.normalized();
        if matches!(p, Principal::Group(_)) {
            return Err(ApiError::invalid(
                format!("requestedBy[{i}]"),
                "a requester is a person: {\"sub\": …} or {\"email\": …}",
            ));
        }
        if p.value().is_empty() || p.value().chars().count() > 256 {
            return Err(ApiError::invalid(format!("requestedBy[{i}].{}", p.kind()), "must be 1-256 characters"));
        }
        if matches!(&p, Principal::Email(e) if !crate::register::valid_email(e)) {
            return Err(ApiError::invalid(format!("requestedBy[{i}].email"), "is not an email address"));
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Can a listed approver principal be satisfied by someone who is not a requester? A group can (it has other
/// members); a `sub` or an email only when it is not a requester's own. (A `sub` approver may still turn
/// out to be an email requester at decision time: that person is refused then, and the registration cannot
/// know.)
pub fn eligible(approver: &Principal, requesters: &[Principal]) -> bool {
    let approver = approver.normalized();
    matches!(approver, Principal::Group(_)) || !requesters.contains(&approver)
}

/// With the requesters excluded, can the quorum still be reached? `all`: every listed principal must be
/// satisfiable by a non-requester; `n`: n of them (unless a group is among the eligible ones, whose size
/// ringi does not know); `any`: one. Errors name `requestedBy`, the field that makes an otherwise valid
/// list of approvers unreachable.
pub fn check_reachable(approvers: &[Principal], requesters: &[Principal], quorum: Quorum) -> Result<(), ApiError> {
    let refuse = |m: String| -> Result<(), ApiError> { Err(ApiError::invalid("requestedBy", m)) };
    let hint = "(a requester cannot approve their own request; allowSelfApproval: true lifts this)";
    let open: Vec<&Principal> = approvers.iter().filter(|p| eligible(p, requesters)).collect();
    if quorum == Quorum::All {
        if let Some(i) = approvers.iter().position(|p| !eligible(p, requesters)) {
            return refuse(format!("excludes approvers[{i}], but quorum \"all\" needs every listed approver {hint}"));
        }
        return Ok(());
    }
    let needed = quorum.required(approvers.len()) as usize;
    let has_group = open.iter().any(|p| matches!(p, Principal::Group(_)));
    if open.len() < needed && !has_group {
        return refuse(format!("leaves {} eligible approvers, but the quorum needs {needed} {hint}", open.len()));
    }
    Ok(())
}

/// Is this verified caller one of the requesters?
pub fn is_requester(who: &Identity, requesters: &[Principal]) -> bool {
    let mine = who.principals();
    requesters.iter().map(Principal::normalized).any(|p| !matches!(p, Principal::Group(_)) && mine.contains(&p))
}

/// Why this caller, an approver, may not decide: they asked for it themselves.
pub fn refusal(who: &Identity, requesters: &[Principal], allow_self_approval: bool) -> Option<ApiError> {
    (!allow_self_approval && is_requester(who, requesters)).then_some(ApiError::SelfApproval)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(s: &str) -> Principal {
        Principal::Sub(s.into())
    }
    fn email(s: &str) -> Principal {
        Principal::Email(s.into())
    }
    fn group(s: &str) -> Principal {
        Principal::Group(s.into())
    }
    fn person(s: &str, mail: Option<&str>, groups: &[&str]) -> Identity {
        Identity {
            sub: s.into(),
            email: mail.map(Into::into),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            username: None,
            scopes: vec![],
            client_id: "c".into(),
        }
    }
    fn field(r: Result<(), ApiError>) -> String {
        match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn requesters_are_people_normalized_once() {
        let got = requesters(Some(vec![email(" Al@Example.com"), sub("a"), email("al@example.com")])).unwrap();
        assert_eq!(got, vec![email("al@example.com"), sub("a")]);
        assert!(
            matches!(requesters(Some(vec![group("eng")])), Err(ApiError::Invalid { field, .. }) if field == "requestedBy[0]")
        );
        assert!(
            matches!(requesters(Some(vec![sub("a"), email("nope")])), Err(ApiError::Invalid { field, .. }) if field == "requestedBy[1].email")
        );
        assert!(requesters(Some((0..11).map(|i| sub(&i.to_string())).collect())).is_err());
        assert_eq!(requesters(None).unwrap(), vec![]);
    }

    #[test]
    fn a_group_stays_eligible_a_requesters_own_principal_does_not() {
        let req = [sub("alice"), email("alice@example.com")];
        assert!(eligible(&group("finance"), &req));
        assert!(!eligible(&sub("alice"), &req));
        assert!(!eligible(&email("ALICE@example.com"), &req), "emails compare case-insensitively");
        assert!(eligible(&sub("bob"), &req));
    }

    #[test]
    fn the_quorum_must_stay_reachable_without_the_requesters() {
        let req = [sub("alice")];
        // any: someone else is listed.
        assert!(check_reachable(&[sub("alice"), sub("bob")], &req, Quorum::Any).is_ok());
        assert_eq!(field(check_reachable(&[sub("alice")], &req, Quorum::Any)), "requestedBy");
        // all: every listed principal must be satisfiable by a non-requester.
        assert_eq!(field(check_reachable(&[sub("alice"), sub("bob")], &req, Quorum::All)), "requestedBy");
        assert!(check_reachable(&[group("finance"), sub("bob")], &req, Quorum::All).is_ok());
        // n: n eligible, or a group among the eligible ones.
        assert_eq!(field(check_reachable(&[sub("alice"), sub("bob")], &req, Quorum::N(2))), "requestedBy");
        assert!(check_reachable(&[sub("alice"), sub("bob"), sub("carol")], &req, Quorum::N(2)).is_ok());
        assert!(check_reachable(&[sub("alice"), group("finance")], &req, Quorum::N(2)).is_ok());
        // An email approver equal to a requester's email is the requester.
        let by_mail = [email("pat@example.com")];
        assert_eq!(field(check_reachable(&[email("pat@example.com")], &by_mail, Quorum::Any)), "requestedBy");
    }

    #[test]
    fn a_requester_is_matched_by_verified_claims_only() {
        let req = [sub("alice"), email("pat@example.com")];
        assert!(is_requester(&person("alice", None, &[]), &req));
        assert!(is_requester(&person("p2", Some("Pat@Example.com"), &[]), &req));
        // Without email_verified there is no email claim to match (Identity never carries an unverified one).
        assert!(!is_requester(&person("p2", None, &[]), &req));
        assert!(!is_requester(&person("bob", None, &["alice"]), &req), "a group name is not a person");
        assert_eq!(refusal(&person("alice", None, &[]), &req, false), Some(ApiError::SelfApproval));
        assert_eq!(refusal(&person("alice", None, &[]), &req, true), None);
        assert_eq!(refusal(&person("bob", None, &[]), &req, false), None);
    }
}

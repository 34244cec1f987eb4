//! Separation of duty: the people who asked for an approval (`requestedBy`) may see it but not decide it,
//! unless the registration says `allowSelfApproval: true`. A requester is a person, named by `sub` or by
//! email; a caller is one when a verified claim matches (its `sub`, or its email when `email_verified`).

use crate::base::error::ApiError;
use crate::base::principal::{Identity, Principal};
use crate::domain::quorum::Quorum;

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
        if matches!(&p, Principal::Email(e) if !crate::base::text::valid_email(e)) {
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

/// Who asked for an approval, as the rules need it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requesters<'a> {
    pub principals: &'a [Principal],
    pub allow_self_approval: bool,
}

impl Requesters<'_> {
    /// Could `people` (one person's principals; `email_known`: whether one of them is their verified email)
    /// be a requester? A requester named by email cannot be ruled out for a person whose email is unknown.
    pub fn may_include(&self, people: &[Principal], email_known: bool) -> bool {
        if self.allow_self_approval {
            return false;
        }
        let named = self.principals.iter().map(Principal::normalized).any(|r| people.contains(&r));
        named || (!email_known && self.principals.iter().any(|r| matches!(r, Principal::Email(_))))
    }
}

/// The caller's person principals (sub and verified email: never groups, which are not people).
pub fn person(who: &Identity) -> Vec<Principal> {
    who.principals().into_iter().filter(|p| !matches!(p, Principal::Group(_))).collect()
}

/// Why this caller may not decide: they asked for it themselves, or — with a requester named by email and
/// no verified email of theirs — nobody can tell that they did not (fails closed). The rule is
/// [`Requesters::may_include`] (the guard the decision commits under is `crate::domain::rules::requester_guard`);
/// this is its answer for the approval view and the decision path.
pub fn refusal(who: &Identity, requesters: &[Principal], allow_self_approval: bool) -> Option<ApiError> {
    let r = Requesters { principals: requesters, allow_self_approval };
    r.may_include(&person(who), who.email.is_some()).then_some(ApiError::SelfApproval)
}

/// Registration: requesters named by email are only enforceable where callers' emails can be verified. A
/// configuration whose tokens never carry a verified email (`email_verifiable` false: Cognito access tokens)
/// would refuse every approver of such a request, so the registration is refused instead, naming the field.
pub fn check_enforceable(
    requesters: &[Principal],
    allow_self_approval: bool,
    email_verifiable: bool,
) -> Result<(), ApiError> {
    if allow_self_approval || email_verifiable {
        return Ok(());
    }
    match requesters.iter().position(|p| matches!(p, Principal::Email(_))) {
        Some(i) => Err(ApiError::invalid(
            format!("requestedBy[{i}].email"),
            "this ringi's sign-in tokens carry no verified email (TOKEN_USE=access), so a requester named by email \
             cannot be told apart from an approver: name the requester by {\"sub\": …}",
        )),
        None => Ok(()),
    }
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
            sign_in: Default::default(),
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
    fn a_requester_is_matched_by_verified_claims_and_an_unknown_email_fails_closed() {
        let req = [sub("alice"), email("pat@example.com")];
        let refused = |who: &Identity| refusal(who, &req, false) == Some(ApiError::SelfApproval);
        assert!(refused(&person("alice", Some("a@example.com"), &[])));
        assert!(refused(&person("p2", Some("Pat@Example.com"), &[])));
        // Without a verified email, p2 may be pat: refused.
        assert!(refused(&person("p2", None, &[])));
        assert!(!refused(&person("bob", Some("bob@example.com"), &["alice"])), "a group name is not a person");
        assert_eq!(refusal(&person("alice", None, &[]), &req, true), None);
        // Requesters named by sub only: an unknown email does not matter.
        assert_eq!(refusal(&person("bob", None, &[]), &[sub("alice")], false), None);
    }

    #[test]
    fn email_named_requesters_need_verifiable_emails() {
        let req = [sub("alice"), email("pat@example.com")];
        assert_eq!(field(check_enforceable(&req, false, false)), "requestedBy[1].email");
        assert!(check_enforceable(&req, true, false).is_ok());
        assert!(check_enforceable(&req, false, true).is_ok());
        assert!(check_enforceable(&[sub("alice")], false, false).is_ok());
    }
}

//! Whom ringi mails about an approval: the rule every request that names an address is checked against, and
//! the mailer applies once more at send time (`crate::adapters::mail` writes the mails).

use crate::base::error::ApiError;
use crate::base::principal::Principal;

/// What a refused recipient's 400 says.
pub const NOT_MAILABLE: &str = "is mailed by ringi, so it must be one of the approval's approvers' emails or in a \
                                domain of MAIL_ALLOWED_DOMAINS";

/// The one rule for whom ringi mails about an approval (the request, reminders, the escalation, a hand-over to a
/// delegate, an out-of-office stand-in or a principal an operator added): `to` must be the email of one of the
/// approval's own principals (`known`: its listed email approvers, or at send time the recipients its
/// registration was allowed) or in a domain of `MAIL_ALLOWED_DOMAINS` (`allowed_domains`, lower case; the
/// domain itself, not its subdomains). With no allowed domain, only the approval's own addresses: so that
/// nobody who can register, delegate or reassign can make the organisation's sender write to anyone else.
pub fn may_mail(to: &str, known: &[String], allowed_domains: &[String]) -> bool {
    let to = to.trim().to_ascii_lowercase();
    let domain = to.rsplit_once('@').map_or("", |(_, d)| d);
    known.iter().any(|k| k.trim().eq_ignore_ascii_case(&to)) || allowed_domains.iter().any(|d| d == domain)
}

/// The emails among principals, normalized: the addresses [`may_mail`] knows as an approval's own.
pub fn emails_of(principals: &[Principal]) -> Vec<String> {
    principals
        .iter()
        .filter_map(|p| match p.normalized() {
            Principal::Email(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// [`may_mail`] for an address an API request gives (`field` names it), against the approval's listed
/// principals `listed`: the 400 that names it when it may not be mailed.
pub fn check_address(field: &str, to: &str, listed: &[Principal], allowed_domains: &[String]) -> Result<(), ApiError> {
    match may_mail(to, &emails_of(listed), allowed_domains) {
        true => Ok(()),
        false => Err(ApiError::invalid(field, NOT_MAILABLE)),
    }
}

/// [`check_address`] for a principal (`field`: `to`, `delegate`, `escalation.to[0]` …; the 400 names
/// `field.email`). A `{sub}` or `{group}` is never mailed (it finds the approval in its inbox): always fine.
pub fn check_principal(
    field: &str,
    p: &Principal,
    listed: &[Principal],
    allowed_domains: &[String],
) -> Result<(), ApiError> {
    match p {
        Principal::Email(e) => check_address(&format!("{field}.email"), e, listed, allowed_domains),
        Principal::Sub(_) | Principal::Group(_) => Ok(()),
    }
}

/// [`check_principal`] for each of a list (`field`: `approvers` → `approvers[1].email`): an operator's new
/// listed principals, checked against the approval's listed ones before the change.
pub fn check_principals(
    field: &str,
    ps: &[Principal],
    listed: &[Principal],
    allowed_domains: &[String],
) -> Result<(), ApiError> {
    ps.iter().enumerate().try_for_each(|(i, p)| check_principal(&format!("{field}[{i}]"), p, listed, allowed_domains))
}

/// At send time, the same rule once more (should an address have been stored before it applied, or reach the
/// mailer by another path): the recipients that may be mailed, and how many were dropped. `registered`: the
/// recipients the approval's registration was allowed (its stored `notify`).
pub fn mailable(recipients: &[String], registered: &[String], allowed_domains: &[String]) -> (Vec<String>, usize) {
    let (ok, refused): (Vec<String>, Vec<String>) =
        recipients.iter().cloned().partition(|to| may_mail(to, registered, allowed_domains));
    (ok, refused.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_goes_to_the_approvals_own_addresses_or_allowed_domains_only() {
        let listed = [
            Principal::Email("Alice@Example.com".into()),
            Principal::Sub("bob".into()),
            Principal::Group("finance".into()),
        ];
        let known = emails_of(&listed);
        assert_eq!(known, ["alice@example.com"]);
        let none: &[String] = &[];
        // No allowed domain: the approval's own addresses only (case does not matter).
        assert!(may_mail(" ALICE@example.com", &known, none));
        assert!(!may_mail("carol@example.com", &known, none));
        let allowed = ["example.org".to_owned()];
        assert!(may_mail("ops@example.org", &known, &allowed) && may_mail("Ops@EXAMPLE.org", &[], &allowed));
        // The domain itself: neither a subdomain nor a look-alike, nor a local part that names it.
        for bad in ["ops@sub.example.org", "ops@example.org.evil.test", "example.org@evil.test", "ops@", ""] {
            assert!(!may_mail(bad, &known, &allowed), "{bad}");
        }
        let field = |r: Result<(), ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, message } => (field, message),
            e => panic!("{e:?}"),
        };
        assert_eq!(
            field(check_principal("to", &Principal::Email("x@evil.test".into()), &listed, &allowed)).0,
            "to.email"
        );
        assert_eq!(
            field(check_address("notify[2]", "x@evil.test", &listed, &allowed)),
            ("notify[2]".into(), NOT_MAILABLE.into())
        );
        // A {sub} or {group} is never mailed: always fine.
        assert!(check_principal("delegate", &Principal::Sub("x@evil.test".into()), &[], &[]).is_ok());
        assert!(check_principal("delegate", &Principal::Group("ops".into()), &[], &[]).is_ok());
        let new = [
            Principal::Email("alice@example.com".into()),
            Principal::Sub("s".into()),
            Principal::Email("z@evil.test".into()),
        ];
        assert_eq!(field(check_principals("approvers", &new, &listed, &allowed)).0, "approvers[2].email");
        assert!(check_principals("approvers", &new[..2], &listed, &[]).is_ok());
    }

    #[test]
    fn the_mailer_drops_recipients_the_rule_refuses() {
        let registered = vec!["alice@example.com".to_owned()];
        let to = ["alice@example.com", "ops@example.org", "x@evil.test", "y@evil.test"].map(String::from);
        assert_eq!(mailable(&to, &registered, &["example.org".into()]), (vec![to[0].clone(), to[1].clone()], 2));
        assert_eq!(mailable(&to, &registered, &[]), (vec![to[0].clone()], 3));
        assert_eq!(mailable(&[], &registered, &[]), (vec![], 0));
    }
}

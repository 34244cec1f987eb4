//! The D1 (SQLite) form of the rules' [`Guard`]s: one SQL condition a statement's `WHERE` carries, so that a
//! change decided in `crate::domain::rules` commits only while what it was decided on still holds.

use super::{SqlArg, SqlCond};
use crate::base::principal::Principal;
use crate::domain::rules::Guard;

fn keys(ps: &[Principal]) -> String {
    serde_json::Value::from(ps.iter().map(|p| p.normalized().key()).collect::<Vec<_>>()).to_string()
}

/// `guards` over the approval `id`, as one condition (`1` when there are none). Parameters are numbered from
/// `?{first}` on, each used: D1 refuses a bound value a statement does not use.
pub fn guards_sql(id: &str, guards: &[Guard], first: usize) -> SqlCond {
    let mut args = vec![SqlArg::Text(id.to_owned())];
    let idp = format!("?{first}");
    let mut param = |v: SqlArg| {
        args.push(v);
        format!("?{}", first + args.len() - 1)
    };
    let mut parts = Vec::new();
    for (n, g) in guards.iter().enumerate() {
        let t = format!("guard{n}");
        parts.push(match g {
            Guard::Decidable { now } => {
                let now = param(SqlArg::Int(*now));
                format!(
                    "EXISTS (SELECT 1 FROM approvals {t} WHERE {t}.id = {idp} AND {t}.task_token IS NOT NULL
                       AND {t}.expires_at > {now}
                       AND ({t}.status = 'pending' OR ({t}.status = 'claimed' AND {t}.claimed_until <= {now})))"
                )
            }
            Guard::Holds { seat } => {
                let k = param(SqlArg::Text(seat.normalized().key()));
                format!(
                    "EXISTS (SELECT 1 FROM approval_principals {t} WHERE {t}.approval_id = {idp} AND {t}.pkey = {k}
                       AND {t}.delegated_to IS NULL)"
                )
            }
            Guard::NotSeated { principal } => {
                let k = param(SqlArg::Text(principal.normalized().key()));
                format!(
                    "NOT EXISTS (SELECT 1 FROM approval_principals {t} WHERE {t}.approval_id = {idp} AND {t}.pkey = {k})"
                )
            }
            Guard::NotRequester { people, email_unknown } => {
                let ks = param(SqlArg::Text(keys(people)));
                let by_email = if *email_unknown {
                    format!(" AND NOT EXISTS (SELECT 1 FROM json_each({t}.requested_by_json) r WHERE r.value LIKE 'email:%')")
                } else {
                    String::new()
                };
                format!(
                    "EXISTS (SELECT 1 FROM approvals {t} WHERE {t}.id = {idp} AND ({t}.allow_self_approval = 1 OR (
                       NOT EXISTS (SELECT 1 FROM json_each({t}.requested_by_json) r
                         WHERE r.value IN (SELECT value FROM json_each({ks}))){by_email})))"
                )
            }
            Guard::NotVoted { sub } => {
                let v = param(SqlArg::Text(sub.clone()));
                format!("NOT EXISTS (SELECT 1 FROM decisions {t} WHERE {t}.approval_id = {idp} AND {t}.sub = {v})")
            }
            Guard::Unsatisfied { slot } => {
                let k = param(SqlArg::Text(slot.normalized().key()));
                format!(
                    "NOT EXISTS (SELECT 1 FROM decisions {t} WHERE {t}.approval_id = {idp}
                       AND {t}.decision = 'approve' AND {t}.principal = {k})"
                )
            }
            Guard::Satisfied { at_least } => {
                let k = param(SqlArg::Int(i64::from(*at_least)));
                format!(
                    "(SELECT COUNT(DISTINCT {t}.principal) FROM decisions {t} WHERE {t}.approval_id = {idp}
                       AND {t}.decision = 'approve') >= {k}"
                )
            }
            Guard::FreeFor { slot, sub } => {
                let k = param(SqlArg::Text(slot.normalized().key()));
                let v = param(SqlArg::Text(sub.clone()));
                format!(
                    "NOT EXISTS (SELECT 1 FROM decisions {t} WHERE {t}.approval_id = {idp}
                       AND {t}.decision = 'approve' AND {t}.principal = {k} AND {t}.sub != {v})"
                )
            }
            Guard::Uncounted { email, sub } => {
                let e = param(SqlArg::Text(email.to_lowercase()));
                let v = param(SqlArg::Text(sub.clone()));
                format!(
                    "NOT EXISTS (SELECT 1 FROM decisions {t} WHERE {t}.approval_id = {idp}
                       AND {t}.decision = 'approve' AND lower({t}.email) = {e} AND {t}.sub != {v})"
                )
            }
        });
    }
    if parts.is_empty() {
        // The id parameter must still be used.
        parts.push(format!("{idp} IS NOT NULL"));
    }
    SqlCond { sql: parts.join("\n AND "), args }
}

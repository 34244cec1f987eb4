//! Out-of-office routing as D1 makes it: the statements of a registration's batch (after its principal rows)
//! that carry out `crate::domain::rules::route` without a round trip of their own. Parameters of every statement: ?1
//! the approval id, ?2 now (its `created_at`), ?3 the task token's fingerprint, ?4 the request hash — only the
//! approval this very request created is routed, so a redelivery changes nothing. `tests/sql_routing.rs` holds
//! their outcome equal to `rules::route` over generated cases.

use super::EVENT_INSERT;
use crate::domain::audit::{Actor, EventKind};

/// The approval of this very request.
const FRESH: &str = "EXISTS (SELECT 1 FROM approvals a WHERE a.id = ?1 AND a.token_sha256 = ?3
     AND a.request_sha256 = ?4 AND a.created_at = ?2)";

/// The absences that route the listed row `approval_principals`: its person (by sub, or by the verified email
/// the absence was set with) is away at ?2; the stand-in has no seat yet; and — unless self-approval is
/// allowed — neither the absent person (by any of their principals) nor the stand-in is a requester.
const AWAY: &str = "FROM out_of_office o WHERE o.starts_at <= ?2 AND o.ends_at > ?2
     AND ((approval_principals.kind = 'sub' AND o.sub = approval_principals.value)
       OR (approval_principals.kind = 'email' AND o.email = approval_principals.value))
     AND o.delegate NOT IN (SELECT x.pkey FROM approval_principals x WHERE x.approval_id = ?1)
     AND NOT EXISTS (SELECT 1 FROM approvals r, json_each(r.requested_by_json) q
       WHERE r.id = ?1 AND r.allow_self_approval = 0 AND (q.value = o.delegate OR q.value = approval_principals.pkey
         OR q.value = 'sub:' || o.sub OR q.value = 'email:' || o.email))";

/// The routing statements, in batch order.
pub fn routing_sql() -> [String; 4] {
    let stand_in = |col: &str| format!("substr(l.delegated_to, {col})");
    [
        format!(
            "UPDATE approval_principals SET delegated_to = (SELECT o.delegate {AWAY} ORDER BY o.updated_at DESC LIMIT 1)
             WHERE approval_id = ?1 AND depth = 0 AND delegated_to IS NULL AND kind IN ('sub', 'email')
               AND {FRESH} AND EXISTS (SELECT 1 {AWAY})"
        ),
        format!(
            "INSERT INTO approval_principals (approval_id, kind, value, pkey, open, sort_at, slot, depth, routed,
               delegated_by)
             SELECT ?1, {}, {}, l.delegated_to, 1, l.sort_at, l.pkey, 1, 1, l.value
             FROM approval_principals l WHERE l.approval_id = ?1 AND l.depth = 0 AND l.delegated_to IS NOT NULL
               AND {FRESH}
             ORDER BY l.rowid
             ON CONFLICT DO NOTHING",
            stand_in("1, instr(l.delegated_to, ':') - 1"),
            stand_in("instr(l.delegated_to, ':') + 1"),
        ),
        // Two absent approvers with the same stand-in: it takes the first slot; the other stays with its approver.
        format!(
            "UPDATE approval_principals SET delegated_to = NULL
             WHERE approval_id = ?1 AND depth = 0 AND delegated_to IS NOT NULL AND {FRESH}
               AND NOT EXISTS (SELECT 1 FROM approval_principals d WHERE d.approval_id = ?1
                 AND d.pkey = approval_principals.delegated_to AND d.slot = approval_principals.pkey)"
        ),
        format!(
            "{EVENT_INSERT} SELECT ?1, ?2, '{kind}', '{actor}', NULL,
               json_object('from', json_object(l.kind, l.value), 'to', json_object(d.kind, d.value)),
               ?1 || ':' || ?2 || ':routed:' || l.pkey
             FROM approval_principals l JOIN approval_principals d
               ON d.approval_id = l.approval_id AND d.slot = l.pkey AND d.routed = 1
             WHERE l.approval_id = ?1 AND l.depth = 0 AND {FRESH}",
            kind = EventKind::Routed.as_str(),
            actor = Actor::System.key(),
        ),
    ]
}

/// The slots routing handed on: rows of (`slot`, `pkey`) = (absent approver, stand-in), parameter ?1 the id.
pub const ROUTED_SQL: &str =
    "SELECT slot, pkey FROM approval_principals WHERE approval_id = ?1 AND routed = 1 ORDER BY rowid";

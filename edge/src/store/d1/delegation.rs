//! Delegation, out-of-office routing and reassignment (`ringi_core::domain::delegation`): the writes that move a slot
//! between seats of `approval_principals`, each in one batch with its event, every statement conditional (a
//! retried batch, or a race lost, changes nothing twice).

use ringi_core::base::principal::Principal;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::delegation::{principal_value, OutOfOfficeRequest};
use ringi_core::domain::rules::{Handover, Reassignment};
use ringi_core::sql::guards_sql;
use ringi_core::sql::routing::{routing_sql, ROUTED_SQL};
use ringi_core::{ApiError, ApprovalId};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::events::{event_stmt_if, guarded_event_stmt, recorded_sql};
use super::{arg, n, opt, s, D1Store, Stmt};
use crate::error::OrInternal;
use crate::store::port::records::OutOfOfficeRow;
use crate::store::port::rows::Loaded;

#[derive(Deserialize)]
struct Done {
    done: f64,
}

#[derive(Deserialize)]
struct DelegatedTo {
    delegated_to: Option<String>,
}

fn detail(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Out-of-office routing in the registration's batch (`ringi_core::sql::routing`: `rules::route` made in SQL,
/// so that routing costs no round trip).
pub(super) fn routing_stmts(id: &ApprovalId, now: i64, token_sha256: &str, request_sha256: &str) -> Vec<Stmt> {
    let args = || vec![s(id.as_str()), n(now), s(token_sha256), s(request_sha256)];
    routing_sql().into_iter().map(|sql| Stmt::new(sql, args())).collect()
}

/// The slots routing handed on (see [`read_routed`]).
pub(super) fn routed_stmt(id: &ApprovalId) -> Stmt {
    Stmt::new(ROUTED_SQL, vec![s(id.as_str())])
}

#[derive(Deserialize)]
struct RoutedRow {
    slot: String,
    pkey: String,
}

/// (absent approver, stand-in) of each routed slot.
pub(super) fn read_routed(result: &worker::D1Result) -> Result<Vec<(Principal, Principal)>, ApiError> {
    let rows = result.results::<RoutedRow>().internal("D1 routed rows")?;
    let key = |k: &str| Principal::from_key(k).ok_or(ApiError::Internal);
    rows.iter().map(|r| Ok((key(&r.slot)?, key(&r.pkey)?))).collect()
}

impl D1Store {
    /// Hands the seat `h.from` on to `h.to` (a new seat for `h.slot` at `h.depth`) with its `delegated` event,
    /// in one batch, under the hand-over's guards (`ringi_core::domain::rules::delegate`): nothing is written unless
    /// all of them still hold. `true` when the seat is handed to `h.to` now (also when an earlier try of this
    /// very batch did it).
    pub async fn delegate(
        &self,
        a: &Loaded,
        h: &Handover,
        actor: &Actor,
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError> {
        let id = &a.approval.id;
        let by = actor.display().unwrap_or_default();
        let guard = guards_sql(id.as_str(), &h.guards, 3);
        let mut args = vec![s(&h.to.key()), s(&h.from.key())];
        args.extend(guard.args.iter().map(arg));
        let hand_on = Stmt::new(
            format!(
                "UPDATE approval_principals SET delegated_to = ?1
                 WHERE approval_id = ?3 AND pkey = ?2 AND delegated_to IS NULL AND {}",
                guard.sql
            ),
            args,
        );
        let seat = Stmt::new(
            "INSERT INTO approval_principals (approval_id, kind, value, pkey, open, sort_at, slot, depth, delegated_by,
               note)
             SELECT ?1, ?2, ?3, ?4, f.open, f.sort_at, ?5, ?6, ?7, ?8 FROM approval_principals f
             WHERE f.approval_id = ?1 AND f.pkey = ?9 AND f.delegated_to = ?4 AND changes() = 1
             ON CONFLICT DO NOTHING",
            vec![
                s(id.as_str()),
                s(h.to.kind()),
                s(h.to.value()),
                s(&h.to.key()),
                s(&h.slot.key()),
                n(i64::from(h.depth)),
                s(by),
                opt(note),
                s(&h.from.key()),
            ],
        );
        let d = detail(json!({
            "from": principal_value(&h.from),
            "to": principal_value(&h.to),
            "slot": principal_value(&h.slot),
            "depth": h.depth,
            "note": note,
        }));
        let event = event_stmt_if(id, now, EventKind::Delegated, actor, &d, "changes() = 1");
        let after = Stmt::new(
            "SELECT delegated_to FROM approval_principals WHERE approval_id = ?1 AND pkey = ?2",
            vec![s(id.as_str()), s(&h.from.key())],
        );
        let results = self.batch(&[hand_on, seat, event, after], "delegate").await?;
        let row = results[3].results::<DelegatedTo>().internal("D1 delegated_to")?;
        Ok(row.first().and_then(|r| r.delegated_to.as_deref()) == Some(h.to.key().as_str()))
    }

    /// An operator's reassignment, in one batch under its guards (`ringi_core::domain::rules::reassign`: decidable, no
    /// approval landed on a removed slot meanwhile, the added principals have no seat yet): the `reassigned`
    /// event first, written only while every guard holds; then, only if it is on record, the removed listed
    /// principals go with their chains of stand-ins, the added ones get seats of their own and
    /// `approver_count` follows. `false` when a guard no longer held (nothing was written).
    pub async fn reassign(
        &self,
        a: &Loaded,
        r: &Reassignment,
        listed_after: &[Principal],
        actor: &Actor,
        reason: &str,
        now: i64,
    ) -> Result<bool, ApiError> {
        let id = &a.approval.id;
        let keys = |ps: &[Principal]| Value::from(ps.iter().map(Principal::key).collect::<Vec<_>>()).to_string();
        let list = |ps: &[Principal]| ps.iter().map(principal_value).collect::<Vec<_>>();
        let d = detail(json!({
            "removed": list(&r.removed),
            "added": list(&r.added),
            "approvers": list(listed_after),
            "reason": reason,
        }));
        let (event, key) = guarded_event_stmt(id, now, EventKind::Reassigned, actor, &d, &r.guards);
        let recorded = recorded_sql("?2");
        let mut stmts = vec![
            event,
            Stmt::new(
                format!(
                    "DELETE FROM approval_principals WHERE approval_id = ?1 AND {recorded}
                       AND COALESCE(slot, pkey) IN (SELECT value FROM json_each(?3))"
                ),
                vec![s(id.as_str()), s(&key), s(&keys(&r.removed))],
            ),
        ];
        stmts.extend(r.added.iter().map(|p| {
            Stmt::new(
                format!(
                    "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at)
                     SELECT a.id, ?3, ?4, ?5, a.expires_at FROM approvals a WHERE a.id = ?1 AND {recorded}
                     ON CONFLICT DO NOTHING"
                ),
                vec![s(id.as_str()), s(&key), s(p.kind()), s(p.value()), s(&p.key())],
            )
        }));
        stmts.push(Stmt::new(
            format!(
                "UPDATE approvals SET approver_count = (SELECT COUNT(*) FROM approval_principals p
                   WHERE p.approval_id = ?1 AND p.depth = 0) WHERE id = ?1 AND {recorded}"
            ),
            vec![s(id.as_str()), s(&key)],
        ));
        stmts.push(Stmt::new(format!("SELECT {} AS done", recorded_sql("?1")), vec![s(&key)]));
        let results = self.batch(&stmts, "reassign").await?;
        let done = results.last().and_then(|r| r.results::<Done>().ok()).and_then(|r| r.into_iter().next());
        Ok(done.is_some_and(|d| d.done != 0.0))
    }

    pub async fn out_of_office(&self, sub: &str) -> Result<Option<OutOfOfficeRow>, ApiError> {
        let sql = "SELECT delegate, starts_at, ends_at, note FROM out_of_office WHERE sub = ?1";
        self.first(Stmt::new(sql, vec![s(sub)]), "out_of_office").await
    }

    /// Sets (or replaces) the caller's out-of-office, keyed by their verified sub; `email`: their verified email.
    pub async fn set_out_of_office(
        &self,
        sub: &str,
        email: Option<&str>,
        o: &OutOfOfficeRequest,
        now: i64,
    ) -> Result<(), ApiError> {
        let stmt = Stmt::new(
            "INSERT INTO out_of_office (sub, email, delegate, starts_at, ends_at, note, updated_at)
             VALUES (?1, lower(?2), ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (sub) DO UPDATE SET email = excluded.email, delegate = excluded.delegate,
               starts_at = excluded.starts_at, ends_at = excluded.ends_at, note = excluded.note,
               updated_at = excluded.updated_at",
            vec![
                s(sub),
                opt(email),
                s(&o.delegate.key()),
                n(o.starts_at),
                n(o.ends_at),
                opt(o.note.as_deref()),
                n(now),
            ],
        );
        self.changes(stmt, "set_out_of_office").await.map(drop)
    }

    pub async fn clear_out_of_office(&self, sub: &str) -> Result<(), ApiError> {
        self.changes(Stmt::new("DELETE FROM out_of_office WHERE sub = ?1", vec![s(sub)]), "clear_out_of_office")
            .await
            .map(drop)
    }
}

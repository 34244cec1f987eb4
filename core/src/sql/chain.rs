//! Sealing events into their approval's hash chain (`domain::audit_chain`) on D1: the unsealed events with the
//! head of their approval's chain, read in one query, and one conditional UPDATE per event. The order of a
//! chain is the order D1 wrote the events (`seq`), so two sealers that read the same events compute the same
//! links; each UPDATE holds only while its event is unsealed and its chain still ends right before it, so the
//! slower of two sealers changes nothing (and the unique `(approval_id, chain_n)` index could not take a fork).

use super::{SqlArg, SqlCond};
use crate::domain::audit_chain::Link;

/// Unsealed events one seal takes at most (the rest are taken by the next write's seal or the cron's).
pub const SEAL_BATCH: i64 = 100;

/// The unsealed events, oldest write first, each with the head of its approval's chain (`head_n`,
/// `head_digest`: NULL while the chain has not begun). Columns as `EVENT_COLUMNS` names them, then the head's.
pub fn pending() -> SqlCond {
    SqlCond {
        sql: "SELECT p.seq, p.approval_id, p.at, p.kind, p.actor, p.actor_display, p.detail_json,
                     h.chain_n AS head_n, h.digest AS head_digest
              FROM approval_events p
              LEFT JOIN approval_events h ON h.approval_id = p.approval_id AND h.chain_n =
                (SELECT MAX(m.chain_n) FROM approval_events m WHERE m.approval_id = p.approval_id AND m.chain_n > 0)
              WHERE p.chain_n IS NULL ORDER BY p.seq LIMIT ?1"
            .into(),
        args: vec![SqlArg::Int(SEAL_BATCH)],
    }
}

/// The seal of event `seq` of `approval_id`: only while it is unsealed and its approval's chain ends at
/// `link.n - 1` (as the sealer read it).
pub fn seal(seq: i64, approval_id: &str, link: &Link) -> SqlCond {
    SqlCond {
        sql: "UPDATE approval_events SET chain_n = ?2, prev_digest = ?3, digest = ?4
              WHERE seq = ?1 AND chain_n IS NULL
                AND COALESCE((SELECT MAX(chain_n) FROM approval_events WHERE approval_id = ?5 AND chain_n > 0), 0) = ?2 - 1"
            .into(),
        args: vec![
            SqlArg::Int(seq),
            SqlArg::Int(link.n),
            SqlArg::from(link.prev_digest.as_str()),
            SqlArg::from(link.digest.as_str()),
            SqlArg::from(approval_id),
        ],
    }
}

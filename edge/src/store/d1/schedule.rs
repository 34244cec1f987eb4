//! Reminders and escalation on a schedule (`approval_schedule`, core::schedule): the rows a registration
//! writes, the cron's due entries under a lease, the escalation that adds principals, and the approval
//! page's view of it all.
//!
//! Concurrent cron runs take different rows (the lease is one conditional UPDATE); a run mails first and
//! marks the row done after, conditional on its lease, so a failed mark costs at most one extra mail (the
//! row is taken again once the lease ran out) and never a lost one.

use ringi_core::base::principal::Principal;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::schedule::{EntryKind, Escalation, Outcome, ScheduleView, StoredEntry};
use ringi_core::sql::schedule;
use ringi_core::{ApiError, ApprovalId};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::events::event_stmt_if;
use super::{changed, n, s, D1Store, Stmt};
use crate::error::OrInternal;
use crate::platform::log;
use crate::store::port::records::DueEntry;
use crate::store::port::rows::{mail_jobs, MailRow, MAIL_COLUMNS};

#[derive(Deserialize)]
struct DueRow {
    id: String,
    seq: f64,
    kind: String,
    escalation_json: Option<String>,
    escalated_at: Option<f64>,
    voted_json: String,
}

#[derive(Deserialize)]
struct EntryRow {
    seq: f64,
    kind: String,
    due_at: f64,
    detail_json: String,
    done_at: Option<f64>,
    outcome: Option<String>,
}

#[derive(Deserialize)]
struct ScheduleCols {
    created_at: f64,
    expires_at: f64,
    reminded_at: Option<f64>,
    escalated_at: Option<f64>,
}

fn escalation_of(id: &str, detail: &str) -> Option<Escalation> {
    serde_json::from_str(detail)
        .map_err(|_| log("error", "corrupt_row", json!({"approvalId": id, "error": "approval_schedule.detail_json"})))
        .ok()
}

/// The statements of one registration's schedule (after its approval's insert: they are written only for
/// the approval of this very request, like its principals).
pub(super) fn insert_stmts(
    id: &ApprovalId,
    schedule: &ringi_core::domain::schedule::Schedule,
    token_sha256: &str,
    request_sha256: &str,
) -> Vec<Stmt> {
    ringi_core::domain::schedule::entries(schedule)
        .into_iter()
        .map(|(seq, kind, at, detail)| {
            Stmt::new(
                "INSERT INTO approval_schedule (approval_id, seq, kind, due_at, detail_json)
                 SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM approvals
                   WHERE id = ?1 AND token_sha256 = ?6 AND request_sha256 = ?7)
                 ON CONFLICT DO NOTHING",
                vec![
                    s(id.as_str()),
                    n(seq),
                    s(kind.as_str()),
                    n(at),
                    s(&Value::Object(detail).to_string()),
                    s(token_sha256),
                    s(request_sha256),
                ],
            )
        })
        .collect()
}

impl D1Store {
    /// Takes the due entries of open approvals (at most `ringi_core::sql::schedule::SCHEDULE_BATCH`) for `lease_ms` under `lease_id`,
    /// and marks the due entries of closed approvals skipped — one batch. Entries of the same approval and
    /// kind come as one (a late run sends one reminder, not two).
    pub async fn schedule_due(&self, now: i64, lease_id: &str, lease_ms: i64) -> Result<Vec<DueEntry>, ApiError> {
        let skip = schedule::skip_closed(now).into();
        let take = schedule::take(now, lease_id, lease_ms).into();
        let mine = schedule::TAKEN_APPROVALS;
        let mail = Stmt::new(format!("SELECT {MAIL_COLUMNS} FROM approvals WHERE id IN ({mine})"), vec![s(lease_id)]);
        let entries = schedule::taken(lease_id).into();
        let results = self.batch(&[skip, take, mail, entries], "schedule_due").await?;
        let jobs = mail_jobs(results[2].results::<MailRow>().internal("D1 mail rows")?);
        let rows = results[3].results::<DueRow>().internal("D1 schedule rows")?;
        let mut out: Vec<DueEntry> = Vec::new();
        for r in rows {
            let Some(kind) = EntryKind::parse(&r.kind) else {
                log("error", "corrupt_row", json!({"approvalId": r.id, "error": "approval_schedule.kind"}));
                continue;
            };
            if let Some(e) = out.iter_mut().find(|e| e.job.id.as_str() == r.id && e.kind == kind) {
                e.seqs.push(r.seq as i64);
                continue;
            }
            let Some(job) = jobs.iter().find(|j| j.id.as_str() == r.id) else { continue };
            out.push(DueEntry {
                job: job.clone(),
                seqs: vec![r.seq as i64],
                kind,
                escalation: r.escalation_json.as_deref().and_then(|d| escalation_of(&r.id, d)),
                escalated: r.escalated_at.is_some(),
                voted: serde_json::from_str(&r.voted_json).unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// Marks the entry done (conditional on this run's lease) with the event of what was done, if anything
    /// was (`event`: Reminded with the recipients' count, or Escalated).
    pub async fn schedule_done(
        &self,
        e: &DueEntry,
        lease_id: &str,
        now: i64,
        outcome: Outcome,
        event: Option<(EventKind, Map<String, Value>)>,
    ) -> Result<(), ApiError> {
        let mark = schedule::done(e.job.id.as_str(), &e.seqs, lease_id, now, outcome.as_str()).into();
        let mut stmts = vec![mark];
        if let Some((kind, detail)) = event {
            stmts.push(event_stmt_if(&e.job.id, now, kind, &Actor::System, &detail, "changes() > 0"));
        }
        self.batch(&stmts, "schedule_done").await.map(drop).map_err(Into::into)
    }

    /// Gives the entry back (its mail failed): the next run takes it again, without waiting for the lease.
    pub async fn schedule_release(&self, e: &DueEntry, lease_id: &str) -> Result<(), ApiError> {
        let stmt = schedule::release(e.job.id.as_str(), lease_id).into();
        self.changes(stmt, "schedule_release").await.map(drop)
    }

    /// Adds the escalation principals to an open approval — in its approvers' inboxes (open, keyed by expiry)
    /// and able to decide — and records when (`escalated_at`, the `Escalated` event), once. Keyed: running it
    /// again adds nothing. The quorum's `required` is unchanged (`approver_count` stays).
    pub async fn escalate(
        &self,
        id: &ApprovalId,
        to: &[Principal],
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError> {
        let principals: Vec<Value> =
            to.iter().map(|p| json!({"kind": p.kind(), "value": p.value(), "key": p.key()})).collect();
        let open = schedule::open("?2");
        let mark = Stmt::new(
            "UPDATE approvals SET escalated_at = ?2 WHERE id = ?1 AND escalated_at IS NULL
               AND status IN ('pending', 'claimed') AND expires_at > ?2",
            vec![s(id.as_str()), n(now)],
        );
        let detail = ringi_core::domain::schedule::escalated_detail(to, note);
        let event = event_stmt_if(id, now, EventKind::Escalated, &Actor::System, &detail, "changes() > 0");
        let add = Stmt::new(
            format!(
                "INSERT INTO approval_principals (approval_id, kind, value, pkey, sort_at)
                 SELECT a.id, json_extract(j.value, '$.kind'), json_extract(j.value, '$.value'),
                   json_extract(j.value, '$.key'), a.expires_at
                 FROM approvals a, json_each(?3) j WHERE a.id = ?1 AND a.escalated_at IS NOT NULL AND {open}
                 ON CONFLICT DO NOTHING"
            ),
            vec![s(id.as_str()), n(now), s(&Value::from(principals).to_string())],
        );
        let results = self.batch(&[mark, event, add], "escalate").await?;
        Ok(changed(results.first()) == 1)
    }
}

/// The statements that read an approval's schedule as the approval page shows it (see [`read_view`]); they go
/// into the view's batch.
pub(super) fn view_stmts(id: &ApprovalId) -> [Stmt; 2] {
    [
        Stmt::new(
            "SELECT seq, kind, due_at, detail_json, done_at, outcome FROM approval_schedule
             WHERE approval_id = ?1 ORDER BY due_at, seq",
            vec![s(id.as_str())],
        ),
        Stmt::new(
            "SELECT created_at, expires_at, reminded_at, escalated_at FROM approvals WHERE id = ?1",
            vec![s(id.as_str())],
        ),
    ]
}

/// The schedule from the results of [`view_stmts`]; `None` if the approval does not exist. `window_ms`: the
/// default reminder's distance from expiry.
pub(super) fn read_view(
    id: &ApprovalId,
    results: &[worker::D1Result],
    window_ms: i64,
) -> Result<Option<ScheduleView>, ApiError> {
    let entries = results[0].results::<EntryRow>().internal("D1 schedule rows")?;
    let cols = results[1].results::<ScheduleCols>().internal("D1 schedule columns")?;
    Ok(cols.into_iter().next().map(|cols| schedule_view(id, &entries, &cols, window_ms)))
}

fn schedule_view(id: &ApprovalId, entries: &[EntryRow], cols: &ScheduleCols, window_ms: i64) -> ScheduleView {
    let stored: Vec<StoredEntry> = entries
        .iter()
        .filter_map(|e| {
            let Some(kind) = EntryKind::parse(&e.kind) else {
                log("error", "corrupt_row", json!({"approvalId": id.as_str(), "seq": e.seq, "error": "kind"}));
                return None;
            };
            Some(StoredEntry {
                seq: e.seq as i64,
                kind,
                due_at: e.due_at as i64,
                detail: serde_json::from_str(&e.detail_json).unwrap_or_default(),
                done_at: e.done_at.map(|d| d as i64),
                outcome: e.outcome.as_deref().and_then(Outcome::parse),
            })
        })
        .collect();
    let t = |v: Option<f64>| v.map(|v| v as i64);
    ringi_core::domain::schedule::view(
        &stored,
        cols.created_at as i64,
        cols.expires_at as i64,
        t(cols.reminded_at),
        t(cols.escalated_at),
        window_ms,
    )
}

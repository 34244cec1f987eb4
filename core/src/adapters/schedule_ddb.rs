//! Reminders, escalation and their bookkeeping on the DynamoDB backend's approval item (platform-free: the
//! worker adds the table, the key and the other items of the same transaction). The same schedule as D1's
//! `approval_schedule` rows (`crate::domain::schedule`), kept on the approval's own item:
//! - `schedule`: seq → `{kind, dueAt, detailJson, doneAt?, outcome?, leaseId?, leaseUntil?}`, one entry per row;
//! - `scheduleDueAt`: when the cron next has something to do with the schedule — the earliest undone entry, or
//!   the end of a lease a run took (should that run die) — absent when nothing is left; the cron's Scan finds the
//!   item by it;
//! - `remindedAt`, `escalatedAt`: as D1's columns.
//!
//! A run takes an item's due entries under its lease in one conditional UpdateItem, mails, then marks them done
//! conditional on that lease (or gives them back): as on D1, a failed mark costs at most one more mail, never a
//! lost one. Every write is conditional on what it was computed from, so two runs never act on one entry.

use serde_json::{json, Map, Value};

use crate::adapters::dynamo::{approvers, expires_at_ms};
use crate::adapters::guard_ddb::{seat_value, seats, Expr, Update, SEATS};
use crate::base::corrupt::CorruptValue;
use crate::base::principal::Principal;
use crate::domain::delegation::Seat;
use crate::domain::schedule::{entries, EntryKind, Outcome, Schedule, StoredEntry};

pub const SCHEDULE: &str = "schedule";
pub const SCHEDULE_DUE: &str = "scheduleDueAt";
pub const REMINDED_AT: &str = "remindedAt";
pub const ESCALATED_AT: &str = "escalatedAt";
const LEASE_ID: &str = "leaseId";
const LEASE_UNTIL: &str = "leaseUntil";
const DONE_AT: &str = "doneAt";
const OUTCOME: &str = "outcome";

/// The schedule's attributes of a registration's item (plain JSON, beside the approval's own): none without
/// entries.
pub fn registration_attrs(s: &Schedule) -> Map<String, Value> {
    let rows = entries(s);
    let mut out = Map::new();
    let Some(first) = rows.iter().map(|r| r.2).min() else { return out };
    let map: Map<String, Value> = rows
        .into_iter()
        .map(|(seq, kind, at, detail)| {
            let v = json!({"kind": kind.as_str(), "dueAt": at, "detailJson": Value::Object(detail).to_string()});
            (seq.to_string(), v)
        })
        .collect();
    out.insert(SCHEDULE.into(), Value::Object(map));
    out.insert(SCHEDULE_DUE.into(), first.into());
    out
}

/// A run's hold on an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub id: String,
    pub until: i64,
}

/// The entries of a (plain) item's `schedule`, in time order, each with the lease on it.
pub fn stored(item: &Map<String, Value>) -> Result<Vec<(StoredEntry, Option<Lease>)>, CorruptValue> {
    let Some(map) = item.get(SCHEDULE).and_then(Value::as_object) else { return Ok(Vec::new()) };
    let mut out = Vec::with_capacity(map.len());
    for (seq, v) in map {
        let bad = || CorruptValue::new(SCHEDULE, seq);
        let num = |k: &str| v.get(k).and_then(Value::as_i64);
        let entry = StoredEntry {
            seq: seq.parse().map_err(|_| bad())?,
            kind: v.get("kind").and_then(Value::as_str).and_then(EntryKind::parse).ok_or_else(bad)?,
            due_at: num("dueAt").ok_or_else(bad)?,
            detail: v
                .get("detailJson")
                .and_then(Value::as_str)
                .and_then(|d| serde_json::from_str(d).ok())
                .unwrap_or_default(),
            done_at: num(DONE_AT),
            outcome: v.get(OUTCOME).and_then(Value::as_str).and_then(Outcome::parse),
        };
        let lease = match (v.get(LEASE_ID).and_then(Value::as_str), num(LEASE_UNTIL)) {
            (Some(id), Some(until)) => Some(Lease { id: id.to_owned(), until }),
            _ => None,
        };
        out.push((entry, lease));
    }
    out.sort_by_key(|(e, _)| (e.due_at, e.seq));
    Ok(out)
}

/// What a run takes of one item: the update that takes it, and the due entries it holds then — by kind, in
/// time order, the entries of one kind as one (a late run sends one reminder, not two). Empty `due`: the
/// update only moves `scheduleDueAt` (nothing due is free, or the approval closed: its due entries are
/// marked skipped).
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    pub update: Update,
    pub due: Vec<(EntryKind, Vec<i64>)>,
}

/// The take of a (plain) item found due at `now`, under the lease `lease`; `None` when the item holds no
/// schedule hint (nothing to do). Conditional on the hint as read, so of two runs that read the same item only
/// one takes it.
pub fn take(item: &Map<String, Value>, now: i64, lease: &Lease) -> Result<Option<Taken>, CorruptValue> {
    let Some(seen) = item.get(SCHEDULE_DUE).and_then(Value::as_i64) else { return Ok(None) };
    let all = stored(item)?;
    let status = item.get("status").and_then(Value::as_str).unwrap_or("pending");
    let open = matches!(status, "pending" | "claimed") && expires_at_ms(item).is_some_and(|t| t > now);
    let undone = all.iter().filter(|(e, _)| e.done_at.is_none());
    let free = |l: &Option<Lease>| l.as_ref().is_none_or(|l| l.until <= now);
    let due: Vec<&StoredEntry> = undone.clone().filter(|(e, l)| e.due_at <= now && free(l)).map(|(e, _)| e).collect();
    let held = undone.clone().filter_map(|(_, l)| l.as_ref().filter(|l| l.until > now).map(|l| l.until));
    let future = undone.filter(|(e, _)| e.due_at > now).map(|(e, _)| e.due_at);

    let mut e = Expr::new("s");
    let hint = e.name(SCHEDULE_DUE);
    let mut condition = vec![format!("{hint} = {}", e.value(seen))];
    let mut sets = Vec::new();
    let mut taken = Vec::new();
    let next = if open && !due.is_empty() {
        let (st, exp) = (e.name("status"), e.name("expiresAtMs"));
        let (p, c, n) = (e.value("pending"), e.value("claimed"), e.value(now));
        condition.push(format!("{st} IN ({p}, {c}) AND {exp} > {n}"));
        for entry in &due {
            let path = entry_path(&mut e, entry.seq);
            let (done, until) = (e.name(DONE_AT), e.name(LEASE_UNTIL));
            condition.push(format!(
                "attribute_not_exists({path}.{done}) AND (attribute_not_exists({path}.{until}) OR {path}.{until} <= {n})"
            ));
            let (id, lease_until) = (e.value(lease.id.as_str()), e.value(lease.until));
            sets.push(format!("{path}.{} = {id}, {path}.{until} = {lease_until}", e.name(LEASE_ID)));
            match taken.iter_mut().find(|(k, _): &&mut (EntryKind, Vec<i64>)| *k == entry.kind) {
                Some((_, seqs)) => seqs.push(entry.seq),
                None => taken.push((entry.kind, vec![entry.seq])),
            }
        }
        future.chain(held).chain([lease.until]).min()
    } else if open {
        future.chain(held).min()
    } else {
        // Closed: what came due is skipped (the page shows it so); nothing of the schedule runs any more.
        for entry in &due {
            let path = entry_path(&mut e, entry.seq);
            let (n, skipped) = (e.value(now), e.value(Outcome::Skipped.as_str()));
            sets.push(format!("{path}.{} = {n}, {path}.{} = {skipped}", e.name(DONE_AT), e.name(OUTCOME)));
        }
        None
    };
    let update = match next {
        Some(at) => {
            sets.push(format!("{hint} = {}", e.value(at)));
            format!("SET {}", sets.join(", "))
        }
        None if sets.is_empty() => format!("REMOVE {hint}"),
        None => format!("SET {} REMOVE {hint}", sets.join(", ")),
    };
    Ok(Some(Taken { update: Update { update, condition: condition.join(" AND "), expr: e }, due: taken }))
}

fn entry_path(e: &mut Expr, seq: i64) -> String {
    e.path(SCHEDULE, &seq.to_string())
}

/// What ends a run's lease on the entries `seqs`: the condition that the run holding `lease` still holds them and
/// they are not done, and the removal of the lease from each.
struct LeaseEnd {
    condition: String,
    paths: Vec<String>,
    removes: String,
}

fn lease_end(e: &mut Expr, seqs: &[i64], lease: &str) -> LeaseEnd {
    let id = e.value(lease);
    let (lid, until, done) = (e.name(LEASE_ID), e.name(LEASE_UNTIL), e.name(DONE_AT));
    let paths: Vec<String> = seqs.iter().map(|seq| entry_path(e, *seq)).collect();
    let condition = paths.iter().map(|p| format!("{p}.{lid} = {id} AND attribute_not_exists({p}.{done})"));
    let removes = paths.iter().map(|p| format!("{p}.{lid}, {p}.{until}"));
    LeaseEnd {
        condition: condition.collect::<Vec<_>>().join(" AND "),
        removes: removes.collect::<Vec<_>>().join(", "),
        paths,
    }
}

/// Marks the entries `seqs` done with `outcome`, while this run's lease still holds them.
pub fn done(seqs: &[i64], lease: &str, now: i64, outcome: Outcome) -> Update {
    let mut e = Expr::new("s");
    let end = lease_end(&mut e, seqs, lease);
    let (n, o, done, out) = (e.value(now), e.value(outcome.as_str()), e.name(DONE_AT), e.name(OUTCOME));
    let sets: Vec<String> = end.paths.iter().map(|p| format!("{p}.{done} = {n}, {p}.{out} = {o}")).collect();
    Update { update: format!("SET {} REMOVE {}", sets.join(", "), end.removes), condition: end.condition, expr: e }
}

/// Gives the entries `seqs` back (their mail failed): due again for the next run, without waiting for the lease.
pub fn release(seqs: &[i64], lease: &str, now: i64) -> Update {
    let mut e = Expr::new("s");
    let end = lease_end(&mut e, seqs, lease);
    let hint = e.name(SCHEDULE_DUE);
    Update {
        update: format!("SET {hint} = {} REMOVE {}", e.value(now), end.removes),
        condition: end.condition,
        expr: e,
    }
}

/// The escalation of a (plain) open item at `now`: its principals `to` get seats of their own and join the
/// listed approvers (the quorum's count is unchanged, as on D1), once — while the item is open, not escalated
/// yet, and its listed approvers are still the ones read. Also answers the principals added (their
/// approver-index entries are written with it).
pub fn escalation(
    item: &Map<String, Value>,
    to: &[Principal],
    now: i64,
) -> Result<(Update, Vec<Principal>), CorruptValue> {
    let listed = approvers(item)?;
    let seated = seats(item)?;
    let mut added: Vec<Principal> = Vec::new();
    for p in to.iter().map(Principal::normalized) {
        let known = seated.iter().any(|s| s.principal.normalized() == p) || added.contains(&p);
        if !known {
            added.push(p);
        }
    }
    let mut e = Expr::new("s");
    let (at, st, exp, list) = (e.name(ESCALATED_AT), e.name("status"), e.name("expiresAtMs"), e.name("approvers"));
    let (n, p, c) = (e.value(now), e.value("pending"), e.value("claimed"));
    let mut sets = vec![format!("{at} = {n}")];
    for a in &added {
        let (path, v) = (e.path(SEATS, &a.key()), e.value(seat_value(&Seat::listed(a.clone()))));
        sets.push(format!("{path} = {v}"));
    }
    let mut condition = format!(
        "attribute_not_exists({at}) AND {st} IN ({p}, {c}) AND {exp} > {n} AND attribute_exists({})",
        e.name(SEATS)
    );
    if !added.is_empty() {
        let keys: Vec<Value> = listed.iter().chain(&added).map(|p| Value::from(p.key())).collect();
        sets.push(format!("{list} = {}", e.value(keys)));
        condition.push_str(&format!(" AND size({list}) = {}", e.value(listed.len())));
    }
    Ok((Update { update: format!("SET {}", sets.join(", ")), condition, expr: e }, added))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::guard_ddb::testing::{readable, well_formed};
    use crate::domain::schedule::Escalation;

    const NOW: i64 = 1_800_000_000_000;
    const M: i64 = 60_000;

    fn lease() -> Lease {
        Lease { id: "L".into(), until: NOW + 10 * M }
    }

    /// An open item registered with reminders at +1 min and +5 min and an escalation at +3 min.
    fn item() -> Map<String, Value> {
        let s = Schedule {
            reminders: Some(vec![NOW + M, NOW + 5 * M]),
            escalation: Some(Escalation { at: NOW + 3 * M, to: vec![Principal::Group("fin".into())], note: None }),
        };
        let mut item = json!({"approvalId": "A", "status": "pending", "expiresAtMs": NOW + 60 * M,
            "approvers": ["sub:a"], "seats": {"sub:a": {"slot": "sub:a", "depth": 0, "routed": false}}});
        item.as_object_mut().unwrap().extend(registration_attrs(&s));
        item.as_object().unwrap().clone()
    }

    /// `item` after `u` (the few forms these updates take, applied by hand to plain JSON).
    fn set_entry(item: &mut Map<String, Value>, seq: i64, k: &str, v: Value) {
        item[SCHEDULE][seq.to_string()][k] = v;
    }

    #[test]
    fn a_registration_keeps_its_entries_and_the_first_time() {
        let i = item();
        assert_eq!(i[SCHEDULE_DUE], NOW + M);
        let kinds: Vec<(i64, EntryKind, i64)> =
            stored(&i).unwrap().iter().map(|(e, _)| (e.seq, e.kind, e.due_at)).collect();
        assert_eq!(
            kinds,
            [
                (0, EntryKind::Reminder, NOW + M),
                (2, EntryKind::Escalation, NOW + 3 * M),
                (1, EntryKind::Reminder, NOW + 5 * M)
            ]
        );
        assert_eq!(stored(&i).unwrap()[1].0.escalation().unwrap().to, [Principal::Group("fin".into())]);
        assert!(registration_attrs(&Schedule::default()).is_empty());
    }

    #[test]
    fn a_run_takes_what_is_due_under_its_lease_and_moves_the_hint_to_what_is_next() {
        let i = item();
        assert!(take(&i, NOW, &lease()).unwrap().unwrap().due.is_empty(), "nothing due before the first time");
        let t = take(&i, NOW + 4 * M, &lease()).unwrap().unwrap();
        well_formed(&t.update);
        assert_eq!(t.due, [(EntryKind::Reminder, vec![0]), (EntryKind::Escalation, vec![2])]);
        let text = readable(&t.update, &t.update.update);
        assert!(text.contains("schedule.0.leaseId = \"L\"") && text.contains("schedule.2.leaseUntil"), "{text}");
        assert!(text.contains(&format!("scheduleDueAt = {}", NOW + 5 * M)), "next: the reminder at +5 min: {text}");
        let cond = readable(&t.update, &t.update.condition);
        assert!(cond.starts_with(&format!("scheduleDueAt = {}", NOW + M)), "conditional on the hint read: {cond}");
        assert!(cond.contains("attribute_not_exists(schedule.0.doneAt)") && cond.contains("status IN"), "{cond}");

        // A late run: both reminders are due and come as one.
        let t = take(&i, NOW + 6 * M, &lease()).unwrap().unwrap();
        assert_eq!(t.due, [(EntryKind::Reminder, vec![0, 1]), (EntryKind::Escalation, vec![2])]);
        let text = readable(&t.update, &t.update.update);
        assert!(
            text.contains(&format!("scheduleDueAt = {}", NOW + 10 * M)),
            "after the lease, should the run die: {text}"
        );
    }

    #[test]
    fn entries_held_or_done_are_not_taken_again() {
        let mut i = item();
        set_entry(&mut i, 0, DONE_AT, (NOW + M).into());
        set_entry(&mut i, 2, LEASE_ID, "other".into());
        set_entry(&mut i, 2, LEASE_UNTIL, (NOW + 8 * M).into());
        let t = take(&i, NOW + 4 * M, &lease()).unwrap().unwrap();
        assert!(t.due.is_empty());
        let text = readable(&t.update, &t.update.update);
        assert!(text.contains(&format!("scheduleDueAt = {}", NOW + 5 * M)), "{text}");
        // Once the other run's lease ran out, its entry is free again.
        let t = take(&i, NOW + 9 * M, &lease()).unwrap().unwrap();
        assert_eq!(t.due, [(EntryKind::Escalation, vec![2]), (EntryKind::Reminder, vec![1])], "in time order");
        // Everything done: the hint goes.
        for seq in [1, 2] {
            set_entry(&mut i, seq, DONE_AT, NOW.into());
        }
        let t = take(&i, NOW + 9 * M, &lease()).unwrap().unwrap();
        assert_eq!((t.due.len(), readable(&t.update, &t.update.update)), (0, "REMOVE scheduleDueAt".to_owned()));
    }

    #[test]
    fn a_closed_approval_skips_what_came_due_and_keeps_no_hint() {
        let mut i = item();
        i.insert("status".into(), "approved".into());
        let t = take(&i, NOW + 4 * M, &lease()).unwrap().unwrap();
        well_formed(&t.update);
        assert!(t.due.is_empty());
        let text = readable(&t.update, &t.update.update);
        assert!(text.contains("schedule.0.outcome = \"skipped\"") && text.ends_with("REMOVE scheduleDueAt"), "{text}");
        assert!(!text.contains("schedule.1."), "the future entry is left as it is: {text}");
    }

    #[test]
    fn done_and_release_hold_only_under_the_runs_lease() {
        let d = done(&[0, 1], "L", NOW, Outcome::Sent);
        well_formed(&d);
        let cond = readable(&d, &d.condition);
        assert!(
            cond.contains("schedule.0.leaseId = \"L\"") && cond.contains("attribute_not_exists(schedule.1.doneAt)")
        );
        assert!(readable(&d, &d.update).contains("REMOVE schedule.0.leaseId, schedule.0.leaseUntil"));
        let r = release(&[2], "L", NOW);
        well_formed(&r);
        assert_eq!(
            readable(&r, &r.update),
            format!("SET scheduleDueAt = {NOW} REMOVE schedule.2.leaseId, schedule.2.leaseUntil")
        );
    }

    #[test]
    fn an_escalation_seats_whom_it_names_once() {
        let i = item();
        let (u, added) = escalation(&i, &[Principal::Group("fin".into()), Principal::Sub("a".into())], NOW).unwrap();
        well_formed(&u);
        assert_eq!(added, [Principal::Group("fin".into())], "a seated approver is not added twice");
        let text = readable(&u, &u.update);
        assert!(text.contains(r#"approvers = ["sub:a","group:fin"]"#) && text.contains("seats.group:fin ="), "{text}");
        let cond = readable(&u, &u.condition);
        assert!(
            cond.starts_with("attribute_not_exists(escalatedAt)") && cond.ends_with("size(approvers) = 1"),
            "{cond}"
        );
        let (u, added) = escalation(&i, &[Principal::Sub("a".into())], NOW).unwrap();
        assert!(added.is_empty() && !readable(&u, &u.update).contains("approvers"));
    }
}

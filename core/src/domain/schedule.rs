//! An approval's schedule: reminders at chosen times and an escalation that adds principals.
//!
//! Registration gives `reminders` as ISO 8601 durations: `"PT4H"` is 4 hours after registration,
//! `{"beforeExpiry": "PT1H"}` is 1 hour before the deadline. `escalation: {after, to, note}` adds the `to`
//! principals `after` the registration. Every time must fall inside the approval's lifetime. Without
//! `reminders`, the approval gets the one reminder before expiry (`REMINDER_BEFORE_SECONDS`); `[]` means none.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::error::ApiError;
use crate::base::principal::Principal;
use crate::base::text::strip_invisible;
use crate::base::time::format_rfc3339;

pub const MAX_REMINDERS: usize = 10;
pub const MAX_ESCALATION_PRINCIPALS: usize = 20;
pub const ESCALATION_NOTE_MAX_CHARS: usize = 500;

/// The form a duration must have, for error messages.
const DURATION_FORM: &str = "must be an ISO 8601 duration such as \"PT4H\" or \"P1DT12H\"";

/// An ISO 8601 duration of weeks, days, hours, minutes and seconds (`P2W`, `P1DT12H`, `PT90M`, `PT30S`), in
/// milliseconds. Years and months are refused: their length depends on the calendar.
pub fn parse_duration(field: &str, s: &str) -> Result<i64, ApiError> {
    let bad = || ApiError::invalid(field, DURATION_FORM);
    let rest = s.strip_prefix('P').ok_or_else(bad)?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return Err(bad()),
        None => (rest, None),
    };
    let mut total: i64 = 0;
    let mut any = false;
    let mut take = |part: &str, units: &[(char, i64)]| -> Result<(), ApiError> {
        let mut digits = String::new();
        let mut next_unit = 0;
        for c in part.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            // Units in their order, each once, each after a number.
            let at = units.iter().skip(next_unit).position(|(u, _)| *u == c).ok_or_else(bad)? + next_unit;
            let n: i64 = digits.parse().map_err(|_| bad())?;
            total = n.checked_mul(units[at].1).and_then(|v| total.checked_add(v)).ok_or_else(bad)?;
            digits.clear();
            next_unit = at + 1;
            any = true;
        }
        if digits.is_empty() {
            Ok(())
        } else {
            Err(bad())
        }
    };
    take(date, &[('W', 7 * 86_400_000), ('D', 86_400_000)])?;
    if let Some(t) = time {
        take(t, &[('H', 3_600_000), ('M', 60_000), ('S', 1_000)])?;
    }
    if !any {
        return Err(bad());
    }
    if total == 0 {
        return Err(ApiError::invalid(field, "must be longer than zero"));
    }
    Ok(total)
}

/// An escalation: at `at`, the `to` principals become approvers too (mailed, in their inbox, able to decide).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    /// Unix ms.
    #[serde(skip)]
    pub at: i64,
    pub to: Vec<Principal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Escalation {
    /// The addresses the escalation mail goes to: its email principals.
    pub fn emails(&self) -> Vec<String> {
        emails_of(&self.to)
    }
}

fn emails_of(principals: &[Principal]) -> Vec<String> {
    principals
        .iter()
        .filter_map(|p| match p {
            Principal::Email(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// The schedule of a registration, resolved to times.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schedule {
    /// Reminder times (Unix ms), ascending, distinct. `None`: the default reminder before expiry.
    pub reminders: Option<Vec<i64>>,
    pub escalation: Option<Escalation>,
}

fn within_lifetime(field: &str, at: i64, now: i64, expires_at: i64) -> Result<i64, ApiError> {
    if at <= now || at >= expires_at {
        return Err(ApiError::invalid(
            field,
            "must fall within the approval's lifetime (after registration, before expiry)",
        ));
    }
    Ok(at)
}

/// `reminders` of a registration body: each `"PT…"` (after registration) or `{"beforeExpiry": "PT…"}`.
pub fn parse_reminders(raw: &[Value], now: i64, expires_at: i64) -> Result<Vec<i64>, ApiError> {
    if raw.len() > MAX_REMINDERS {
        return Err(ApiError::invalid("reminders", format!("at most {MAX_REMINDERS} reminders")));
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, item) in raw.iter().enumerate() {
        let field = format!("reminders[{i}]");
        let at = match item {
            Value::String(d) => now.saturating_add(parse_duration(&field, d)?),
            Value::Object(o) => match (o.len(), o.get("beforeExpiry")) {
                (1, Some(Value::String(d))) => {
                    expires_at.saturating_sub(parse_duration(&format!("{field}.beforeExpiry"), d)?)
                }
                _ => return Err(ApiError::invalid(field, "must be {\"beforeExpiry\": \"PT1H\"} or a duration")),
            },
            _ => {
                return Err(ApiError::invalid(
                    field,
                    "must be a duration after registration (\"PT4H\") or {\"beforeExpiry\": \"PT1H\"}",
                ))
            }
        };
        out.push(within_lifetime(&field, at, now, expires_at)?);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `escalation` of a registration body: `{after, to, note?}`. `principal` validates one `to[i]` as an approver.
pub fn parse_escalation(
    raw: &Value,
    now: i64,
    expires_at: i64,
    principal: impl Fn(&str, &Principal) -> Result<Principal, ApiError>,
) -> Result<Escalation, ApiError> {
    let Value::Object(o) = raw else {
        return Err(ApiError::invalid("escalation", "must be {\"after\", \"to\", \"note\"?}"));
    };
    if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "after" | "to" | "note")) {
        return Err(ApiError::invalid(format!("escalation.{k}"), "is not a known field"));
    }
    let after = match o.get("after") {
        Some(Value::String(d)) => parse_duration("escalation.after", d)?,
        None | Some(Value::Null) => return Err(ApiError::invalid("escalation.after", "is required")),
        Some(_) => return Err(ApiError::invalid("escalation.after", DURATION_FORM)),
    };
    let at = within_lifetime("escalation.after", now.saturating_add(after), now, expires_at)?;
    let to = match o.get("to") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return Err(ApiError::invalid("escalation.to", "must be a non-empty array of principals")),
    };
    if to.len() > MAX_ESCALATION_PRINCIPALS {
        return Err(ApiError::invalid("escalation.to", format!("at most {MAX_ESCALATION_PRINCIPALS} principals")));
    }
    let mut principals: Vec<Principal> = Vec::new();
    for (i, v) in to.iter().enumerate() {
        let field = format!("escalation.to[{i}]");
        let p: Principal = serde_json::from_value(v.clone())
            .map_err(|_| ApiError::invalid(&field, "must be {\"sub\": …}, {\"email\": …} or {\"group\": …}"))?;
        let p = principal(&field, &p)?;
        if !principals.contains(&p) {
            principals.push(p);
        }
    }
    let note = match o.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => {
            // Counted as sent (what the API description says), then cleaned.
            if n.chars().count() > ESCALATION_NOTE_MAX_CHARS {
                return Err(ApiError::invalid(
                    "escalation.note",
                    format!("must be at most {ESCALATION_NOTE_MAX_CHARS} characters"),
                ));
            }
            let n = strip_invisible(n).trim().to_owned();
            (!n.is_empty()).then_some(n)
        }
        Some(_) => return Err(ApiError::invalid("escalation.note", "must be a string")),
    };
    Ok(Escalation { at, to: principals, note })
}

/// The `escalated` event's detail: whom the escalation added, and its note.
pub fn escalated_detail(to: &[Principal], note: Option<&str>) -> Map<String, Value> {
    let mut detail = Map::new();
    detail.insert("to".into(), serde_json::to_value(to).unwrap_or_default());
    if let Some(note) = note {
        detail.insert("note".into(), note.into());
    }
    detail
}

/// Who a reminder goes to: the approval's recipients (`notify`, and the escalation's addresses once it
/// happened), less everyone who has voted already (by verified email, case-insensitively).
pub fn reminder_recipients(notify: &[String], escalated: Option<&Escalation>, voted: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let extra = escalated.map(Escalation::emails).unwrap_or_default();
    for e in notify.iter().chain(extra.iter()) {
        let voted = voted.iter().any(|v| v.eq_ignore_ascii_case(e));
        if !voted && !out.iter().any(|o| o.eq_ignore_ascii_case(e)) {
            out.push(e.clone());
        }
    }
    out
}

/// What a schedule entry is (`approval_schedule.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Reminder,
    Escalation,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reminder => "reminder",
            Self::Escalation => "escalation",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Reminder, Self::Escalation].into_iter().find(|k| k.as_str() == s)
    }
}

/// How a due entry ended (`approval_schedule.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Mailed (a reminder), or applied (an escalation: principals added, mailed where they are addresses).
    Sent,
    /// Nothing to do: nobody left to remind, mail off, or the approval closed before it was due.
    Skipped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Skipped => "skipped",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Sent, Self::Skipped].into_iter().find(|k| k.as_str() == s)
    }
}

/// The rows a registration stores in `approval_schedule`: `(seq, kind, due_at, detail)`.
pub fn entries(s: &Schedule) -> Vec<(i64, EntryKind, i64, Map<String, Value>)> {
    let mut out: Vec<_> = s
        .reminders
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, at)| (i as i64, EntryKind::Reminder, *at, Map::new()))
        .collect();
    if let Some(e) = &s.escalation {
        let detail = match serde_json::to_value(e) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        out.push((out.len() as i64, EntryKind::Escalation, e.at, detail));
    }
    out
}

/// One reminder as the approval page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReminderView {
    /// RFC 3339.
    pub at: String,
    /// When it was mailed (absent while due or when it was skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_at: Option<String>,
    /// It came due with nobody left to remind, or after the approval closed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// The escalation as the approval page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EscalationView {
    pub at: String,
    pub to: Vec<Principal>,
    #[serde(default)]
    pub note: Option<String>,
    /// When the principals were added (absent until then).
    #[serde(default)]
    pub escalated_at: Option<String>,
}

/// `ApprovalView.schedule`: reminders in time order and the escalation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    pub reminders: Vec<ReminderView>,
    #[serde(default)]
    pub escalation: Option<EscalationView>,
}

impl ScheduleView {
    /// The next reminder still to be sent, if any.
    pub fn next_reminder(&self) -> Option<&ReminderView> {
        self.reminders.iter().find(|r| r.sent_at.is_none() && !r.skipped)
    }
}

/// The default reminder (no `reminders` given): `window_ms` before expiry, unless that is not after
/// registration. `reminded_at` is when it was sent; an approval with its own reminders (or registered inside
/// the window) has it equal to `created_at` from the start — then there is no default reminder to show.
pub fn default_reminder(
    created_at: i64,
    expires_at: i64,
    window_ms: i64,
    reminded_at: Option<i64>,
) -> Option<ReminderView> {
    let at = expires_at - window_ms;
    if at <= created_at || reminded_at == Some(created_at) {
        return None;
    }
    Some(ReminderView { at: format_rfc3339(at), sent_at: reminded_at.map(format_rfc3339), skipped: false })
}

/// One stored entry of a registration's schedule, as either backend keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEntry {
    pub seq: i64,
    pub kind: EntryKind,
    pub due_at: i64,
    /// The escalation's `{to, note}` (empty for a reminder).
    pub detail: Map<String, Value>,
    pub done_at: Option<i64>,
    pub outcome: Option<Outcome>,
}

impl StoredEntry {
    /// The escalation this entry holds, if it is one and its detail reads as one.
    pub fn escalation(&self) -> Option<Escalation> {
        let e = serde_json::from_value::<Escalation>(Value::Object(self.detail.clone())).ok()?;
        (self.kind == EntryKind::Escalation).then_some(Escalation { at: self.due_at, ..e })
    }
}

/// The schedule as the approval page shows it, from the stored entries and the approval's times (`window_ms`:
/// the default reminder's distance from expiry). One reading for both backends.
pub fn view(
    entries: &[StoredEntry],
    created_at: i64,
    expires_at: i64,
    reminded_at: Option<i64>,
    escalated_at: Option<i64>,
    window_ms: i64,
) -> ScheduleView {
    let mut view = ScheduleView::default();
    let mut entries: Vec<&StoredEntry> = entries.iter().collect();
    entries.sort_by_key(|e| (e.due_at, e.seq));
    for e in entries {
        let skipped = e.outcome == Some(Outcome::Skipped);
        match e.kind {
            EntryKind::Reminder => view.reminders.push(ReminderView {
                at: format_rfc3339(e.due_at),
                sent_at: e.done_at.filter(|_| !skipped).map(format_rfc3339),
                skipped,
            }),
            EntryKind::Escalation => {
                let Some(esc) = e.escalation() else { continue };
                view.escalation = Some(EscalationView {
                    at: format_rfc3339(e.due_at),
                    to: esc.to,
                    note: esc.note,
                    escalated_at: escalated_at.map(format_rfc3339),
                });
            }
        }
    }
    if let Some(d) = default_reminder(created_at, expires_at, window_ms, reminded_at) {
        view.reminders.push(d);
        view.reminders.sort_by(|a, b| a.at.cmp(&b.at));
    }
    view
}

/// When an approval registered at `now` counts as reminded already: its own `reminders` replace the default one,
/// and one registered inside the reminder window needs none (its request mail is recent enough).
pub fn reminded_at_registration(s: &Schedule, now: i64, expires_at: i64, window_ms: i64) -> Option<i64> {
    (s.reminders.is_some() || expires_at - now <= window_ms).then_some(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000_000;
    const H: i64 = 3_600_000;

    fn field(r: Result<impl std::fmt::Debug, ApiError>) -> String {
        match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn durations() {
        let d = |s| parse_duration("f", s);
        assert_eq!(d("PT4H").unwrap(), 4 * H);
        assert_eq!(d("P1DT12H").unwrap(), 36 * H);
        assert_eq!(d("P2W").unwrap(), 14 * 24 * H);
        assert_eq!(d("PT90M").unwrap(), 90 * 60_000);
        assert_eq!(d("PT1H30M5S").unwrap(), H + 30 * 60_000 + 5_000);
        for bad in
            ["", "P", "PT", "4H", "PT4", "P1M", "P1Y", "PT1H2H", "PT1M1H", "PTH", "-PT1H", "PT1.5H", "pt4h", "P1DT"]
        {
            assert!(d(bad).is_err(), "{bad}");
        }
        assert!(matches!(d("PT0S"), Err(ApiError::Invalid { message, .. }) if message.contains("zero")));
        assert!(d("P99999999999999999W").is_err(), "overflow is refused, not wrapped");
    }

    #[test]
    fn reminders_resolve_against_registration_and_expiry() {
        let exp = NOW + 48 * H;
        let r = parse_reminders(&[json!("PT4H"), json!({"beforeExpiry": "PT1H"}), json!("PT4H")], NOW, exp).unwrap();
        assert_eq!(r, vec![NOW + 4 * H, exp - H], "sorted, duplicates merged");
        assert_eq!(parse_reminders(&[], NOW, exp).unwrap(), Vec::<i64>::new());
        assert_eq!(field(parse_reminders(&[json!("PT4H"), json!("PT48H")], NOW, exp)), "reminders[1]");
        assert_eq!(field(parse_reminders(&[json!({"beforeExpiry": "PT49H"})], NOW, exp)), "reminders[0]");
        assert_eq!(field(parse_reminders(&[json!({"beforeExpiry": "4h"})], NOW, exp)), "reminders[0].beforeExpiry");
        assert_eq!(field(parse_reminders(&[json!({"after": "PT1H"})], NOW, exp)), "reminders[0]");
        assert_eq!(field(parse_reminders(&[json!(3600)], NOW, exp)), "reminders[0]");
        let many: Vec<Value> = (1..=11).map(|i| json!(format!("PT{i}H"))).collect();
        assert_eq!(field(parse_reminders(&many, NOW, exp)), "reminders");
    }

    fn ok_principal(_: &str, p: &Principal) -> Result<Principal, ApiError> {
        Ok(p.normalized())
    }

    #[test]
    fn escalation_rules() {
        let exp = NOW + 72 * H;
        let e = parse_escalation(
            &json!({"after": "PT48H", "to": [{"email": "Boss@Example.com"}, {"group": "leads"}, {"email": "boss@example.com"}],
                    "note": " No answer in 2 days \u{202E}"}),
            NOW,
            exp,
            ok_principal,
        )
        .unwrap();
        assert_eq!(e.at, NOW + 48 * H);
        assert_eq!(e.to, vec![Principal::Email("boss@example.com".into()), Principal::Group("leads".into())]);
        assert_eq!(e.note.as_deref(), Some("No answer in 2 days"));
        assert_eq!(e.emails(), vec!["boss@example.com"]);
        let f = |v: Value| field(parse_escalation(&v, NOW, exp, ok_principal));
        assert_eq!(f(json!({"to": [{"sub": "x"}]})), "escalation.after");
        assert_eq!(f(json!({"after": "PT72H", "to": [{"sub": "x"}]})), "escalation.after");
        assert_eq!(f(json!({"after": "PT1H"})), "escalation.to");
        assert_eq!(f(json!({"after": "PT1H", "to": []})), "escalation.to");
        assert_eq!(f(json!({"after": "PT1H", "to": [{"role": "x"}]})), "escalation.to[0]");
        assert_eq!(f(json!({"after": "PT1H", "to": [{"sub": "x"}], "note": "n".repeat(501)})), "escalation.note");
        assert_eq!(f(json!({"after": "PT1H", "to": [{"sub": "x"}], "when": 1})), "escalation.when");
        assert_eq!(f(json!("PT1H")), "escalation");
        let refuse =
            |field: &str, _: &Principal| Err(ApiError::invalid(format!("{field}.email"), "is not an email address"));
        assert_eq!(
            field(parse_escalation(&json!({"after": "PT1H", "to": [{"email": "x"}]}), NOW, exp, refuse)),
            "escalation.to[0].email"
        );
    }

    #[test]
    fn reminders_skip_those_who_voted_and_reach_escalation_principals_once_escalated() {
        let notify = vec!["a@example.com".to_owned(), "b@example.com".to_owned()];
        let esc = Escalation {
            at: 0,
            to: vec![Principal::Email("boss@example.com".into()), Principal::Sub("s".into())],
            note: None,
        };
        assert_eq!(reminder_recipients(&notify, None, &["A@example.com".into()]), vec!["b@example.com"]);
        assert_eq!(
            reminder_recipients(&notify, Some(&esc), &[]),
            vec!["a@example.com", "b@example.com", "boss@example.com"]
        );
        assert!(reminder_recipients(&notify, None, &notify).is_empty());
    }

    #[test]
    fn stored_entries_and_views() {
        let s = Schedule {
            reminders: Some(vec![NOW + H, NOW + 2 * H]),
            escalation: Some(Escalation {
                at: NOW + 3 * H,
                to: vec![Principal::Sub("x".into())],
                note: Some("n".into()),
            }),
        };
        let e = entries(&s);
        assert_eq!(
            e.iter().map(|(seq, k, at, _)| (*seq, *k, *at)).collect::<Vec<_>>(),
            vec![
                (0, EntryKind::Reminder, NOW + H),
                (1, EntryKind::Reminder, NOW + 2 * H),
                (2, EntryKind::Escalation, NOW + 3 * H)
            ]
        );
        let back: Escalation = serde_json::from_value(Value::Object(e[2].3.clone())).unwrap();
        assert_eq!((back.to, back.note), (vec![Principal::Sub("x".into())], Some("n".into())));
        assert!(entries(&Schedule::default()).is_empty());
        for k in [EntryKind::Reminder, EntryKind::Escalation] {
            assert_eq!(EntryKind::parse(k.as_str()), Some(k));
        }
        for o in [Outcome::Sent, Outcome::Skipped] {
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
        // The default reminder: shown until sent, then with its time; none inside the window.
        let d = default_reminder(NOW, NOW + 48 * H, 24 * H, None).unwrap();
        assert_eq!((d.at, d.sent_at), (format_rfc3339(NOW + 24 * H), None));
        assert!(default_reminder(NOW, NOW + 48 * H, 24 * H, Some(NOW + 25 * H)).unwrap().sent_at.is_some());
        assert!(default_reminder(NOW, NOW + 12 * H, 24 * H, Some(NOW)).is_none());
        assert!(default_reminder(NOW, NOW + 48 * H, 24 * H, Some(NOW)).is_none(), "own reminders replace it");
        let view = ScheduleView {
            reminders: vec![
                ReminderView { at: "a".into(), sent_at: Some("x".into()), skipped: false },
                ReminderView { at: "b".into(), sent_at: None, skipped: true },
                ReminderView { at: "c".into(), sent_at: None, skipped: false },
            ],
            escalation: None,
        };
        assert_eq!(view.next_reminder().map(|r| r.at.as_str()), Some("c"));
    }
}

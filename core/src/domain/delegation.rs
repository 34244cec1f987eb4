//! Delegation, out-of-office routing and operator reassignment: who holds each listed principal's slot.
//!
//! The quorum counts listed principals (`quorum.rs`); a slot can be handed on. Each row of an approval's
//! principals is a [`Seat`]: a listed principal (depth 0), or a stand-in for one (`slot`, depth ≥ 1). The seat
//! that handed its slot on names the next holder (`delegated_to`) and decides nothing any more; the last
//! seat of a chain holds the slot. A vote through a seat satisfies its slot, so one slot is still satisfied
//! once, whoever holds it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::body::{from_object, json_value, top_field};
use crate::base::error::ApiError;
use crate::base::json::{FromJson, Members, ReadError};
use crate::base::principal::{approvers, checked_principal};
use crate::base::principal::{Identity, Principal};
use crate::base::text::strip_invisible;
use crate::base::time::{format_rfc3339, parse_rfc3339};

/// A slot is handed on at most this many times (listed → 1st → 2nd → 3rd delegate).
pub const MAX_DELEGATION_DEPTH: u32 = 3;
/// Characters of a delegation note, an out-of-office note or a reassignment reason.
pub const NOTE_MAX_CHARS: usize = 1000;
/// Out of office for at most a year.
pub const OUT_OF_OFFICE_MAX_MS: i64 = 366 * 86_400_000;

/// One row of an approval's principals (`approval_principals`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    pub principal: Principal,
    /// The listed principal this seat stands in for (itself when listed).
    pub slot: Principal,
    pub depth: u32,
    /// The next holder, once this seat handed its slot on.
    pub delegated_to: Option<Principal>,
    /// Who handed the slot to this seat (display), for a stand-in.
    pub delegated_by: Option<String>,
    pub note: Option<String>,
    /// Handed over by out-of-office routing at registration.
    pub routed: bool,
}

impl Seat {
    /// A listed principal that holds its own slot.
    pub fn listed(p: Principal) -> Self {
        Self {
            slot: p.clone(),
            principal: p,
            depth: 0,
            delegated_to: None,
            delegated_by: None,
            note: None,
            routed: false,
        }
    }

    pub fn holds(&self) -> bool {
        self.delegated_to.is_none()
    }
}

/// A seat that decides: its principal (what a caller matches) and the slot a vote through it satisfies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder<'a> {
    pub principal: &'a Principal,
    pub slot: &'a Principal,
}

/// The listed principals, in their order.
pub fn listed(seats: &[Seat]) -> Vec<Principal> {
    seats.iter().filter(|s| s.depth == 0).map(|s| s.principal.clone()).collect()
}

/// The seats that decide.
pub fn holders(seats: &[Seat]) -> Vec<Holder<'_>> {
    seats.iter().filter(|s| s.holds()).map(|s| Holder { principal: &s.principal, slot: &s.slot }).collect()
}

/// The caller's seats, in the caller's key order (sub, email, groups).
fn seats_of<'a>(seats: &'a [Seat], who: &Identity) -> Vec<&'a Seat> {
    who.principals().iter().flat_map(|p| seats.iter().filter(move |s| s.principal.normalized() == *p)).collect()
}

/// The caller sees the approval: any seat is theirs, handed on or not (a delegator still sees what became of it).
pub fn may_view(seats: &[Seat], who: &Identity) -> bool {
    !seats_of(seats, who).is_empty()
}

/// The caller decides through a seat that holds its slot. Not an approver: the same 404 as for no approval;
/// an approver whose every seat is handed on: `409 delegated`.
pub fn check_holder(seats: &[Seat], who: &Identity) -> Result<(), ApiError> {
    let mine = seats_of(seats, who);
    match (mine.is_empty(), mine.iter().any(|s| s.holds())) {
        (true, _) => Err(ApiError::NotFound),
        (false, false) => Err(ApiError::Delegated),
        (false, true) => Ok(()),
    }
}

/// `POST /api/v1/approvals/{id}/delegation`: `{to, note?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationRequest {
    pub to: Principal,
    pub note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DelegationBody {
    to: Option<Principal>,
    note: Option<String>,
}

fn principal_explain(path: &str, _: String) -> ApiError {
    match top_field(path) {
        "to" | "delegate" => {
            ApiError::invalid(top_field(path), "must be {\"sub\": …}, {\"email\": …} or {\"group\": …}")
        }
        "approvers" => ApiError::invalid(path, "must be an array of {\"sub\": …}, {\"email\": …} or {\"group\": …}"),
        other => ApiError::invalid(other, "must be a string"),
    }
}

/// A note as stored: at most [`NOTE_MAX_CHARS`] as sent, invisible and bidi control characters removed (they
/// could make a note shown in mail and on the page read differently from what was written), then trimmed;
/// empty → none.
fn note(field: &str, n: Option<String>) -> Result<Option<String>, ApiError> {
    if n.as_ref().is_some_and(|n| n.chars().count() > NOTE_MAX_CHARS) {
        return Err(ApiError::invalid(field, format!("must be at most {NOTE_MAX_CHARS} characters")));
    }
    Ok(n.map(|n| strip_invisible(&n).trim().to_owned()).filter(|n| !n.is_empty()))
}

impl DelegationRequest {
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let b: DelegationBody = from_object(json_value(body)?, principal_explain)?;
        let to = b.to.ok_or_else(|| ApiError::invalid("to", "is required"))?;
        Ok(Self { to: checked_principal("to", &to)?, note: note("note", b.note)? })
    }
}

/// `PUT /api/v1/approvals/{id}/principals` (operators): the new listed principals and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignRequest {
    pub approvers: Vec<Principal>,
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReassignBody {
    approvers: Option<Vec<Principal>>,
    reason: Option<String>,
}

impl ReassignRequest {
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let b: ReassignBody = from_object(json_value(body)?, principal_explain)?;
        let approvers = approvers(b.approvers)?;
        let reason = note("reason", b.reason)?.ok_or_else(|| ApiError::invalid("reason", "is required"))?;
        Ok(Self { approvers, reason })
    }
}

/// `PUT /api/v1/me/out-of-office`: `{delegate, from?, until, note?}` (`from` defaults to now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfOfficeRequest {
    pub delegate: Principal,
    pub starts_at: i64,
    pub ends_at: i64,
    pub note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutOfOfficeBody {
    delegate: Option<Principal>,
    from: Option<String>,
    until: Option<String>,
    note: Option<String>,
}

impl OutOfOfficeRequest {
    /// Validated for `who` at `now`: a delegate other than themselves whom ringi may mail if named by email
    /// (`crate::domain::recipients::may_mail` over `allowed_domains`: the stand-in is told of each approval routed to them),
    /// an end in the future after the start, at most [`OUT_OF_OFFICE_MAX_MS`] from now.
    pub fn parse(body: &[u8], who: &Identity, allowed_domains: &[String], now: i64) -> Result<Self, ApiError> {
        let b: OutOfOfficeBody = from_object(json_value(body)?, principal_explain)?;
        let delegate = b.delegate.ok_or_else(|| ApiError::invalid("delegate", "is required"))?;
        let delegate = checked_principal("delegate", &delegate)?;
        if who.principals().contains(&delegate) {
            return Err(ApiError::invalid("delegate", "must be someone else"));
        }
        crate::domain::recipients::check_principal("delegate", &delegate, &[], allowed_domains)?;
        let starts_at = b.from.as_deref().map(|f| parse_rfc3339("from", f)).transpose()?.unwrap_or(now);
        let until = b.until.ok_or_else(|| ApiError::invalid("until", "is required"))?;
        let ends_at = parse_rfc3339("until", &until)?;
        if ends_at <= now.max(starts_at) {
            return Err(ApiError::invalid("until", "must be in the future and after from"));
        }
        if ends_at - now > OUT_OF_OFFICE_MAX_MS {
            return Err(ApiError::invalid("until", "must be within a year"));
        }
        Ok(Self { delegate, starts_at, ends_at, note: note("note", b.note)? })
    }
}

/// The caller's out-of-office setting as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutOfOffice {
    pub delegate: Principal,
    pub from: String,
    pub until: String,
    #[serde(default)]
    pub note: Option<String>,
    /// In effect now: new approvals naming the caller go to `delegate`.
    pub active: bool,
}

impl OutOfOffice {
    pub fn new(delegate: Principal, starts_at: i64, ends_at: i64, note: Option<String>, now: i64) -> Self {
        Self {
            delegate,
            from: format_rfc3339(starts_at),
            until: format_rfc3339(ends_at),
            note,
            active: starts_at <= now && now < ends_at,
        }
    }
}

/// `GET/PUT/DELETE /api/v1/me/out-of-office` answer: the setting, or null.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutOfOfficeAnswer {
    pub out_of_office: Option<OutOfOffice>,
}

/// One hand-over of a slot, as the approval page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationView {
    /// The listed principal whose slot it is.
    pub slot: Principal,
    pub to: Principal,
    /// Who handed it on (display); `null` for out-of-office routing.
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    pub depth: u32,
    #[serde(default)]
    pub routed: bool,
}

crate::from_json_by_serde!(OutOfOfficeAnswer, DelegationView);

/// The hand-overs of an approval, in chain order.
pub fn delegation_views(seats: &[Seat]) -> Vec<DelegationView> {
    let mut out: Vec<DelegationView> = seats
        .iter()
        .filter(|s| s.depth > 0)
        .map(|s| DelegationView {
            slot: s.slot.clone(),
            to: s.principal.clone(),
            by: s.delegated_by.clone(),
            note: s.note.clone(),
            depth: s.depth,
            routed: s.routed,
        })
        .collect();
    out.sort_by_key(|d| d.depth);
    out
}

/// The caller's standing on an approval: the slot they hold for someone else, or where theirs went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MySeat {
    /// The caller decides (holds a slot).
    pub holds: bool,
    /// The listed principal the caller stands in for, when they hold a delegated slot.
    #[serde(default)]
    pub on_behalf_of: Option<Principal>,
    /// Where the caller's slot went, when they handed every seat of theirs on.
    #[serde(default)]
    pub delegated_to: Option<Principal>,
}

impl FromJson for MySeat {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            holds: m.get("holds"),
            on_behalf_of: m.or_default("onBehalfOf"),
            delegated_to: m.or_default("delegatedTo"),
        })
    }
}

/// A view without it (an older worker): the caller decides, as before delegation existed.
impl Default for MySeat {
    fn default() -> Self {
        Self { holds: true, on_behalf_of: None, delegated_to: None }
    }
}

pub fn my_seat(seats: &[Seat], who: &Identity) -> MySeat {
    let mine = seats_of(seats, who);
    let holding = mine.iter().find(|s| s.holds());
    MySeat {
        holds: holding.is_some(),
        on_behalf_of: holding.filter(|s| s.depth > 0).map(|s| s.slot.clone()),
        delegated_to: match holding {
            Some(_) => None,
            None => mine.first().and_then(|s| s.delegated_to.clone()),
        },
    }
}

/// A principal as the detail of an event (`{"sub": …}`).
pub fn principal_value(p: &Principal) -> Value {
    serde_json::to_value(p).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::status::ApprovalStatus;
    use crate::domain::approval::ApprovalState;
    use crate::domain::quorum::Quorum;
    use crate::domain::rules::{delegate, reassign, Handover, Snapshot};
    use crate::domain::self_approval::Requesters;

    const OPEN: ApprovalState = ApprovalState { status: ApprovalStatus::Pending, expires_at: 10, claimed_until: None };
    const NONE: Requesters<'static> = Requesters { principals: &[], allow_self_approval: false };

    fn snap<'a>(seats: &'a [Seat], requesters: Requesters<'a>) -> Snapshot<'a> {
        Snapshot { state: OPEN, seats, votes: &[], requesters, quorum: Quorum::Any, sign_in: None }
    }

    fn plan_delegation(
        seats: &[Seat],
        who: &Identity,
        to: &Principal,
        r: &Requesters<'_>,
    ) -> Result<Handover, ApiError> {
        delegate(&snap(seats, *r), who, to, &["example.com".into()], 1)
    }

    fn person(sub: &str, email: Option<&str>) -> Identity {
        Identity {
            sub: sub.into(),
            email: email.map(Into::into),
            groups: vec![],
            username: None,
            scopes: vec![],
            client_id: "c".into(),
            sign_in: Default::default(),
        }
    }

    fn sub(s: &str) -> Principal {
        Principal::Sub(s.into())
    }

    /// `seats` after `h` (as the store writes it).
    fn apply(seats: &mut Vec<Seat>, h: &Handover, by: &str) {
        let from = seats.iter_mut().find(|s| s.principal == h.from).unwrap();
        from.delegated_to = Some(h.to.clone());
        seats.push(Seat {
            principal: h.to.clone(),
            slot: h.slot.clone(),
            depth: h.depth,
            delegated_to: None,
            delegated_by: Some(by.into()),
            note: None,
            routed: false,
        });
    }

    #[test]
    fn a_delegate_takes_over_the_slot_and_the_delegator_no_longer_decides() {
        let mut seats = vec![Seat::listed(sub("alice")), Seat::listed(sub("bob"))];
        let h = plan_delegation(&seats, &person("alice", None), &sub("carol"), &NONE).unwrap();
        assert_eq!((&h.from, &h.slot, &h.to, h.depth), (&sub("alice"), &sub("alice"), &sub("carol"), 1));
        apply(&mut seats, &h, "alice");
        assert_eq!(check_holder(&seats, &person("alice", None)), Err(ApiError::Delegated));
        assert!(may_view(&seats, &person("alice", None)), "the delegator still sees it");
        assert_eq!(check_holder(&seats, &person("carol", None)), Ok(()));
        assert_eq!(check_holder(&seats, &person("dave", None)), Err(ApiError::NotFound));
        // The quorum still counts two listed principals; carol's vote satisfies alice's slot.
        assert_eq!(listed(&seats), vec![sub("alice"), sub("bob")]);
        let carol = holders(&seats).into_iter().find(|h| h.principal == &sub("carol")).unwrap();
        assert_eq!(carol.slot, &sub("alice"));
        let mine = my_seat(&seats, &person("carol", None));
        assert_eq!((mine.holds, mine.on_behalf_of), (true, Some(sub("alice"))));
        assert_eq!(my_seat(&seats, &person("alice", None)).delegated_to, Some(sub("carol")));
    }

    #[test]
    fn chains_are_bounded_and_never_loop() {
        let mut seats = vec![Seat::listed(sub("a"))];
        let none = NONE;
        for (from, to) in [("a", "b"), ("b", "c"), ("c", "d")] {
            let h = plan_delegation(&seats, &person(from, None), &sub(to), &none).unwrap();
            apply(&mut seats, &h, from);
        }
        assert_eq!(seats.last().unwrap().depth, MAX_DELEGATION_DEPTH);
        assert_eq!(plan_delegation(&seats, &person("d", None), &sub("e"), &none), Err(ApiError::DelegationTooDeep));
        // Back to anyone in the chain, or to oneself: a loop (checked before the depth).
        for back in ["a", "b", "d"] {
            assert_eq!(plan_delegation(&seats, &person("d", None), &sub(back), &none), Err(ApiError::DelegationLoop));
        }
        // A delegator whose slot went on cannot hand it on again.
        assert_eq!(plan_delegation(&seats, &person("b", None), &sub("x"), &none), Err(ApiError::Delegated));
        let email = Principal::Email("Me@Example.com".into());
        assert_eq!(
            plan_delegation(&[Seat::listed(sub("m"))], &person("m", Some("me@example.com")), &email, &none),
            Err(ApiError::DelegationLoop),
            "one's own verified email is oneself"
        );
    }

    #[test]
    fn one_person_counts_once_and_the_requester_is_no_delegate() {
        let seats = vec![Seat::listed(sub("a")), Seat::listed(sub("b"))];
        let none = NONE;
        assert_eq!(plan_delegation(&seats, &person("a", None), &sub("b"), &none), Err(ApiError::DelegateIsApprover));
        let req = [Principal::Email("req@example.com".into())];
        let strict = Requesters { principals: &req, allow_self_approval: false };
        let to = Principal::Email("REQ@example.com".into());
        let a = person("a", Some("a@example.com"));
        assert_eq!(plan_delegation(&seats, &a, &to, &strict), Err(ApiError::DelegateIsRequester));
        let lenient = Requesters { allow_self_approval: true, ..strict };
        assert!(plan_delegation(&seats, &a, &to, &lenient).is_ok());
    }

    #[test]
    fn reassignment_keeps_satisfied_slots() {
        let mut seats = vec![Seat::listed(sub("a")), Seat::listed(sub("b"))];
        let h = plan_delegation(&seats, &person("a", None), &sub("c"), &NONE).unwrap();
        apply(&mut seats, &h, "a");
        let op = person("op", None);
        let r = reassign(&snap(&seats, NONE), &op, &[sub("b"), sub("x")], &[], 1).unwrap();
        assert_eq!((r.removed, r.added), (vec![sub("a")], vec![sub("x")]));
        assert!(
            reassign(&snap(&seats, NONE), &op, &[sub("a"), sub("b"), sub("c")], &[], 1).is_err(),
            "c holds a's slot"
        );
    }

    #[test]
    fn request_bodies_name_their_fields() {
        let field = |r: Result<DelegationRequest, ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        };
        assert_eq!(field(DelegationRequest::parse(br#"{}"#)), "to");
        assert_eq!(field(DelegationRequest::parse(br#"{"to":{"role":"x"}}"#)), "to");
        assert_eq!(field(DelegationRequest::parse(br#"{"to":{"email":"nope"}}"#)), "to.email");
        let long = format!(r#"{{"to":{{"sub":"x"}},"note":"{}"}}"#, "n".repeat(NOTE_MAX_CHARS + 1));
        assert_eq!(field(DelegationRequest::parse(long.as_bytes())), "note");
        // Bidi and zero-width controls go: a note reads as what it says in the mail and on the page.
        let sneaky =
            DelegationRequest::parse("{\"to\":{\"sub\":\"x\"},\"note\":\"pay \u{202e}0001\u{200b} \"}".as_bytes())
                .unwrap();
        assert_eq!(sneaky.note.as_deref(), Some("pay 0001"));
        let blank =
            DelegationRequest::parse("{\"to\":{\"sub\":\"x\"},\"note\":\"\u{200b}\u{2066}\"}".as_bytes()).unwrap();
        assert_eq!(blank.note, None);
        let ok = DelegationRequest::parse(br#"{"to":{"email":"Bob@Example.com"},"note":"  on leave "}"#).unwrap();
        assert_eq!((ok.to, ok.note.as_deref()), (Principal::Email("bob@example.com".into()), Some("on leave")));
        assert!(
            matches!(ReassignRequest::parse(br#"{"approvers":[{"sub":"x"}]}"#), Err(ApiError::Invalid { field, .. }) if field == "reason")
        );
        let me = person("me", None);
        let now = 1_800_000_000_000;
        let ooo = |b: &str| OutOfOfficeRequest::parse(b.as_bytes(), &me, &["example.com".into()], now);
        assert!(
            matches!(ooo(r#"{"delegate":{"sub":"me"},"until":"2027-02-01T00:00:00Z"}"#), Err(ApiError::Invalid { field, .. }) if field == "delegate")
        );
        assert!(
            matches!(ooo(r#"{"delegate":{"sub":"x"},"until":"2020-01-01T00:00:00Z"}"#), Err(ApiError::Invalid { field, .. }) if field == "until")
        );
        assert!(
            matches!(ooo(r#"{"delegate":{"email":"x@elsewhere.test"},"until":"2027-02-01T00:00:00Z"}"#), Err(ApiError::Invalid { field, .. }) if field == "delegate.email")
        );
        let set = ooo(r#"{"delegate":{"sub":"x"},"until":"2027-02-01T00:00:00Z"}"#).unwrap();
        assert_eq!(set.starts_at, now);
        assert!(OutOfOffice::new(set.delegate, set.starts_at, set.ends_at, None, now).active);
    }
}

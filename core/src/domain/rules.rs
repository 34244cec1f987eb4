//! The approval rules, decided in one place. Every act on an approval has one function here — [`decide`] (a
//! person's verdict), [`delegate`], [`route`] (out-of-office at registration), [`reassign`] (operators) —
//! and the mail rule lives in `crate::domain::recipients`. Each takes the approval as loaded and the caller,
//! and returns a typed refusal or the change to write together with the [`Guard`]s that must still hold
//! when it commits. Routes call these and restate nothing; a storage backend turns the guards into its one
//! atomic condition (a SQL `WHERE`, a DynamoDB `ConditionExpression`) and adds no rule of its own.
//!
//! The invariants, and where each is kept:
//! - a requester never decides their own request, nor hands it on, nor is handed it
//!   ([`requester_guard`], [`Guard::NotRequester`]; fails closed when the caller's email is not verified);
//! - a quorum counts listed principals, one person once ([`crate::domain::quorum`]; [`Guard::Unsatisfied`] is the
//!   slot claim a vote commits under);
//! - a group's seat belongs to all its members: one member cannot hand it on ([`delegate`]);
//! - only decidable approvals change ([`Guard::Decidable`]).

use crate::base::error::ApiError;
use crate::base::principal::{Identity, Principal};
use crate::base::sign_in::SignInRequirement;
use crate::base::status::Verdict;
use crate::domain::approval::{check_decidable, ApprovalState};
use crate::domain::delegation::{check_holder, Seat, MAX_DELEGATION_DEPTH};
use crate::domain::quorum::Quorum;
use crate::domain::self_approval::{self, person, Requesters};
use crate::domain::vote::RecordedVote;

/// A condition a write commits under: checked by the backend in the same atomic write, so that a change
/// decided on a snapshot cannot land on an approval that changed meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Still decidable at `now`: holds its task token, not past its deadline, pending or a claim whose
    /// lease ran out.
    Decidable { now: i64 },
    /// `seat` is a principal of the approval that still holds its slot (not handed on).
    Holds { seat: Principal },
    /// `principal` has no seat on the approval (in no chain, listed or stand-in).
    NotSeated { principal: Principal },
    /// Unless the approval allows self-approval: none of `people` is among its requesters, and — with
    /// `email_unknown` (the acting person's email is not verified) — no requester is named by email, since
    /// nobody can tell whether that requester is this person.
    NotRequester { people: Vec<Principal>, email_unknown: bool },
    /// No approval is on record for the listed principal `slot` (the slot a vote claims).
    Unsatisfied { slot: Principal },
    /// `sub` has recorded no vote on the approval.
    NotVoted { sub: String },
    /// At least `at_least` listed principals are satisfied (the count an approval that completes the quorum
    /// completes).
    Satisfied { at_least: u32 },
    /// No approval of anyone but `sub` satisfies `slot` (the slot the approval that completes a quorum takes:
    /// free, or the caller's own approval on record already).
    FreeFor { slot: Principal, sub: String },
    /// No approval on record comes from the verified `email` (lower case) under another account than `sub`:
    /// one person counts once.
    Uncounted { email: String, sub: String },
}

/// An approval as loaded, as the rules read it (the storage layer builds one from its rows or items).
#[derive(Debug, Clone)]
pub struct Snapshot<'a> {
    pub state: ApprovalState,
    /// Every seat: the listed principals and their stand-ins.
    pub seats: &'a [Seat],
    pub votes: &'a [RecordedVote],
    pub requesters: Requesters<'a>,
    pub quorum: Quorum,
    /// The sign-in a verdict needs (`requireSignIn`), if the registration asked for one.
    pub sign_in: Option<&'a SignInRequirement>,
}

impl Snapshot<'_> {
    /// The listed principals whose slot an approval satisfied.
    pub fn satisfied(&self) -> Vec<Principal> {
        self.votes.iter().filter(|v| v.verdict == Verdict::Approve).map(|v| v.principal.clone()).collect()
    }
}

/// The refusal and the guard of "a requester does not act on their own request" for the caller.
pub fn requester_guard(who: &Identity, requesters: &Requesters<'_>) -> Result<Guard, ApiError> {
    let people = person(who);
    if requesters.may_include(&people, who.email.is_some()) {
        return Err(ApiError::SelfApproval);
    }
    Ok(Guard::NotRequester { people, email_unknown: who.email.is_none() })
}

/// What a caller's verdict needs before the quorum rules run: what any act on the approval needs
/// ([`may_act`]) and, last, the sign-in the registration asks for (401 `step_up_required`: only an approver who
/// could decide now is sent to sign in again). Returns the guards the vote or claim commits under (the quorum
/// step adds the slot it claims). The sign-in needs no guard: the requirement never changes once registered.
pub fn decide(a: &Snapshot<'_>, who: &Identity, now: i64) -> Result<Vec<Guard>, ApiError> {
    let guards = may_act(a, who, now)?;
    crate::domain::step_up::check(a.sign_in, &who.sign_in, now)?;
    Ok(guards)
}

/// What any act of an approver on the approval needs: an approver (else the same 404 as for no approval), not
/// a requester, a seat that still holds its slot, an approval still decidable.
fn may_act(a: &Snapshot<'_>, who: &Identity, now: i64) -> Result<Vec<Guard>, ApiError> {
    if !crate::domain::delegation::may_view(a.seats, who) {
        return Err(ApiError::NotFound);
    }
    let requester = requester_guard(who, &a.requesters)?;
    check_decidable(&a.state, now)?;
    check_holder(a.seats, who)?;
    Ok(vec![Guard::Decidable { now }, requester])
}

/// What an approval recorded through `slot` commits under (one that does not complete the quorum): the voter
/// `sub` has not voted, nobody's approval satisfies the slot, and the person (their verified `email`) has not
/// approved under another account.
pub fn approval_guards(sub: &str, slot: &Principal, email: Option<&str>) -> Vec<Guard> {
    let mut guards = vec![Guard::NotVoted { sub: sub.to_owned() }, Guard::Unsatisfied { slot: slot.normalized() }];
    guards.extend(email.map(|e| Guard::Uncounted { email: e.to_lowercase(), sub: sub.to_owned() }));
    guards
}

/// What the claim of `sub`'s approval that completes the quorum (`required` approvals) through `slot` commits
/// under: the slot still free (or theirs already: a retry), the person not counted under another account,
/// and the `required - 1` approvals it completes still on record.
pub fn completion_guards(sub: &str, slot: &Principal, email: Option<&str>, required: u32) -> Vec<Guard> {
    let mut guards = vec![Guard::FreeFor { slot: slot.normalized(), sub: sub.to_owned() }];
    guards.extend(email.map(|e| Guard::Uncounted { email: e.to_lowercase(), sub: sub.to_owned() }));
    guards.push(Guard::Satisfied { at_least: required.saturating_sub(1) });
    guards
}

/// A delegation: the caller's own seat (a `{sub}` or `{email}` seat of theirs that holds a slot) goes to
/// `to`, a new seat for the same slot one level deeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handover {
    pub from: Principal,
    pub slot: Principal,
    pub to: Principal,
    pub depth: u32,
    /// What must still hold when the hand-over commits.
    pub guards: Vec<Guard>,
}

/// The delegation rules: the caller is an approver (else 404), not a requester (403 `self_approval`), has not
/// voted (409 `already_voted`: their vote stands for their slot), and hands on a seat of their own person — a `{group}` seat is every member's, so one member cannot give it
/// away (403 `group_seat`; operators reassign). The chain stays within [`MAX_DELEGATION_DEPTH`]; nobody
/// already in the slot's chain receives it again; nobody with another seat on the approval receives it (one
/// person counts once); never a requester; and by email only where ringi may mail (`crate::domain::recipients::may_mail`
/// over `allowed_domains`: 400 `to.email`).
pub fn delegate(
    a: &Snapshot<'_>,
    who: &Identity,
    to: &Principal,
    allowed_domains: &[String],
    now: i64,
) -> Result<Handover, ApiError> {
    // Handing a seat on decides nothing: the delegate's own verdict meets the sign-in requirement.
    let mut guards = may_act(a, who, now)?;
    if a.votes.iter().any(|v| v.sub == who.sub) {
        return Err(ApiError::AlreadyVoted);
    }
    let (seats, requesters) = (a.seats, &a.requesters);
    let mine = person(who);
    let from = seats
        .iter()
        .filter(|s| s.holds() && !matches!(s.principal, Principal::Group(_)))
        .find(|s| mine.contains(&s.principal.normalized()))
        .ok_or(ApiError::GroupSeat)?;
    let to = to.normalized();
    if mine.contains(&to) || seats.iter().any(|s| s.slot == from.slot && s.principal.normalized() == to) {
        return Err(ApiError::DelegationLoop);
    }
    if from.depth >= MAX_DELEGATION_DEPTH {
        return Err(ApiError::DelegationTooDeep);
    }
    if seats.iter().any(|s| s.principal.normalized() == to) {
        return Err(ApiError::DelegateIsApprover);
    }
    if requesters.may_include(std::slice::from_ref(&to), true) {
        return Err(ApiError::DelegateIsRequester);
    }
    crate::domain::recipients::check_principal("to", &to, &crate::domain::delegation::listed(seats), allowed_domains)?;
    guards.extend([
        Guard::NotVoted { sub: who.sub.clone() },
        Guard::Holds { seat: from.principal.clone() },
        Guard::NotSeated { principal: to.clone() },
        Guard::NotRequester { people: vec![to.clone()], email_unknown: false },
    ]);
    Ok(Handover { from: from.principal.clone(), slot: from.slot.clone(), to, depth: from.depth + 1, guards })
}

/// Someone's out-of-office setting as routing reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absence {
    /// The absent person's verified sub.
    pub sub: String,
    /// Their verified email, when the absence may route approvals naming them by email
    /// (`Config::routes_by_email`).
    pub email: Option<String>,
    pub stand_in: Principal,
}

impl Absence {
    /// The principals an approver list may name the absent person by.
    pub fn person(&self) -> Vec<Principal> {
        let mut p = vec![Principal::Sub(self.sub.clone())];
        p.extend(self.email.as_ref().map(|e| Principal::Email(e.clone()).normalized()));
        p
    }
}

/// One slot out-of-office routing hands on at registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routing {
    pub slot: Principal,
    pub stand_in: Principal,
}

/// Out-of-office routing of a new approval: each listed person who is away hands their slot to their
/// stand-in — unless the absent person is a requester (by any of their principals: they would be choosing who
/// decides their own request), the stand-in is a requester, or the stand-in already has a seat (one person
/// counts once; two absent approvers with the same stand-in: it takes the first slot only). Groups are never
/// routed. Where one person has several absences, the first that may route the slot counts (storage lists
/// the latest first).
pub fn route(listed: &[Principal], absences: &[Absence], requesters: &Requesters<'_>) -> Vec<Routing> {
    let mut out: Vec<Routing> = Vec::new();
    let listed_n: Vec<Principal> = listed.iter().map(Principal::normalized).collect();
    for slot in listed.iter().filter(|p| !matches!(p, Principal::Group(_))) {
        let slot_n = slot.normalized();
        let eligible = |a: &&Absence| {
            let (person, stand_in) = (a.person(), a.stand_in.normalized());
            person.contains(&slot_n)
                && !listed_n.contains(&stand_in)
                && !requesters.may_include(&person, true)
                && !requesters.may_include(std::slice::from_ref(&stand_in), true)
        };
        let Some(away) = absences.iter().find(eligible) else { continue };
        let stand_in = away.stand_in.normalized();
        if !out.iter().any(|r| r.stand_in == stand_in) {
            out.push(Routing { slot: slot.clone(), stand_in });
        }
    }
    out
}

/// What an operator's reassignment changes: listed principals removed (with their chains) and added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    pub removed: Vec<Principal>,
    pub added: Vec<Principal>,
    /// What must still hold when it commits (decidable; no approval landed on a removed slot meanwhile).
    pub guards: Vec<Guard>,
}

/// The reassignment rules: a slot that already approved stays (its approval counts); a new listed principal
/// has no seat on the approval yet, is not the operator themselves (nobody assigns themselves a decision)
/// and not a requester; an email only where ringi may mail (`crate::domain::recipients::may_mail` over `allowed_domains`:
/// 400 `approvers[i].email`); and the quorum stays reachable without the requesters.
pub fn reassign(
    a: &Snapshot<'_>,
    operator: &Identity,
    new: &[Principal],
    allowed_domains: &[String],
    now: i64,
) -> Result<Reassignment, ApiError> {
    check_decidable(&a.state, now)?;
    let (seats, requesters, satisfied) = (a.seats, &a.requesters, a.satisfied());
    let old = crate::domain::delegation::listed(seats);
    crate::domain::recipients::check_principals("approvers", new, &old, allowed_domains)?;
    let removed: Vec<Principal> = old.iter().filter(|p| !new.contains(p)).cloned().collect();
    if let Some(p) = removed.iter().find(|p| satisfied.contains(p)) {
        return Err(ApiError::invalid("approvers", format!("{} has approved already and stays listed", p.key())));
    }
    let added: Vec<Principal> = new.iter().filter(|p| !old.contains(p)).cloned().collect();
    let me = person(operator);
    for p in &added {
        let i = new.iter().position(|n| n == p).unwrap_or_default();
        if seats.iter().any(|s| s.depth > 0 && s.principal.normalized() == p.normalized()) {
            return Err(ApiError::invalid(
                format!("approvers[{i}]"),
                format!("{} holds a delegated slot of this approval", p.key()),
            ));
        }
        if me.contains(&p.normalized()) {
            return Err(ApiError::invalid(
                format!("approvers[{i}]"),
                "an operator cannot assign an approval to themselves",
            ));
        }
        if requesters.may_include(&[p.normalized()], true) {
            return Err(ApiError::invalid(
                format!("approvers[{i}]"),
                format!("{} requested this approval and cannot decide it", p.key()),
            ));
        }
    }
    if !requesters.allow_self_approval {
        self_approval::check_reachable(new, requesters.principals, a.quorum)
            .map_err(|_| ApiError::invalid("approvers", "leaves the quorum unreachable without the requesters"))?;
    }
    let mut guards = vec![Guard::Decidable { now }];
    guards.extend(removed.iter().map(|slot| Guard::Unsatisfied { slot: slot.clone() }));
    guards.extend(added.iter().map(|p| Guard::NotSeated { principal: p.clone() }));
    Ok(Reassignment { removed, added, guards })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::status::ApprovalStatus;

    fn who(sub: &str, email: Option<&str>, groups: &[&str]) -> Identity {
        Identity {
            sub: sub.into(),
            email: email.map(Into::into),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            username: None,
            scopes: vec![],
            client_id: "c".into(),
            sign_in: Default::default(),
        }
    }
    fn sub(s: &str) -> Principal {
        Principal::Sub(s.into())
    }
    fn email(s: &str) -> Principal {
        Principal::Email(s.into())
    }
    fn group(s: &str) -> Principal {
        Principal::Group(s.into())
    }
    const NOW: i64 = 1_000;
    fn open() -> ApprovalState {
        ApprovalState { status: ApprovalStatus::Pending, expires_at: 10_000, claimed_until: None }
    }
    fn strict(p: &[Principal]) -> Requesters<'_> {
        Requesters { principals: p, allow_self_approval: false }
    }
    fn snap<'a>(seats: &'a [Seat], requesters: Requesters<'a>) -> Snapshot<'a> {
        Snapshot { state: open(), seats, votes: &[], requesters, quorum: Quorum::Any, sign_in: None }
    }

    #[test]
    fn a_verdict_needs_the_sign_in_the_registration_asks_for_and_a_hand_over_does_not() {
        let seats = vec![Seat::listed(sub("ann"))];
        let fresh = SignInRequirement { max_age_seconds: Some(60), ..Default::default() };
        let a = Snapshot { sign_in: Some(&fresh), ..snap(&seats, strict(&[])) };
        let mut ann = who("ann", None, &[]);
        ann.sign_in.auth_time = Some(NOW / 1000 - 3600);
        assert_eq!(decide(&a, &ann, NOW), Err(ApiError::StepUpRequired(fresh.clone())));
        assert!(delegate(&a, &ann, &sub("bob"), &[], NOW).is_ok());
        // The other refusals come first: a stranger still gets the 404, not a prompt to sign in.
        assert_eq!(decide(&a, &who("eve", None, &[]), NOW), Err(ApiError::NotFound));
        ann.sign_in.auth_time = Some(NOW / 1000);
        assert!(decide(&a, &ann, NOW).is_ok());
    }

    #[test]
    fn a_requester_in_an_approver_group_cannot_hand_the_group_seat_to_a_friend() {
        let seats = vec![Seat::listed(group("eng")), Seat::listed(group("fin"))];
        let req = [sub("rita")];
        let rita = who("rita", None, &["eng"]);
        let a = snap(&seats, strict(&req));
        assert_eq!(delegate(&a, &rita, &sub("pal"), &[], NOW), Err(ApiError::SelfApproval));
        // Not a requester, but still one member of a group: the group's seat is not theirs to give away.
        let eve = who("eve", None, &["eng"]);
        assert_eq!(delegate(&a, &eve, &sub("pal"), &[], NOW), Err(ApiError::GroupSeat));
    }

    #[test]
    fn a_person_delegates_their_own_seat_under_guards() {
        let seats = vec![Seat::listed(sub("alice")), Seat::listed(group("eng"))];
        let alice = who("alice", Some("alice@example.com"), &["eng"]);
        let h = delegate(&snap(&seats, strict(&[])), &alice, &email("Carol@Example.com"), &["example.com".into()], NOW)
            .unwrap();
        assert_eq!(
            (h.from, h.slot, h.to.clone(), h.depth),
            (sub("alice"), sub("alice"), email("carol@example.com"), 1)
        );
        assert!(h.guards.contains(&Guard::Decidable { now: NOW }));
        assert!(h.guards.contains(&Guard::NotVoted { sub: "alice".into() }));
        assert!(h.guards.contains(&Guard::Holds { seat: sub("alice") }));
        assert!(h.guards.contains(&Guard::NotSeated { principal: h.to.clone() }));
        assert!(h.guards.contains(&Guard::NotRequester {
            people: vec![sub("alice"), email("alice@example.com")],
            email_unknown: false
        }));
    }

    #[test]
    fn an_unverified_email_fails_closed_against_email_named_requesters() {
        let seats = vec![Seat::listed(sub("bob"))];
        let req = [email("pat@example.com")];
        // bob may be pat: without a verified email nobody can tell.
        let bob = who("bob", None, &[]);
        assert_eq!(decide(&snap(&seats, strict(&req)), &bob, NOW), Err(ApiError::SelfApproval));
        let verified = who("bob", Some("bob@example.com"), &[]);
        assert!(decide(&snap(&seats, strict(&req)), &verified, NOW).is_ok());
        // Requesters named by sub only: the email does not matter.
        assert!(decide(&snap(&seats, strict(&[sub("pat")])), &bob, NOW).is_ok());
        let lenient = Requesters { principals: &req, allow_self_approval: true };
        assert!(decide(&snap(&seats, lenient), &bob, NOW).is_ok());
    }

    #[test]
    fn routing_never_lets_a_requester_choose_who_decides() {
        let away = |who: &str, email: Option<&str>, to: &str| Absence {
            sub: who.into(),
            email: email.map(Into::into),
            stand_in: sub(to),
        };
        let listed = [sub("rita"), sub("bob"), group("eng")];
        let absences = [away("rita", None, "pal"), away("bob", None, "carol")];
        let routed = route(&listed, &absences, &strict(&[sub("rita")]));
        assert_eq!(routed, vec![Routing { slot: sub("bob"), stand_in: sub("carol") }]);
        // The stand-in is a requester: not routed either.
        assert!(route(&listed, &absences[1..], &strict(&[sub("carol")])).is_empty());
        // Listed by email, a requester by sub: the same person, not routed.
        let by_mail = [away("rita", Some("Rita@example.com"), "pal")];
        assert!(route(&[email("rita@example.com")], &by_mail, &strict(&[sub("rita")])).is_empty());
        assert_eq!(route(&[email("rita@example.com")], &by_mail, &strict(&[])).len(), 1);
        // Two absent approvers with one stand-in: the first slot only; a stand-in who is listed: none.
        let same = [away("a", None, "s"), away("b", None, "s")];
        assert_eq!(route(&[sub("a"), sub("b")], &same, &strict(&[])).len(), 1);
        assert!(route(&[sub("a"), sub("s")], &same[..1], &strict(&[])).is_empty());
    }

    #[test]
    fn every_hand_over_mails_only_where_the_operator_allows() {
        let seats = vec![Seat::listed(sub("alice")), Seat::listed(email("bob@partner.test"))];
        let alice = who("alice", Some("alice@example.com"), &[]);
        let a = snap(&seats, strict(&[]));
        let allowed = ["example.com".to_owned()];
        let field = |e: ApiError| match e {
            ApiError::Invalid { field, .. } => field,
            other => panic!("{other:?}"),
        };
        let out = delegate(&a, &alice, &email("friend@elsewhere.test"), &allowed, NOW).unwrap_err();
        assert_eq!(field(out), "to.email");
        assert!(delegate(&a, &alice, &email("carol@example.com"), &allowed, NOW).is_ok());
        assert!(delegate(&a, &alice, &sub("carol"), &[], NOW).is_ok(), "a sub is never mailed");
        let op = who("op", None, &["admin"]);
        let plan = |new: &[Principal]| reassign(&a, &op, new, &allowed, NOW);
        assert_eq!(field(plan(&[sub("alice"), email("x@elsewhere.test")]).unwrap_err()), "approvers[1].email");
        assert!(plan(&[sub("alice"), email("bob@partner.test")]).is_ok(), "the approval's own address stays mailable");
    }

    #[test]
    fn operators_neither_take_the_decision_nor_give_it_to_a_requester() {
        let seats = vec![Seat::listed(sub("a")), Seat::listed(sub("b"))];
        let op = who("op", Some("op@example.com"), &["admin"]);
        let req = [sub("rita")];
        let plan = |new: &[Principal]| reassign(&snap(&seats, strict(&req)), &op, new, &["example.com".into()], NOW);
        let field = |r: Result<Reassignment, ApiError>| match r {
            Err(ApiError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(plan(&[sub("a"), sub("op")])), "approvers[1]");
        assert_eq!(field(plan(&[email("OP@example.com")])), "approvers[0]");
        assert_eq!(field(plan(&[sub("rita"), sub("b")])), "approvers[0]");
        let ok = plan(&[sub("b"), sub("x")]).unwrap();
        assert_eq!((ok.removed.clone(), ok.added.clone()), (vec![sub("a")], vec![sub("x")]));
        assert!(ok.guards.contains(&Guard::Unsatisfied { slot: sub("a") }), "a racing approval on a keeps it");
        let all = Snapshot { quorum: Quorum::All, ..snap(&seats, strict(&req)) };
        assert!(reassign(&all, &op, &[sub("b"), group("g")], &[], NOW).is_ok());
        let votes = [RecordedVote {
            sub: "a".into(),
            principal: sub("a"),
            email: None,
            username: None,
            verdict: Verdict::Approve,
            comment: None,
            feedback: None,
            at: 0,
        }];
        let voted = Snapshot { votes: &votes, ..snap(&seats, strict(&req)) };
        assert_eq!(field(reassign(&voted, &op, &[sub("b")], &[], NOW)), "approvers", "a approved: stays listed");
        // A voter no longer delegates: their vote stands for their slot.
        assert_eq!(delegate(&voted, &who("a", None, &[]), &sub("z"), &[], NOW), Err(ApiError::AlreadyVoted));
    }
}

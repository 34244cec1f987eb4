//! Quorum: how many listed principals must approve, and what one more verdict means for an approval.

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::base::error::ApiError;
use crate::base::json::{FromJson, Placeholder, ReadError};

use crate::base::corrupt::CorruptValue;
use crate::base::principal::{Identity, Principal};
use crate::base::status::Verdict;
use crate::domain::delegation::{holders, Seat};

/// How many approvers must approve. Any single rejection rejects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quorum {
    Any,
    All,
    N(u32),
}

impl Quorum {
    /// Number of distinct approvers needed, given the listed principals.
    pub fn required(self, principals: usize) -> u32 {
        match self {
            Self::Any => 1,
            Self::All => principals.max(1) as u32,
            Self::N(n) => n.max(1),
        }
    }

    pub fn as_string(self) -> String {
        match self {
            Self::Any => "any".into(),
            Self::All => "all".into(),
            Self::N(n) => n.to_string(),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "any" => Some(Self::Any),
            "all" => Some(Self::All),
            n => n.parse::<u32>().ok().filter(|n| *n >= 1).map(Self::N),
        }
    }

    /// The stored `approvals.quorum`; anything [`Quorum::parse`] refuses is a corrupt row.
    pub fn from_stored(s: &str) -> Result<Self, CorruptValue> {
        Self::parse(s).ok_or_else(|| CorruptValue::new("approvals.quorum", s))
    }
}

impl Serialize for Quorum {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::N(n) => s.serialize_u32(*n),
            other => s.serialize_str(&other.as_string()),
        }
    }
}

const QUORUM_EXPECTED: &str = "quorum must be \"any\", \"all\" or a positive integer";

/// A visitor rather than an untagged enum, which would buffer the value into serde's generic content first.
impl<'de> Deserialize<'de> for Quorum {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Quorum;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(QUORUM_EXPECTED)
            }

            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Quorum, E> {
                u32::try_from(n).ok().filter(|n| *n >= 1).map(Quorum::N).ok_or_else(|| E::custom(QUORUM_EXPECTED))
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Quorum, E> {
                u64::try_from(n).map_err(|_| E::custom(QUORUM_EXPECTED)).and_then(|n| self.visit_u64(n))
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Quorum, E> {
                Quorum::parse(s).ok_or_else(|| E::custom(QUORUM_EXPECTED))
            }
        }
        d.deserialize_any(Visit)
    }
}

impl FromJson for Quorum {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let n = |n: u64| u32::try_from(n).ok().filter(|n| *n >= 1).map(Quorum::N);
        match v {
            Value::Number(number) if number.is_u64() || number.is_i64() => number.as_u64().and_then(n),
            Value::String(s) => Quorum::parse(s),
            _ => None,
        }
        .ok_or_else(|| ReadError::new(QUORUM_EXPECTED))
    }
}

impl Placeholder for Quorum {
    fn placeholder() -> Self {
        Self::Any
    }
}

/// What accepting this caller's verdict means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An approval that does not complete the quorum yet: record it (as satisfying `principal`), no callback.
    Record { principal: Principal, approvals: u32, required: u32 },
    /// This verdict decides the task: claim, then call Step Functions. `principal`: what an approval
    /// satisfies (a rejection names the caller's first matching principal).
    Complete { verdict: Verdict, principal: Principal },
}

/// An approval already recorded: who cast it and which listed principal it satisfied.
#[derive(Debug, Clone, Copy)]
pub struct CastApproval<'a> {
    pub sub: &'a str,
    /// The voter's verified email, if the token had one.
    pub email: Option<&'a str>,
    pub principal: &'a Principal,
}

/// The quorum counts listed principals, not people: each approval satisfies one still-unsatisfied listed
/// principal the caller matches (the most specific: its `sub`, then its email, then its groups), so
/// `all` over two groups needs a member of each. `all`: every listed principal; `n`: n of them; `any`: one.
/// A rejection by any matching approver decides. One person counts once even with two accounts: an approval
/// from a verified email that already approved under another `sub` is refused as already voted.
pub fn next_step(
    verdict: Verdict,
    quorum: Quorum,
    listed: &[Principal],
    who: &Identity,
    prior: &[CastApproval<'_>],
) -> Result<Step, ApiError> {
    let seats: Vec<Seat> = listed.iter().cloned().map(Seat::listed).collect();
    next_step_seated(verdict, quorum.required(listed.len()), &seats, who, prior)
}

/// [`next_step`] over an approval's seats (`delegation.rs`), with the number of approvals needed given: the
/// caller matches the seats that hold a slot, and a vote satisfies the slot of the seat it goes through — a
/// delegate decides for the listed principal they stand in for. `required` stays what the registration's
/// approvers made it: an escalation adds listed principals without raising the bar, so escalation principals
/// satisfy the approval as an alternative to the original ones, never as an additional requirement.
pub fn next_step_seated(
    verdict: Verdict,
    required: u32,
    seats: &[Seat],
    who: &Identity,
    prior: &[CastApproval<'_>],
) -> Result<Step, ApiError> {
    let mine = who.principals();
    let holders = holders(seats);
    let matching: Vec<&Principal> = mine
        .iter()
        .flat_map(|p| holders.iter().filter(move |h| h.principal.normalized() == *p).map(|h| h.slot))
        .collect();
    let Some(first) = matching.first() else { return Err(ApiError::NotFound) };
    if verdict == Verdict::Reject {
        return Ok(Step::Complete { verdict, principal: (*first).clone() });
    }
    let others: Vec<&CastApproval<'_>> = prior.iter().filter(|v| v.sub != who.sub).collect();
    if let Some(email) = &who.email {
        if others.iter().any(|v| v.email.is_some_and(|e| e.eq_ignore_ascii_case(email))) {
            return Err(ApiError::AlreadyVoted);
        }
    }
    let satisfied: Vec<&Principal> = others.iter().map(|v| v.principal).collect();
    let Some(principal) = matching.into_iter().find(|p| !satisfied.contains(p)) else {
        return Err(ApiError::AlreadySatisfied);
    };
    let mut distinct = satisfied.clone();
    distinct.sort();
    distinct.dedup();
    let approvals = distinct.len() as u32 + 1;
    Ok(if approvals >= required {
        Step::Complete { verdict, principal: principal.clone() }
    } else {
        Step::Record { principal: principal.clone(), approvals, required }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(sub: &str, email: Option<&str>, groups: &[&str]) -> Identity {
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

    fn group(g: &str) -> Principal {
        Principal::Group(g.into())
    }

    #[test]
    fn quorum_counts_listed_principals_not_people() {
        let listed = [group("eng"), group("finance")];
        let (eng1, eng2) = (person("e1", None, &["eng"]), person("e2", None, &["eng"]));
        let fin = person("f1", None, &["finance"]);
        let first = next_step(Verdict::Approve, Quorum::All, &listed, &eng1, &[]).unwrap();
        assert_eq!(first, Step::Record { principal: group("eng"), approvals: 1, required: 2 });
        let cast = [CastApproval { sub: "e1", email: None, principal: &group("eng") }];
        // A second engineer cannot stand in for finance: separation of duty holds.
        assert_eq!(next_step(Verdict::Approve, Quorum::All, &listed, &eng2, &cast), Err(ApiError::AlreadySatisfied));
        assert_eq!(
            next_step(Verdict::Approve, Quorum::All, &listed, &fin, &cast),
            Ok(Step::Complete { verdict: Verdict::Approve, principal: group("finance") })
        );
        // Any matching approver's rejection decides, satisfied or not.
        assert!(matches!(
            next_step(Verdict::Reject, Quorum::All, &listed, &eng2, &cast),
            Ok(Step::Complete { verdict: Verdict::Reject, .. })
        ));
    }

    #[test]
    fn a_vote_takes_the_most_specific_free_principal() {
        let alice = person("a", Some("alice@example.com"), &["finance"]);
        let listed = [group("finance"), Principal::Email("alice@example.com".into())];
        let step = next_step(Verdict::Approve, Quorum::All, &listed, &alice, &[]).unwrap();
        assert_eq!(
            step,
            Step::Record { principal: Principal::Email("alice@example.com".into()), approvals: 1, required: 2 }
        );
        // With her email slot taken by … herself under another account: one person, one vote.
        let cast = [CastApproval { sub: "a2", email: Some("ALICE@example.com"), principal: &listed[1] }];
        assert_eq!(next_step(Verdict::Approve, Quorum::All, &listed, &alice, &cast), Err(ApiError::AlreadyVoted));
    }

    #[test]
    fn quorum_rules() {
        let listed = [group("g"), Principal::Sub("x".into()), Principal::Sub("y".into())];
        let g = person("p", None, &["g"]);
        let any = next_step(Verdict::Approve, Quorum::Any, &listed, &g, &[]).unwrap();
        assert_eq!(any, Step::Complete { verdict: Verdict::Approve, principal: group("g") });
        let two = next_step(Verdict::Approve, Quorum::N(2), &listed, &g, &[]).unwrap();
        assert_eq!(two, Step::Record { principal: group("g"), approvals: 1, required: 2 });
        let cast = [CastApproval { sub: "x", email: None, principal: &listed[1] }];
        assert!(matches!(next_step(Verdict::Approve, Quorum::N(2), &listed, &g, &cast), Ok(Step::Complete { .. })));
        // Not an approver at all: indistinguishable from a missing approval.
        let nobody = person("z", None, &[]);
        assert_eq!(next_step(Verdict::Approve, Quorum::Any, &listed, &nobody, &[]), Err(ApiError::NotFound));
    }

    #[test]
    fn escalation_principals_stand_in_without_raising_the_bar() {
        // `all` over alice and bob (2 needed); the escalation added the lead: alice + lead completes it.
        let listed = [Principal::Sub("alice".into()), Principal::Sub("bob".into()), Principal::Sub("lead".into())];
        let seats: Vec<Seat> = listed.iter().cloned().map(Seat::listed).collect();
        let cast = [CastApproval { sub: "alice", email: None, principal: &listed[0] }];
        let lead = person("lead", None, &[]);
        assert!(matches!(next_step_seated(Verdict::Approve, 2, &seats, &lead, &cast), Ok(Step::Complete { .. })));
        // Counted over all three listed principals, `all` would have needed bob too.
        assert!(matches!(next_step(Verdict::Approve, Quorum::All, &listed, &lead, &cast), Ok(Step::Record { .. })));
    }

    #[test]
    fn a_delegate_satisfies_the_slot_it_stands_in_for() {
        use crate::domain::delegation::Seat;
        let (alice, bob) = (Principal::Sub("alice".into()), Principal::Sub("bob".into()));
        let carol = Principal::Sub("carol".into());
        let mut seats = vec![Seat::listed(alice.clone()), Seat::listed(bob.clone())];
        seats[0].delegated_to = Some(carol.clone());
        seats.push(Seat { principal: carol, slot: alice.clone(), depth: 1, ..Seat::listed(bob.clone()) });
        let step = next_step_seated(Verdict::Approve, 2, &seats, &person("carol", None, &[]), &[]).unwrap();
        assert_eq!(step, Step::Record { principal: alice.clone(), approvals: 1, required: 2 });
        // The delegator no longer matches a deciding seat.
        let gone = next_step_seated(Verdict::Approve, 2, &seats, &person("alice", None, &[]), &[]);
        assert_eq!(gone, Err(ApiError::NotFound));
        let cast = [CastApproval { sub: "carol", email: None, principal: &alice }];
        let last = next_step_seated(Verdict::Approve, 2, &seats, &person("bob", None, &[]), &cast).unwrap();
        assert_eq!(last, Step::Complete { verdict: Verdict::Approve, principal: bob });
    }

    #[test]
    fn quorum_wire_forms() {
        assert_eq!(serde_json::from_str::<Quorum>("\"all\"").unwrap(), Quorum::All);
        assert_eq!(serde_json::from_str::<Quorum>("2").unwrap(), Quorum::N(2));
        assert!(serde_json::from_str::<Quorum>("0").is_err());
        assert!(serde_json::from_str::<Quorum>("\"most\"").is_err());
        for refused in ["-1", "4294967296", "1.5", "true", "null", "[2]"] {
            let e = serde_json::from_str::<Quorum>(refused).unwrap_err().to_string();
            assert!(e.contains("\"any\", \"all\" or a positive integer"), "{refused}: {e}");
        }
        assert_eq!(serde_json::to_string(&Quorum::N(3)).unwrap(), "3");
        assert_eq!(Quorum::parse(&Quorum::All.as_string()), Some(Quorum::All));
    }
}

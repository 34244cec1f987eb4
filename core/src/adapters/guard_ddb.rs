//! The DynamoDB form of the rules' [`Guard`]s (`crate::domain::rules`): one `ConditionExpression` over the approval's
//! item, so that a change decided on a snapshot commits only while what it was decided on still holds — and
//! the item writes that vote and hand slots on under them. Platform-free; the worker adds the table, the key
//! and the other items of the same `TransactWriteItems` (index entries, events).
//!
//! The approval item keeps, beside the seed's attributes (`crate::adapters::dynamo`):
//! - `votes`: sub → the vote (one per person and account);
//! - `slots`: listed principal key → the sub whose approval satisfies it (D1's unique index
//!   `decisions_principal_approval`: a slot is satisfied once);
//! - `voterEmails`: lower-cased verified email → the sub that approved with it (one person counts once, under
//!   any account);
//! - `seats`: principal key → `{slot, depth, delegatedTo?, delegatedBy?, note?, routed}`, every seat (the
//!   listed principals and their stand-ins), as D1's `approval_principals` rows.
//!
//! An item written before these maps (the seed's own, or one of an older worker) gets them once, derived from
//! what it holds ([`upgrade`]), before its first guarded write: every guard requires `seats` to exist.

use serde_json::{json, Map, Value};

use crate::adapters::dynamo::{approvers, decision_columns, to_attr};
use crate::base::corrupt::CorruptValue;
use crate::base::principal::Principal;
use crate::domain::delegation::Seat;
use crate::domain::rules::{Guard, Handover, Reassignment, Routing};

pub const VOTES: &str = "votes";
pub const SLOTS: &str = "slots";
pub const VOTER_EMAILS: &str = "voterEmails";
pub const SEATS: &str = "seats";
const DELEGATED_TO: &str = "delegatedTo";

/// The attribute names and values one expression uses, as placeholders `#{prefix}{n}` / `:{prefix}{n}` (the
/// prefix keeps them apart from the placeholders of the rest of the request). DynamoDB refuses a placeholder
/// the request does not use: each is made only when an expression takes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expr {
    prefix: String,
    pub names: Map<String, Value>,
    /// As DynamoDB attribute values.
    pub values: Map<String, Value>,
}

impl Expr {
    pub fn new(prefix: &str) -> Self {
        Self { prefix: prefix.to_owned(), ..Self::default() }
    }

    /// The placeholder of the attribute name (or map key) `n`: the same one for the same name.
    pub fn name(&mut self, n: &str) -> String {
        if let Some((k, _)) = self.names.iter().find(|(_, v)| v.as_str() == Some(n)) {
            return k.clone();
        }
        let k = format!("#{}{}", self.prefix, self.names.len());
        self.names.insert(k.clone(), Value::from(n));
        k
    }

    /// The placeholder of the (plain JSON) value `v`.
    pub fn value(&mut self, v: impl Into<Value>) -> String {
        let attr = to_attr(&v.into());
        if let Some((k, _)) = self.values.iter().find(|(_, x)| **x == attr) {
            return k.clone();
        }
        let k = format!(":{}{}", self.prefix, self.values.len());
        self.values.insert(k.clone(), attr);
        k
    }

    /// `map.key`, both as placeholders.
    pub fn path(&mut self, map: &str, key: &str) -> String {
        format!("{}.{}", self.name(map), self.name(key))
    }
}

/// One UpdateItem of the approval's item: its `UpdateExpression`, `ConditionExpression` and their placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub update: String,
    pub condition: String,
    pub expr: Expr,
}

impl Update {
    /// The body of the UpdateItem (or of a transaction's `Update`) of the item `key` (the caller adds the table).
    pub fn body(&self, key: &str) -> Value {
        let mut body = json!({"Key": {crate::adapters::dynamo::KEY: {"S": key}}, "UpdateExpression": self.update,
            "ConditionExpression": self.condition, "ExpressionAttributeNames": self.expr.names});
        if !self.expr.values.is_empty() {
            body["ExpressionAttributeValues"] = Value::Object(self.expr.values.clone());
        }
        body
    }
}

fn key(p: &Principal) -> String {
    p.normalized().key()
}

/// The JSON text of a principal key as `requestedByJson` holds it (quoted: `"sub:a"` never matches `"sub:ab"`).
fn quoted(k: &str) -> String {
    Value::from(k).to_string()
}

/// `guards` as one condition; every condition also requires the item's maps (so an item without them is
/// refused, upgraded, and tried again). Parentheses only where an `OR` needs them: DynamoDB refuses redundant
/// ones.
pub fn condition(guards: &[Guard], e: &mut Expr) -> String {
    let mut parts = vec![format!("attribute_exists({})", e.name(SEATS))];
    for g in guards {
        let part = match g {
            Guard::Decidable { now } => {
                let (tok, ms, secs) = (e.name("taskToken"), e.name("expiresAtMs"), e.name("expiresAt"));
                let (st, until) = (e.name("status"), e.name("claimedUntil"));
                let (n, ns) = (e.value(*now), e.value(now.div_euclid(1000)));
                let (p, sp, c) = (e.value("pending"), e.value("PENDING"), e.value("claimed"));
                format!(
                    "attribute_exists({tok}) AND ({ms} > {n} OR (attribute_not_exists({ms}) AND {secs} > {ns}))
                     AND (attribute_not_exists({st}) OR {st} IN ({p}, {sp}) OR ({st} = {c} AND {until} <= {n}))"
                )
            }
            Guard::Holds { seat } => {
                let s = e.path(SEATS, &key(seat));
                let to = e.name(DELEGATED_TO);
                format!("attribute_exists({s}) AND attribute_not_exists({s}.{to})")
            }
            Guard::NotSeated { principal } => format!("attribute_not_exists({})", e.path(SEATS, &key(principal))),
            Guard::NotRequester { people, email_unknown } => {
                let (allow, json) = (e.name("allowSelfApproval"), e.name("requestedByJson"));
                let mut none: Vec<String> =
                    people.iter().map(|p| format!("NOT contains({json}, {})", e.value(quoted(&key(p))))).collect();
                if *email_unknown {
                    none.push(format!("NOT contains({json}, {})", e.value("\"email:")));
                }
                if none.is_empty() {
                    continue;
                }
                let yes = e.value(true);
                let none = if none.len() == 1 { none.remove(0) } else { format!("({})", none.join(" AND ")) };
                format!("({allow} = {yes} OR {none})")
            }
            Guard::Unsatisfied { slot } => format!("attribute_not_exists({})", e.path(SLOTS, &key(slot))),
            Guard::NotVoted { sub } => format!("attribute_not_exists({})", e.path(VOTES, sub)),
            Guard::Satisfied { at_least: 0 } => format!("attribute_exists({})", e.name(SLOTS)),
            Guard::Satisfied { at_least } => {
                let slots = e.name(SLOTS);
                format!("attribute_exists({slots}) AND size({slots}) >= {}", e.value(*at_least))
            }
            Guard::FreeFor { slot, sub } => {
                let (p, v) = (e.path(SLOTS, &key(slot)), e.value(sub.as_str()));
                format!("(attribute_not_exists({p}) OR {p} = {v})")
            }
            Guard::Uncounted { email, sub } => {
                let (p, v) = (e.path(VOTER_EMAILS, &email.to_lowercase()), e.value(sub.as_str()));
                format!("(attribute_not_exists({p}) OR {p} = {v})")
            }
        };
        parts.push(part);
    }
    parts.join(" AND ")
}

/// One vote as the item records it.
#[derive(Debug, Clone, PartialEq)]
pub struct VoteWrite<'a> {
    pub sub: &'a str,
    /// The vote as the `votes` map keeps it.
    pub value: Value,
    /// An approval: the listed principal it satisfies and the voter's verified email.
    pub approves: Option<(&'a Principal, Option<&'a str>)>,
}

impl VoteWrite<'_> {
    /// The SET actions recording the vote: the `votes` entry and, for an approval, its slot and its person.
    /// `keep`: what is on record stays (the final write after a claim: the vote may be there already).
    pub fn sets(&self, keep: bool, e: &mut Expr) -> Vec<String> {
        let sub = Value::from(self.sub);
        let mut entries = vec![(e.path(VOTES, self.sub), e.value(self.value.clone()))];
        if let Some((slot, email)) = self.approves {
            entries.push((e.path(SLOTS, &key(slot)), e.value(sub.clone())));
            if let Some(m) = email {
                entries.push((e.path(VOTER_EMAILS, &m.to_lowercase()), e.value(sub.clone())));
            }
        }
        entries
            .into_iter()
            .map(|(p, v)| if keep { format!("{p} = if_not_exists({p}, {v})") } else { format!("{p} = {v}") })
            .collect()
    }

    /// The write of a vote that does not complete the quorum, under `guards` (`crate::domain::rules::approval_guards`
    /// for an approval): an approval lands only while its slot is still listed (a reassignment may have
    /// removed it since the load; the vote then lands nowhere and the caller decides again).
    pub fn record(&self, guards: &[Guard]) -> Update {
        let mut e = Expr::new("g");
        let mut condition = condition(guards, &mut e);
        if let Some((slot, _)) = self.approves {
            condition.push_str(&format!(" AND attribute_exists({})", e.path(SEATS, &key(slot))));
        }
        Update { update: format!("SET {}", self.sets(false, &mut e).join(", ")), condition, expr: e }
    }
}

/// A seat as the `seats` map keeps it (keyed by its principal).
pub fn seat_value(s: &Seat) -> Value {
    let mut v = json!({"slot": key(&s.slot), "depth": s.depth, "routed": s.routed});
    if let Some(to) = &s.delegated_to {
        v[DELEGATED_TO] = Value::from(key(to));
    }
    if let Some(by) = &s.delegated_by {
        v["delegatedBy"] = Value::from(by.as_str());
    }
    if let Some(note) = &s.note {
        v["note"] = Value::from(note.as_str());
    }
    v
}

/// The `seats` map of the seats `seats`.
pub fn seats_value(seats: &[Seat]) -> Value {
    Value::Object(seats.iter().map(|s| (key(&s.principal), seat_value(s))).collect())
}

/// The seats of a (plain) item: from its `seats` map — the listed ones in the item's `approvers` order, then the
/// stand-ins by depth — else its listed approvers, each holding its own slot.
pub fn seats(item: &Map<String, Value>) -> Result<Vec<Seat>, CorruptValue> {
    let listed = approvers(item)?;
    let Some(map) = item.get(SEATS).and_then(Value::as_object) else {
        return Ok(listed.into_iter().map(Seat::listed).collect());
    };
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in map {
        let principal = Principal::from_key(k).ok_or_else(|| CorruptValue::new("seats", k))?;
        let text = |f: &str| v.get(f).and_then(Value::as_str).map(str::to_owned);
        let principal_at = |f: &'static str| {
            text(f).map(|k| Principal::from_key(&k).ok_or_else(|| CorruptValue::new(f, k))).transpose()
        };
        out.push(Seat {
            slot: principal_at("slot")?.unwrap_or_else(|| principal.clone()),
            depth: v.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32,
            delegated_to: principal_at(DELEGATED_TO)?,
            delegated_by: text("delegatedBy"),
            note: text("note"),
            routed: v.get("routed").and_then(Value::as_bool).unwrap_or(false),
            principal,
        });
    }
    let order = |s: &Seat| {
        let at = listed.iter().position(|p| key(p) == key(&s.principal)).filter(|_| s.depth == 0);
        (at.is_none(), at, s.depth, key(&s.principal))
    };
    out.sort_by_key(order);
    Ok(out)
}

/// The maps an item written before them gets (see the module doc), as one conditional UpdateItem: `seats` from
/// its listed approvers, `slots` and `voterEmails` from the approvals on record, `votes` if absent — only if
/// no `seats` is there yet and the votes are still the ones read (the map only grows: its size says so).
/// `None` when the item has them.
pub fn upgrade(item: &Map<String, Value>) -> Result<Option<Update>, CorruptValue> {
    if item.contains_key(SEATS) {
        return Ok(None);
    }
    let seats: Vec<Seat> = approvers(item)?.into_iter().map(Seat::listed).collect();
    let (mut slots, mut emails) = (Map::new(), Map::new());
    let votes = decision_columns(item);
    for v in votes.iter().filter(|v| v["decision"] == "approve") {
        let sub = v["sub"].clone();
        if let Some(p) = v["principal"].as_str().and_then(Principal::from_key) {
            slots.entry(key(&p)).or_insert_with(|| sub.clone());
        }
        if let Some(m) = v["email"].as_str() {
            emails.entry(m.to_lowercase()).or_insert(sub);
        }
    }
    let mut e = Expr::new("u");
    let mut sets = Vec::new();
    for (attr, v) in [
        (SEATS, seats_value(&seats)),
        (SLOTS, Value::Object(slots)),
        (VOTER_EMAILS, Value::Object(emails)),
        (VOTES, json!({})),
    ] {
        let (n, v) = (e.name(attr), e.value(v));
        sets.push(format!("{n} = if_not_exists({n}, {v})"));
    }
    let (seats_n, votes_n) = (e.name(SEATS), e.name(VOTES));
    let same_votes = if item.contains_key(VOTES) {
        format!("size({votes_n}) = {}", e.value(votes.len()))
    } else {
        format!("attribute_not_exists({votes_n})")
    };
    let id = e.name(crate::adapters::dynamo::KEY);
    Ok(Some(Update {
        update: format!("SET {}", sets.join(", ")),
        condition: format!("attribute_exists({id}) AND attribute_not_exists({seats_n}) AND {same_votes}"),
        expr: e,
    }))
}

/// A delegation's write (`crate::domain::rules::delegate`): the seat `from` hands its slot on and `to` gets the new
/// seat, under the hand-over's guards. `by`: who handed it on (display).
pub fn handover(h: &Handover, by: &str, note: Option<&str>) -> Update {
    let mut e = Expr::new("g");
    let condition = condition(&h.guards, &mut e);
    let seat = Seat {
        principal: h.to.clone(),
        slot: h.slot.clone(),
        depth: h.depth,
        delegated_to: None,
        delegated_by: Some(by.to_owned()),
        note: note.map(str::to_owned),
        routed: false,
    };
    let from = format!("{}.{}", e.path(SEATS, &key(&h.from)), e.name(DELEGATED_TO));
    let (to_key, seat_path) = (e.value(key(&h.to)), e.path(SEATS, &key(&h.to)));
    let seat_v = e.value(seat_value(&seat));
    Update { update: format!("SET {from} = {to_key}, {seat_path} = {seat_v}"), condition, expr: e }
}

/// Out-of-office routing at registration (`crate::domain::rules::route`): the listed seats, each routed slot handed to
/// its stand-in, and the stand-ins' seats (one level deeper, `delegatedBy` the absent approver).
pub fn routed_seats(listed: &[Principal], routed: &[Routing]) -> Vec<Seat> {
    let mut seats: Vec<Seat> = listed.iter().cloned().map(Seat::listed).collect();
    for r in routed {
        if let Some(s) = seats.iter_mut().find(|s| s.depth == 0 && key(&s.principal) == key(&r.slot)) {
            s.delegated_to = Some(r.stand_in.clone());
        }
        seats.push(Seat {
            principal: r.stand_in.clone(),
            slot: r.slot.clone(),
            depth: 1,
            delegated_to: None,
            delegated_by: Some(r.slot.value().to_owned()),
            note: None,
            routed: true,
        });
    }
    seats
}

/// An operator's reassignment (`crate::domain::rules::reassign`) over the seats it was decided on: the removed listed
/// principals go with their chains of stand-ins, the added ones get seats of their own, the listed order and
/// the count follow — under the reassignment's guards, and while no removed chain grew meanwhile (its last
/// seat still holds). Also answers the seats removed (their approver-index entries go too).
pub fn reassignment(r: &Reassignment, seats: &[Seat], listed_after: &[Principal]) -> (Update, Vec<Principal>) {
    let mut e = Expr::new("g");
    let mut condition = condition(&r.guards, &mut e);
    let removed_keys: Vec<String> = r.removed.iter().map(key).collect();
    let gone: Vec<&Seat> = seats.iter().filter(|s| removed_keys.contains(&key(&s.slot))).collect();
    let mut removes = Vec::new();
    for s in &gone {
        let p = e.path(SEATS, &key(&s.principal));
        condition.push_str(&format!(" AND attribute_exists({p})"));
        if s.holds() {
            condition.push_str(&format!(" AND attribute_not_exists({p}.{})", e.name(DELEGATED_TO)));
        }
        removes.push(p);
    }
    let mut sets = Vec::new();
    for p in &r.added {
        let (path, v) = (e.path(SEATS, &key(p)), e.value(seat_value(&Seat::listed(p.normalized()))));
        sets.push(format!("{path} = {v}"));
    }
    let keys: Vec<Value> = listed_after.iter().map(|p| Value::from(key(p))).collect();
    let (list, count) = (e.name("approvers"), e.name("approverCount"));
    sets.push(format!("{list} = {}", e.value(keys)));
    sets.push(format!("{count} = {}", e.value(listed_after.len())));
    let mut update = format!("SET {}", sets.join(", "));
    if !removes.is_empty() {
        update.push_str(&format!(" REMOVE {}", removes.join(", ")));
    }
    (Update { update, condition, expr: e }, gone.iter().map(|s| s.principal.clone()).collect())
}

/// What the tests of DynamoDB writes check every expression for.
#[cfg(test)]
pub(crate) mod testing {
    use super::Update;

    /// Every placeholder an update uses is defined and every defined one is used: DynamoDB refuses either
    /// mistake with a ValidationException.
    pub fn well_formed(u: &Update) {
        let text = format!("{} {}", u.update, u.condition);
        assert!(!text.contains("(("), "DynamoDB refuses redundant parentheses: {text}");
        let used = |p: &str| {
            text.match_indices(p)
                .any(|(i, _)| !text[i + p.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        };
        for k in u.expr.names.keys().chain(u.expr.values.keys()) {
            assert!(used(k), "{k} unused in {text}");
        }
        for token in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '#' || c == ':' || c == '_')) {
            if token.starts_with('#') {
                assert!(u.expr.names.contains_key(token), "{token} undefined in {text}");
            } else if token.starts_with(':') {
                assert!(u.expr.values.contains_key(token), "{token} undefined in {text}");
            }
        }
    }

    /// The expression with its placeholders replaced by what they stand for (values as plain JSON).
    pub fn readable(u: &Update, text: &str) -> String {
        let mut all: Vec<(String, String)> =
            u.expr.names.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
        all.extend(
            u.expr.values.iter().map(|(k, v)| (k.clone(), crate::adapters::dynamo::from_attr(v).unwrap().to_string())),
        );
        // Longest first: #g1 must not replace the start of #g10.
        all.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
        all.iter().fold(text.to_owned(), |t, (k, v)| t.replace(k.as_str(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{readable, well_formed};
    use super::*;
    use crate::domain::rules::{approval_guards, completion_guards};

    fn sub(s: &str) -> Principal {
        Principal::Sub(s.into())
    }
    fn group(s: &str) -> Principal {
        Principal::Group(s.into())
    }

    fn names(u: &Update, path: &str) -> String {
        path.split('.').map(|p| u.expr.names[p].as_str().unwrap().to_owned()).collect::<Vec<_>>().join(".")
    }

    #[test]
    fn an_approval_claims_its_slot_and_its_person_under_their_guards() {
        let slot = group("eng");
        let v =
            VoteWrite { sub: "e1", value: json!({"decision": "approve"}), approves: Some((&slot, Some("E1@X.io"))) };
        let u = v.record(&approval_guards("e1", &slot, Some("E1@X.io")));
        well_formed(&u);
        assert!(u.update.starts_with("SET "));
        let sets: Vec<String> =
            u.update["SET ".len()..].split(", ").map(|s| names(&u, s.split(" = ").next().unwrap())).collect();
        assert_eq!(sets, ["votes.e1", "slots.group:eng", "voterEmails.e1@x.io"]);
        // The condition: maps there, not voted, slot free, person uncounted, slot still listed.
        assert_eq!(
            readable(&u, &u.condition),
            "attribute_exists(seats) AND attribute_not_exists(votes.e1) AND attribute_not_exists(slots.group:eng) \
             AND (attribute_not_exists(voterEmails.e1@x.io) OR voterEmails.e1@x.io = \"e1\") \
             AND attribute_exists(seats.group:eng)"
        );
        // A rejection takes no slot; the final write keeps what is on record.
        let no = VoteWrite { sub: "e2", value: json!({"decision": "reject"}), approves: None };
        let mut e = Expr::new("g");
        let sets = no.sets(true, &mut e);
        assert_eq!(sets.len(), 1);
        assert!(sets[0].contains("if_not_exists("));
    }

    #[test]
    fn a_completion_needs_its_count_and_the_requester_guard_reads_the_stored_list() {
        let mut e = Expr::new("c");
        let cond = condition(&completion_guards("f1", &sub("f1"), None, 2), &mut e);
        let u = Update { update: String::new(), condition: cond.clone(), expr: e.clone() };
        well_formed(&u);
        // The slot free or already the caller's (a retry), and the one approval it completes on record.
        assert_eq!(
            cond,
            "attribute_exists(#c0) AND (attribute_not_exists(#c1.#c2) OR #c1.#c2 = :c0) AND attribute_exists(#c1) \
             AND size(#c1) >= :c1"
        );
        assert_eq!((e.values[":c0"].clone(), e.values[":c1"].clone()), (json!({"S": "f1"}), json!({"N": "1"})));
        let mut e = Expr::new("r");
        let g = Guard::NotRequester { people: vec![sub("a"), Principal::Email("A@x.io".into())], email_unknown: true };
        let cond = condition(&[g], &mut e);
        well_formed(&Update { update: String::new(), condition: cond, expr: e.clone() });
        let vals: Vec<&str> = e.values.values().filter_map(|v| v["S"].as_str()).collect();
        assert_eq!(vals, ["\"sub:a\"", "\"email:a@x.io\"", "\"email:"]);
        // Nobody to rule out: no condition beyond the maps'.
        let mut e = Expr::new("n");
        let none = condition(&[Guard::NotRequester { people: vec![], email_unknown: false }], &mut e);
        assert_eq!(none, "attribute_exists(#n0)");
    }

    #[test]
    fn a_handover_writes_both_seats_under_the_guards() {
        let h = Handover {
            from: sub("alice"),
            slot: sub("alice"),
            to: Principal::Email("c@x.io".into()),
            depth: 1,
            guards: vec![
                Guard::Decidable { now: 1_500 },
                Guard::Holds { seat: sub("alice") },
                Guard::NotSeated { principal: Principal::Email("c@x.io".into()) },
                Guard::NotVoted { sub: "alice".into() },
            ],
        };
        let u = handover(&h, "alice@x.io", Some("away"));
        well_formed(&u);
        let seat = u.expr.values.values().find(|v| v.get("M").is_some()).unwrap();
        assert_eq!(
            crate::adapters::dynamo::from_attr(seat).unwrap(),
            json!({"slot": "sub:alice", "depth": 1, "routed": false, "delegatedBy": "alice@x.io", "note": "away"})
        );
        assert!(u.condition.contains(":g") && !u.condition.contains("size("));
        let item = json!({"approvalId": "a", "approvers": ["sub:alice"], "seats": {
            "sub:alice": {"slot": "sub:alice", "depth": 0, "routed": false, "delegatedTo": "email:c@x.io"},
            "email:c@x.io": {"slot": "sub:alice", "depth": 1, "routed": false, "delegatedBy": "alice@x.io"}}});
        let read = seats(item.as_object().unwrap()).unwrap();
        assert_eq!(
            read.iter().map(|s| (s.principal.key(), s.depth, s.holds())).collect::<Vec<_>>(),
            [("sub:alice".to_owned(), 0, false), ("email:c@x.io".to_owned(), 1, true)]
        );
    }

    #[test]
    fn an_older_item_is_upgraded_from_what_it_holds_once() {
        let item = json!({"approvalId": "a", "approverUserId": "u1", "votes": {
            "u1": {"principal": "sub:u1", "email": "U1@x.io", "decision": "approve", "at": 1},
            "u2": {"principal": "sub:u1", "decision": "reject", "at": 2}}});
        let u = upgrade(item.as_object().unwrap()).unwrap().unwrap();
        well_formed(&u);
        let plain: Vec<Value> =
            u.expr.values.values().map(|v| crate::adapters::dynamo::from_attr(v).unwrap()).collect();
        assert!(plain.contains(&json!({"sub:u1": {"slot": "sub:u1", "depth": 0, "routed": false}})));
        assert!(plain.contains(&json!({"sub:u1": "u1"})), "the slot its approval satisfied");
        assert!(plain.contains(&json!({"u1@x.io": "u1"})));
        assert!(plain.contains(&json!(2)), "conditional on the two votes read");
        let seed = json!({"approvalId": "a", "approverUserId": "u1"});
        assert!(upgrade(seed.as_object().unwrap()).unwrap().unwrap().condition.contains("attribute_not_exists"));
        let done = json!({"approvalId": "a", "approverUserId": "u1", "seats": {}});
        assert_eq!(upgrade(done.as_object().unwrap()).unwrap(), None);
    }

    #[test]
    fn a_reassignment_removes_chains_and_keeps_the_count() {
        let mut alice = Seat::listed(sub("alice"));
        alice.delegated_to = Some(sub("carol"));
        let carol = Seat { principal: sub("carol"), slot: sub("alice"), depth: 1, ..Seat::listed(sub("carol")) };
        let seats = [alice, carol, Seat::listed(sub("bob"))];
        let r = Reassignment {
            removed: vec![sub("alice")],
            added: vec![group("ops")],
            guards: vec![Guard::Decidable { now: 1 }, Guard::Unsatisfied { slot: sub("alice") }],
        };
        let (u, gone) = reassignment(&r, &seats, &[sub("bob"), group("ops")]);
        well_formed(&u);
        assert_eq!(gone, [sub("alice"), sub("carol")]);
        let removed: Vec<String> =
            u.update.split(" REMOVE ").nth(1).unwrap().split(", ").map(|p| names(&u, p)).collect();
        assert_eq!(removed, ["seats.sub:alice", "seats.sub:carol"]);
        // carol holds the slot now: the chain must not have grown past her.
        let placeholder = |n: &str| u.expr.names.iter().find(|(_, v)| *v == n).unwrap().0.clone();
        let (seats_p, carol_p, to_p) = (placeholder("seats"), placeholder("sub:carol"), placeholder("delegatedTo"));
        assert!(u.condition.contains(&format!("attribute_not_exists({seats_p}.{carol_p}.{to_p})")), "{}", u.condition);
        let routed = routed_seats(&[sub("a"), group("g")], &[Routing { slot: sub("a"), stand_in: sub("s") }]);
        assert_eq!(
            routed.iter().map(|s| (s.principal.key(), s.holds(), s.routed)).collect::<Vec<_>>(),
            [("sub:a".into(), false, false), ("group:g".into(), true, false), ("sub:s".to_owned(), true, true)]
        );
    }
}

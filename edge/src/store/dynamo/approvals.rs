//! Registration, reads, votes and the claim on the token table.

use std::collections::BTreeSet;

use futures_util::future::join_all;
use ringi_core::adapters::dynamo::{self as item, attempt_columns, DdbOutcome, KEY};
use ringi_core::adapters::guard_ddb::{self as guard, Expr};
use ringi_core::api::register::NewApproval;
use ringi_core::base::principal::{Identity, Principal};
use ringi_core::base::status::ApprovalStatus;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::delegation::principal_value;
use ringi_core::domain::inbox::{self, Cursor, InboxFilter};
use ringi_core::domain::rate::RateWindow;
use ringi_core::domain::rules::{self, Guard, Routing};
use ringi_core::domain::self_approval::Requesters;
use ringi_core::domain::vote::RecordedVote;
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde_json::{json, Map, Value};

use super::items::{
    approval_of_index_entry, attempt_actor, attempt_status, columns, corrupt, key, merge, obj, open_values, plain,
    refused, unconfirmed_detail, values, vote_write, with_expr, OPEN,
};
use super::{DynamoStore, INBOX_QUERY_LIMIT};
use crate::store::port::decision::{
    CallbackFailure, ClaimRequest, Guess, Inserted, Opened, Registered, Registrant, Vote,
};
use crate::store::port::rows::{Approval, Attempt, AttemptRow, InboxEntry, Loaded};
use crate::store::port::ApprovalStore;

impl ApprovalStore for DynamoStore {
    async fn get(&self, id: &ApprovalId) -> Result<Option<Approval>, ApiError> {
        self.approval_item(id).await?.as_ref().map(Self::approval).transpose()
    }

    async fn load(&self, id: &ApprovalId) -> Result<Option<Loaded>, ApiError> {
        self.approval_item(id).await?.as_ref().map(Self::loaded).transpose()
    }

    async fn insert(
        &self,
        id: &ApprovalId,
        a: &NewApproval,
        registrant: &Registrant<'_>,
        now: i64,
        remind_window_ms: i64,
    ) -> Result<Inserted, ApiError> {
        // Out-of-office routing in the registration's own transaction: the listed people's absences (one
        // BatchGetItem), `rules::route` decides, the routed seats and their events are written with the approval.
        let absences = self.absences(&a.approvers, now).await?;
        let requesters = Requesters { principals: &a.requested_by, allow_self_approval: a.allow_self_approval };
        let routed = rules::route(&a.approvers, &absences, &requesters);
        let seats = guard::routed_seats(&a.approvers, &routed);
        let mut actions = self.registration(id, a, &seats, registrant, now, remind_window_ms);
        for r in &routed {
            let detail = obj(json!({"from": principal_value(&r.slot), "to": principal_value(&r.stand_in)}));
            actions.push(self.event_put((id, now, EventKind::Routed), &Actor::System, &detail, None));
        }
        let detail =
            obj(json!({"approvers": a.approvers.len(), "quorum": a.quorum.as_string(), "notified": a.notify.len()}));
        let registrant_actor = Actor::Registrant { id: registrant.label.to_owned() };
        actions.push(self.event_put((id, now, EventKind::Registered), &registrant_actor, &detail, None));
        match self.call("TransactWriteItems", json!({"TransactItems": actions})).await? {
            DdbOutcome::Ok(_) => {
                Ok(Inserted::Created { routed: routed.into_iter().map(|r: Routing| (r.slot, r.stand_in)).collect() })
            }
            DdbOutcome::Cancelled(reasons) if reasons.first().is_some_and(|r| r == "ConditionalCheckFailed") => {
                Ok(Inserted::RateLimited { retry_after: RateWindow::at(now).retry_after_secs })
            }
            DdbOutcome::Cancelled(reasons) if reasons.iter().any(|r| r == "ConditionalCheckFailed") => {
                Ok(Inserted::Exists)
            }
            other => Err(refused("TransactWriteItems", &other)),
        }
    }

    async fn registered(&self, id: &ApprovalId, token_sha256: &str) -> Result<Vec<Registered>, ApiError> {
        let mut ids = vec![id.as_str().to_owned()];
        if let Some(t) = self.item(&item::token_key(token_sha256)).await? {
            ids.extend(t.get("ref").and_then(Value::as_str).filter(|r| *r != id.as_str()).map(str::to_owned));
        }
        let mut out = Vec::new();
        for i in self.items(&ids).await? {
            let Some(rid) = i.get(KEY).and_then(Value::as_str) else { continue };
            // A seed item keeps no fingerprint: it is its token's.
            let sha = i.get("tokenSha256").and_then(Value::as_str).map(str::to_owned).or_else(|| {
                i.get("taskToken")
                    .and_then(Value::as_str)
                    .and_then(|t| TaskToken::parse(t).ok())
                    .map(|t| t.fingerprint())
            });
            out.push(Registered {
                id: rid.to_owned(),
                token_sha256: sha.unwrap_or_default(),
                request_sha256: i.get("requestSha256").and_then(Value::as_str).map(str::to_owned),
                expires_at: item::expires_at_ms(&i).unwrap_or(0) as f64,
            });
        }
        Ok(out)
    }

    /// One Query of the approver index per principal (at once), then the approvals themselves
    /// (BatchGetItem): the index keeps keys only, the approval item is the one source of its state.
    async fn inbox(
        &self,
        who: &Identity,
        principals: &[Principal],
        filter: InboxFilter,
        now: i64,
        cursor: Option<Cursor>,
        limit: usize,
    ) -> Result<Vec<InboxEntry>, ApiError> {
        let queries = principals.iter().map(|p| {
            self.ok(
                "Query",
                json!({"IndexName": self.ddb.index, "KeyConditionExpression": "#k = :k",
                       "ExpressionAttributeNames": {"#k": item::INDEX_KEY},
                       "ExpressionAttributeValues": {":k": {"S": item::index_key(p)}}, "Limit": INBOX_QUERY_LIMIT}),
            )
        });
        let mut ids = BTreeSet::new();
        for answer in join_all(queries).await {
            for i in answer?["Items"].as_array().into_iter().flatten() {
                if let Some(k) = i[KEY]["S"].as_str() {
                    ids.insert(approval_of_index_entry(k).to_owned());
                }
            }
        }
        let ids: Vec<String> = ids.into_iter().filter(|i| ApprovalId::parse(i).is_ok()).collect();
        let pending = filter == InboxFilter::Pending;
        let mut rows = Vec::new();
        for i in self.items(&ids).await? {
            if !i.contains_key("expiresAt") && !i.contains_key("expiresAtMs") {
                continue;
            }
            let (row, id) = Self::inbox_row(&i, pending, principals)?;
            let entry = row.typed(now, who)?;
            let open = matches!(entry.item.status, ApprovalStatus::Pending | ApprovalStatus::Claimed);
            if open == pending {
                rows.push((entry, id));
            }
        }
        // The inbox's one order and cursor (D1's SQL keeps the same).
        let rows = rows.into_iter().map(|(e, id)| (e.sort_at, id, e)).collect();
        Ok(inbox::page(filter, rows, cursor.as_ref(), limit))
    }

    async fn votes(&self, id: &ApprovalId) -> Result<Vec<RecordedVote>, ApiError> {
        Ok(self.load(id).await?.map(|l| l.votes).unwrap_or_default())
    }

    /// The load alone: the route then claims (a deciding verdict) or records the vote, each one conditional
    /// write of its own.
    async fn open_decision(&self, id: &ApprovalId, _guess: Option<&Guess<'_>>) -> Result<Opened, ApiError> {
        Ok(Opened { loaded: self.load(id).await?, claimed: None, voted: false, votes_after: None })
    }

    /// The vote under its guards (`rules::approval_guards`): an approval claims its slot and its person in the
    /// same conditional write, so of two members of one group approving at once one satisfies the group.
    async fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> Result<(), ApiError> {
        let write = vote_write(vote);
        let guards = match write.approves {
            Some((slot, email)) => rules::approval_guards(vote.sub, slot, email),
            None => vec![Guard::NotVoted { sub: vote.sub.to_owned() }],
        };
        let update = write.record(&guards);
        let detail = obj(json!({"verdict": vote.verdict.as_str()}));
        let event = self.event_put((id, vote.at, EventKind::Voted), &vote.actor(), &detail, None);
        self.transact_guarded(id, vec![self.tx_guarded(id, &update), event]).await.map(drop)
    }

    /// The claim: one conditional UpdateItem that takes the lease and records this attempt unless one that
    /// may have been delivered is on record (`if_not_exists(attempt, …)`); exactly one concurrent caller's
    /// condition holds.
    /// With `c.guards` (an approval that completes the quorum: `rules::completion_guards`) the claim also
    /// commits under them: its slot still free, its person uncounted, the approvals it completes on record.
    async fn claim(&self, id: &ApprovalId, c: &ClaimRequest<'_>) -> Result<Option<Attempt>, ApiError> {
        let attempt = json!({"id": c.claim_id, "verdict": c.verdict.as_str(), "sub": c.sub, "by": c.by, "at": c.now});
        let mut e = Expr::new("g");
        let guarded =
            if c.guards.is_empty() { String::new() } else { format!(" AND {}", guard::condition(&c.guards, &mut e)) };
        let (names, vals) = with_expr(
            json!({"#st": "status"}),
            merge(open_values(c.now, c.claim_id), json!({":until": c.until, ":attempt": attempt})),
            e,
        );
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :claimed, claimId = :cid, claimedUntil = :until, attempt = if_not_exists(attempt, :attempt)",
            "ConditionExpression": format!("({OPEN}){guarded}"),
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals, "ReturnValues": "ALL_NEW"});
        let mut answer = self.conditional("UpdateItem", body.clone()).await?;
        if answer.is_none() && !c.guards.is_empty() && self.upgrade(id).await? {
            answer = self.conditional("UpdateItem", body).await?;
        }
        let Some(answer) = answer else { return Ok(None) };
        let after = plain(id.as_str(), answer["Attributes"].as_object().unwrap_or(&Map::new()))?;
        let row: AttemptRow = columns(id.as_str(), "attempt", attempt_columns(&after))?;
        Attempt::try_from(row).map(Some).map_err(corrupt(id.as_str()))
    }

    async fn finish(&self, id: &ApprovalId, claim_id: &str, vote: &Vote<'_>) -> Result<(), ApiError> {
        let status = vote.verdict.final_status().as_str();
        let mut e = Expr::new("g");
        let sets = vote_write(vote).sets(true, &mut e).join(", ");
        let (names, vals) = with_expr(
            json!({"#st": "status"}),
            json!({":status": status, ":one": 1, ":at": vote.at, ":cid": claim_id}),
            e,
        );
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": format!("SET #st = :status, decision = :status, confirmed = :one, decidedAt = :at,
               {sets} REMOVE taskToken, claimId, claimedUntil, attempt"),
            "ConditionExpression": "claimId = :cid",
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals});
        let detail = obj(json!({"verdict": vote.verdict.as_str(), "status": status, "confirmed": true}));
        let event = self.event_put((id, vote.at, EventKind::Decided), &vote.actor(), &detail, None);
        self.transact_guarded(id, vec![self.tx_update(body), event]).await.map(drop)
    }

    async fn unconfirmed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        vote: Option<&Vote<'_>>,
    ) -> Result<(), ApiError> {
        // The recorded attempt's verdict decides the status: read it, then write conditional on the claim.
        let Some(current) = self.approval_item(id).await? else { return Ok(()) };
        let Some(attempt) = current.get("attempt").and_then(Value::as_object) else { return Ok(()) };
        let status = attempt_status(attempt.get("verdict").and_then(Value::as_str));
        let systems = attempt.get("sub").is_none_or(|s| s.is_null() || s == "");
        let mut set =
            "SET #st = :status, decision = :status, confirmed = :zero, decidedAt = :now, decidedOnExpiry = :sys"
                .to_owned();
        let mut e = Expr::new("g");
        if let Some(v) = vote {
            set.push_str(&format!(", {}", vote_write(v).sets(true, &mut e).join(", ")));
        }
        let (names, vals) = with_expr(
            json!({"#st": "status"}),
            json!({":status": status, ":zero": 0, ":now": now, ":sys": systems, ":cid": claim_id}),
            e,
        );
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": format!("{set} REMOVE taskToken, claimId, claimedUntil"),
            "ConditionExpression": "claimId = :cid AND attribute_exists(attempt)",
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals});
        let event =
            self.event_put((id, now, EventKind::Decided), &attempt_actor(attempt), &unconfirmed_detail(attempt), None);
        self.transact_guarded(id, vec![self.tx_update(body), event]).await.map(drop)
    }

    async fn expire(&self, id: &ApprovalId, claim_id: &str, now: i64) -> Result<(), ApiError> {
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :expired, decidedAt = :now REMOVE taskToken, claimId, claimedUntil, attempt",
            "ConditionExpression": "claimId = :cid",
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": values(json!({":expired": ApprovalStatus::Expired.as_str(), ":now": now, ":cid": claim_id}))});
        let detail = obj(json!({"reason": "task_closed"}));
        let event = self.event_put((id, now, EventKind::Expired), &Actor::System, &detail, None);
        self.transact(vec![self.tx_update(body), event]).await.map(drop)
    }

    /// Back to pending. `not_sent`: no try of this claim can have reached Step Functions, so its own attempt
    /// record goes too (DynamoDB has no CASE: the write that also drops it is tried first, conditional on
    /// the attempt being this claim's).
    async fn release(&self, id: &ApprovalId, claim_id: &str, not_sent: bool) -> Result<(), ApiError> {
        if not_sent && self.conditional("UpdateItem", Self::release_body(id, claim_id, true)).await?.is_some() {
            return Ok(());
        }
        self.conditional("UpdateItem", Self::release_body(id, claim_id, false)).await.map(drop)
    }

    /// [`ApprovalStore::release`] with the `callback_failed` event (the error class, never the token) in the
    /// same transaction. Recorded whatever became of the claim, as on D1: if the claim is no longer this
    /// request's (its lease ran out and another took it), the event is put alone.
    async fn release_failed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        not_sent: bool,
        failure: &CallbackFailure,
    ) -> Result<(), ApiError> {
        let detail = obj(json!({"verdict": failure.verdict.as_str(), "error": failure.class, "code": failure.code,
                                "maybeDelivered": !not_sent}));
        let event = self.event_put((id, failure.at, EventKind::CallbackFailed), &failure.actor, &detail, None);
        let tries: &[bool] = if not_sent { &[true, false] } else { &[false] };
        for &forget in tries {
            let update = self.tx_update(Self::release_body(id, claim_id, forget));
            if self.transact(vec![update, event.clone()]).await? {
                return Ok(());
            }
        }
        self.ok("PutItem", json!({"Item": event["Put"]["Item"]})).await.map(drop)
    }
}

"""The two storage backends as the decision-path tests see them: a worker (the session's on D1, one extra on
DynamoDB), its API and paused executions, and what it stored read the same way on both (D1's rows, the
DynamoDB table's item in moto)."""
from __future__ import annotations

import json
import time

import pytest
import requests
from ringi_stack import DDB_TABLE, Stack

from .api import Api, Workflows, d1, paused_factory

# The columns `Backend.stored` answers, as D1 names them, and the DynamoDB attribute each one is read from.
_DDB_ATTRIBUTES = {"status": "status", "task_token": "taskToken", "claim_id": "claimId", "mail_state": "mailState",
                   "mail_attempts": "mailAttempts", "confirmed": "confirmed", "decided_on_expiry": "decidedOnExpiry",
                   "claimed_until": "claimedUntil"}


def _plain(attr: dict | None):
    """A DynamoDB attribute value as plain Python (the few types these columns use)."""
    if not attr:
        return None
    (ty, v), = attr.items()
    return int(v) if ty == "N" else int(v) if ty == "BOOL" else v


class Backend:
    """One backend under test: `name` (`d1` | `dynamodb`), its worker's `url`, `api`, `paused(...)`."""

    def __init__(self, name: str, stack: Stack, url: str, workflows: Workflows):
        self.name, self.stack, self.url = name, stack, url
        self.api = Api(stack, url)
        self.paused = paused_factory(workflows, self.api)

    def __repr__(self) -> str:
        return self.name

    def extra_worker(self, name: str, overrides: dict) -> str:
        """Another worker of this backend (on DynamoDB: the same table) with some settings changed; again with
        the same name, restarted on its port (after `kill`)."""
        if self.name == "d1":
            return self.stack.extra_worker(name, overrides)
        return self.stack.extra_worker(f"{name}-dynamodb", {**self.stack.dynamodb_vars(DDB_TABLE), **overrides})

    def kill(self, name: str) -> None:
        """SIGKILLs the extra worker `name` of this backend."""
        self.stack.kill(self._extra(name))

    def _extra(self, name: str) -> str:
        return f"worker-{name}" if self.name == "d1" else f"worker-{name}-dynamodb"

    def log_lines(self, *markers: str, worker: str | None = None, count: int = 1) -> list[str]:
        """The lines of this backend's worker's log (or of its extra worker `worker`) holding every marker, once
        there are `count` of them."""
        log = self._extra(worker) if worker else "worker" if self.name == "d1" else "worker-dynamodb"
        return self.stack.log_lines(log, *markers, count=count)

    def run_cron(self, url: str | None = None) -> None:
        self.stack.run_cron(url or self.url)

    def inbox(self, user: str, status: str = "pending", cursor: str | None = None, **claims) -> dict:
        params = {"status": status, **({"cursor": cursor} if cursor else {})}
        r = requests.get(f"{self.url}/api/v1/approvals", params=params,
                         headers={"authorization": f"Bearer {self.stack.mint(user, **claims)}"}, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def stored(self, approval_id: str, *columns: str, worker: str | None = None) -> dict:
        """What the backend keeps of an approval, as D1's column names: `status`, `task_token`, `claim_id`,
        `attempt_id`, `mail_state`, `mail_attempts`, `votes` (how many). `worker`: an extra worker's name (D1:
        its own database; DynamoDB: the one table)."""
        if self.name == "d1":
            persist = self.stack.state / f"worker-{worker}-d1" if worker else None
            picked = ", ".join(f"(SELECT count(*) FROM decisions WHERE approval_id = a.id) AS votes" if c == "votes"
                               else c for c in columns)
            [row] = d1(self.stack, f"SELECT {picked} FROM approvals a WHERE id = '{approval_id}'", persist=persist)
            return row
        item = self._item(approval_id)
        read = {c: _plain(item.get(a)) for c, a in _DDB_ATTRIBUTES.items()}
        read["attempt_id"] = _plain(item.get("attempt", {}).get("M", {}).get("id"))
        read["votes"] = len(item.get("votes", {}).get("M", {}))
        return {c: read[c] for c in columns}

    def events(self, approval_id: str, kind: str) -> list[dict]:
        """The approval's stored events of one kind, oldest first: `actor` in its stored form, `detail`."""
        if self.name == "d1":
            rows = d1(self.stack, f"SELECT actor, detail_json FROM approval_events WHERE approval_id = '{approval_id}' "
                                  f"AND kind = '{kind}' ORDER BY at, seq")
            return [{"actor": r["actor"], "detail": json.loads(r["detail_json"])} for r in rows]
        items = self.stack.aws("dynamodb").query(
            TableName=DDB_TABLE, IndexName="eventsByApproval", KeyConditionExpression="eventOf = :id",
            ExpressionAttributeValues={":id": {"S": approval_id}})["Items"]
        items = sorted((i for i in items if i["kind"]["S"] == kind), key=lambda i: i["eventSort"]["S"])
        return [{"actor": i["actor"]["S"], "detail": json.loads(i["detailJson"]["S"])} for i in items]

    def schedule(self, approval_id: str) -> list[dict]:
        """The approval's stored schedule entries by seq: `outcome` (None while not done)."""
        if self.name == "d1":
            return d1(self.stack, f"SELECT outcome FROM approval_schedule WHERE approval_id = '{approval_id}' "
                                  "ORDER BY seq")
        entries = self._item(approval_id).get("schedule", {}).get("M", {})
        return [{"outcome": _plain(entries[k]["M"].get("outcome"))} for k in sorted(entries, key=int)]

    def seats(self, approval_id: str) -> int:
        """How many principals hold a seat on the approval (listed, stand-ins, escalation principals)."""
        if self.name == "d1":
            [row] = d1(self.stack, f"SELECT count(*) AS n FROM approval_principals WHERE approval_id = '{approval_id}'")
            return row["n"]
        return len(self._item(approval_id).get("seats", {}).get("M", {}))

    def into_the_lead(self, approval_id: str, seconds: int = 120) -> None:
        """With an outcome on expiry: the approvers' deadline has just passed; the task's is `seconds` from now."""
        now = int(time.time() * 1000)
        if self.name == "d1":
            d1(self.stack, f"UPDATE approvals SET expires_at = {now - 1000}, task_expires_at = {now + seconds * 1000} "
                           f"WHERE id = '{approval_id}'")
            return
        self.stack.aws("dynamodb").update_item(
            TableName=DDB_TABLE, Key={"approvalId": {"S": approval_id}},
            UpdateExpression="SET expiresAtMs = :a, taskExpiresAtMs = :t",
            ExpressionAttributeValues={":a": {"N": str(now - 1000)}, ":t": {"N": str(now + seconds * 1000)}})

    def leave_unsealed(self, approval_id: str, worker: str) -> None:
        """Writes one more event of the approval, a millisecond after its last, as a request that died before
        sealing it would have left it: unsealed (D1: `chain_n` NULL; DynamoDB: marked `chainPending`).
        `worker`: the extra worker whose store it is (D1: its own database; DynamoDB: the one table)."""
        if self.name == "d1":
            d1(self.stack, "INSERT INTO approval_events (approval_id, at, kind, actor, actor_display, detail_json, "
                           "dedupe_key) SELECT approval_id, at + 1, kind, actor, actor_display, detail_json, "
                           f"'left-unsealed-{approval_id}' FROM approval_events WHERE approval_id = '{approval_id}' "
                           "ORDER BY seq DESC LIMIT 1", persist=self.stack.state / f"worker-{worker}-d1")
            return
        ddb = self.stack.aws("dynamodb")
        last = max(ddb.query(TableName=DDB_TABLE, IndexName="eventsByApproval", KeyConditionExpression="eventOf = :id",
                             ExpressionAttributeValues={":id": {"S": approval_id}})["Items"],
                   key=lambda i: i["eventSort"]["S"])
        at, seq = int(last["at"]["N"]) + 1, 1
        item = {k: v for k, v in last.items() if k not in ("chainN", "prevDigest", "digest")}
        item.update({"approvalId": {"S": f"event#left-unsealed-{approval_id}"}, "at": {"N": str(at)},
                     "seq": {"N": str(seq)}, "eventSort": {"S": f"{at:013}#{seq:016}"}, "chainPending": {"N": "1"}})
        ddb.put_item(TableName=DDB_TABLE, Item=item)

    def _item(self, approval_id: str) -> dict:
        return self.stack.aws("dynamodb").get_item(TableName=DDB_TABLE, Key={"approvalId": {"S": approval_id}},
                                                   ConsistentRead=True)["Item"]


# Fixtures for a module whose tests run on both backends: imported there, they take the place of conftest.py's
# session-wide `api` / `paused` (the D1 worker's) with the module's `backend`.
@pytest.fixture(scope="module")
def api(backend):
    return backend.api


@pytest.fixture
def paused(backend):
    return backend.paused

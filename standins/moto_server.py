#!/usr/bin/env python3
"""ringi's local AWS stand-in: moto server 5.2.5 patched so Step Functions callbacks behave like AWS.

    python standins/moto_server.py -H 127.0.0.1 -p 5100

Runs in the foreground; SIGTERM/SIGINT stop it (exit 0). What it changes, and why, is in
shared/notes/local-aws.md §1.3, §1.5 and §6:
  1. state machines really execute (SFN interpreter on, Lambda without Docker);
  2. IAM auth (SigV4 + policy) is ON from the first request, except for requests signed with the
     interpreter's own key `ak` and with $MOTO_ADMIN_ACCESS_KEY (default `ringi-admin`, any secret),
     which tests and the dev stack use for setup (IAM users, tables, state machines);
  3.-4. SendTaskSuccess/Failure/Heartbeat: TaskTimedOut for a task that was answered, timed out or whose
     execution ended; InvalidToken for an unknown token; InvalidOutput for non-JSON output;
  5. StartExecution without a name gets a UUID name;
  6. SendTaskFailure keeps `cause`;
  7. GET /moto-api/ringi/ses-messages.json lists the mail SES accepted ({messages: [{id, source, destinations,
     subject, body}]}) without serialising the rest of moto's state as /moto-api/data.json does; with
     `?after=N&wait=S` it answers once there are more than N, or after S seconds (a long poll);
  8. DynamoDB operations run one at a time (a failed transaction's rollback no longer undoes concurrent writes);
  9. StopExecution right after StartExecution aborts the execution instead of failing with a 500;
  10. an event delivered to a target carries the sending `account`, as EventBridge's envelope does.
  (2. also: an unsigned sts:AssumeRoleWithWebIdentity passes IAM auth, as on AWS.)
It patches moto internals, hence the exact version pin.
"""
import argparse
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid

import moto

PINNED = "5.2.5"
if moto.__version__ != PINNED:
    sys.exit(f"standins/moto_server.py patches moto internals and needs moto=={PINNED}, "
             f"found {moto.__version__}: pip install -r tests/requirements.txt")

from moto import settings  # noqa: E402
from moto.core import config as moto_config  # noqa: E402
from moto.core.authorization import ActionAuthenticatorMixin  # noqa: E402
from moto.core.exceptions import AWSError  # noqa: E402
from moto.core.responses import EmptyResult  # noqa: E402
from moto.stepfunctions.parser.api import ExecutionStatus  # noqa: E402
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (  # noqa: E402
    state_task_service_callback as cb_mod,
)
from moto.stepfunctions.parser.asl.eval.callback.callback import (  # noqa: E402
    CallbackConsumerTimeout,
    CallbackOutcomeFailure,
    CallbackOutcomeSuccess,
)
from moto.stepfunctions.parser.models import StepFunctionsParserBackend  # noqa: E402
from moto.stepfunctions.responses import StepFunctionResponse  # noqa: E402
from moto.moto_api._internal import urls as moto_api_urls  # noqa: E402

ADMIN_KEY = os.environ.get("MOTO_ADMIN_ACCESS_KEY", "ringi-admin")

# 1. Execution is a config switch, not an env var; Docker is not available here.
moto_config.default_user_config["stepfunctions"] = {"execute_state_machine": True}
moto_config.default_user_config["lambda"] = {"use_docker": False}

# 2. Auth from the first request (as `INITIAL_NO_AUTH_ACTION_COUNT=0`). The interpreter calls SQS/DynamoDB
#    through boto3 with key `ak` (asl/utils/boto_client.py), which is no IAM user's key: without this
#    exemption every Task fails with InvalidClientTokenId. The admin key is exempt the same way.
settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
_BYPASS = tuple(f"Credential={k}/" for k in ("ak", ADMIN_KEY))
_orig_auth = ActionAuthenticatorMixin._authenticate_and_authorize_action


def _auth(self, iam_request_cls, resource="*"):
    if any(c in (self.headers.get("Authorization") or "") for c in _BYPASS):
        return None
    # As on AWS, AssumeRoleWithWebIdentity is unsigned: the web identity token is the credential (moto's STS
    # then accepts any token; the tests verify the worker's tokens themselves, as IAM would).
    if not self.headers.get("Authorization") and self._get_action() == "AssumeRoleWithWebIdentity":
        return None
    return _orig_auth(self, iam_request_cls, resource)


ActionAuthenticatorMixin._authenticate_and_authorize_action = _auth

# 3. Closed-task tracking. The ported engine never calls CallbackEndpoint.report(), so moto cannot tell
#    a closed task from a live one. We report a CallbackConsumerTimeout on the task's endpoint once the
#    Task state is left for any reason (answered, timed out, failed, execution stopped). This wraps the
#    whole state (not just the wait), so the gap between the state's timeout and the end of the wait
#    thread (~0.1-0.3 s) is covered too. It replaces StateTaskServiceCallback._eval_body with the same body
#    plus the try/finally, because only there is the token known.
_TaskCb = cb_mod.StateTaskServiceCallback


def _eval_body(self, env):
    token = None
    if self._is_integration_pattern() and (
            cb_mod.ResourceCondition.WaitForTaskToken in self._supported_integration_patterns):
        self._assert_integration_pattern_is_supported()
        token = env.states.context_object.update_task_token()
        env.callback_pool_manager.add(token)
    try:
        super(_TaskCb, self)._eval_body(env=env)
    finally:
        endpoint = env.callback_pool_manager.get(token) if token else None
        if endpoint is not None:
            endpoint.report(CallbackConsumerTimeout())
    env.states.context_object.context_object_data.pop("Task", None)


_TaskCb._eval_body = _eval_body

# 4. Callbacks with AWS's error codes. Stock moto only searches RUNNING executions for SendTaskSuccess
#    (so a finished task gives InvalidToken) and accepts late/duplicate answers with 200.
_callback_lock = threading.Lock()  # check-then-notify must be atomic: two answers to one token race


def _live_endpoint(backend, token):
    """The token's endpoint if its task is still open; raises TaskTimedOut/InvalidToken otherwise."""
    for execution in backend._get_executions():
        worker = getattr(execution, "exec_worker", None)
        endpoint = worker.env.callback_pool_manager.get(token) if worker else None
        if endpoint is None:
            continue
        # Closed: the Task state was left, the execution ended, or it was answered and not yet left.
        if (endpoint.consumer_error is not None or endpoint.get_outcome() is not None
                or execution.exec_status != ExecutionStatus.RUNNING):
            raise AWSError("Task Timed Out: 'Provided task does not exist anymore'", "TaskTimedOut", 400)
        return endpoint
    raise AWSError("Invalid Token: 'Invalid token'", "InvalidToken", 400)


def send_task_success(self, task_token, outcome):
    with _callback_lock:
        endpoint = _live_endpoint(self, task_token)
        try:  # AWS refuses non-JSON up front; stock moto accepts it, then fails the execution (States.Runtime)
            json.loads(outcome)
        except (TypeError, ValueError):
            raise AWSError("Invalid Output: output is not valid JSON", "InvalidOutput", 400)
        endpoint.notify(CallbackOutcomeSuccess(callback_id=task_token, output=outcome))


def send_task_failure(self, task_token, error=None, cause=None):
    with _callback_lock:
        _live_endpoint(self, task_token).notify(
            CallbackOutcomeFailure(callback_id=task_token, error=error, cause=cause))


def send_task_heartbeat(self, task_token):
    with _callback_lock:  # a live task without HeartbeatSeconds accepts heartbeats on AWS too (no-op here)
        _live_endpoint(self, task_token).notify_heartbeat()


for _f in (send_task_success, send_task_failure, send_task_heartbeat):
    setattr(StepFunctionsParserBackend, _f.__name__, _f)

# 5. A nameless StartExecution gets ARN suffix ":None" and the 2nd one ExecutionAlreadyExists; AWS uses a UUID.
_orig_start = StepFunctionsParserBackend.start_execution


def start_execution(self, state_machine_arn, name=None, execution_input=None, trace_header=None):
    return _orig_start(self, state_machine_arn, name or str(uuid.uuid4()), execution_input, trace_header)


StepFunctionsParserBackend.start_execution = start_execution


# 6. responses.py reads `error` but never `cause`, so Catch handlers saw "Cause": null.
def _send_task_failure_response(self):
    self.stepfunction_backend.send_task_failure(
        self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause"))
    return EmptyResult()


StepFunctionResponse.send_task_failure = _send_task_failure_response


# 7. The mail SES accepted, and nothing else: /moto-api/data.json serialises every tracked instance of every
#    service (each SQS queue, execution, table item…), which grows through a test run while tests poll for mail.
#    `after`/`wait`: the waiting is done here, next to the list (an in-process look every 20 ms costs nothing),
#    instead of by a client sleeping between requests.
def _ses_messages(request, full_url, headers):
    from moto.ses.models import Message
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(full_url).query)
    try:
        after = int(query["after"][0]) if "after" in query else None
        wait = min(float(query.get("wait", ["0"])[0]), MAX_MAIL_WAIT_S)
    except ValueError:
        return 400, {"Content-Type": "text/plain"}, "after: a count; wait: seconds"
    deadline = time.monotonic() + wait
    while after is not None and len(Message.instances_tracked) <= after and time.monotonic() < deadline:
        time.sleep(0.02)
    keys = ("id", "source", "destinations", "subject", "body")
    messages = [{k: getattr(m, k, None) for k in keys} for m in list(Message.instances_tracked)]
    return 200, {"Content-Type": "application/json"}, json.dumps({"messages": messages})


SES_MESSAGES_PATH = "/moto-api/ringi/ses-messages.json"
MAX_MAIL_WAIT_S = 25.0
moto_api_urls.url_paths["{0}" + SES_MESSAGES_PATH] = _ses_messages


# 8. DynamoDB one operation at a time, as atomic as AWS's: moto's server is threaded and its backend takes no lock.
#    A TransactWriteItems deep-copies the table first and puts that copy back when a condition fails, wiping
#    whatever another request wrote in between (a claim taken, a decision finished), and a read may see an
#    UpdateItem half applied. The copy grows with the table, so the longer a test run, the wider that window.
def _serialised(method, lock):
    def locked(*args, **kwargs):
        with lock:
            return method(*args, **kwargs)
    return locked


def _serialise_dynamodb():
    from moto.dynamodb.models import DynamoDBBackend
    lock = threading.RLock()
    for name, method in list(vars(DynamoDBBackend).items()):
        if callable(method) and not name.startswith("_") and not isinstance(method, (staticmethod, classmethod)):
            setattr(DynamoDBBackend, name, _serialised(method, lock))


_serialise_dynamodb()


# 9. StopExecution at once after StartExecution: the execution's thread builds its environment only after parsing
#    the definition, and a stop arriving before that failed with a 500 (AttributeError on None). AWS aborts it.
def _stop_when_started(stop):
    def stop_started(self, stop_date, error, cause):
        deadline = time.monotonic() + 10
        while self.env is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return stop(self, stop_date=stop_date, error=error, cause=cause)
    return stop_started


ExecutionWorker.stop = _stop_when_started(ExecutionWorker.stop)


# 10. EventBridge delivers the whole event, its `account` included (ringi reads which account a workflow runs in
#     from it); moto's default target input leaves `account` out.
def _with_account():
    from moto.events.utils import EventTemplateParser
    template = EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE
    if '"account"' not in template:
        EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE = template.replace(
            '"source": "<source>", ', '"source": "<source>", "account": "<account>", ')
        assert '"account"' in EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE, "moto's event template changed"


_with_account()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5100)
    args = parser.parse_args()
    # The interpreter calls http://localhost:$MOTO_PORT (so -H must be loopback or 0.0.0.0); a stale
    # MOTO_PORT from the environment would point it at another server, so it always follows -p.
    os.environ["MOTO_PORT"] = str(args.port)
    print(f"ringi moto {PINNED} on http://{args.host}:{args.port} (admin key {ADMIN_KEY!r})", flush=True)
    # moto.server.main installs SIGTERM/SIGINT handlers that exit(0) and serves in the foreground.
    from moto.server import main as moto_main
    moto_main(["-H", args.host, "-p", str(args.port)])


if __name__ == "__main__":
    main()

"""The leak check that runs when the session ends (conftest.py, support/leaks.py) finds what it looks for: a
secret planted in a log or in a response, and anything shaped like a JWT in a log. No stack needed."""
from types import SimpleNamespace

import pytest

from support import leaks


@pytest.fixture
def planted(tmp_path):
    stack = SimpleNamespace(state=tmp_path, api_key="rk_planted-api-key-0123456789",
                            edge_key=("AKIAPLANTED", "planted/aws/secret/access/key"),
                            signing_key={"d": "planted-private-key-d-jpsQnnGQmL-YBIffH1136cspYG6"})
    seen = leaks.Seen(task_tokens={"AAAAplanted-task-token-" + "x" * 40},
                      jwts={"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9." + "s" * 40})
    (tmp_path / "worker.log").write_text("GET /healthz 200\n")
    (tmp_path / "moto.log").write_text(f"not ours: {stack.api_key}\n")  # only ringi's own processes count
    return stack, seen


def test_a_clean_run_passes(planted):
    stack, seen = planted
    assert "none leaked" in leaks.check(stack, seen)


@pytest.mark.parametrize("where", ["worker.log", "relay.log", "mailbox.log", "worker-faults.log", "response"])
@pytest.mark.parametrize("which", ["task token", "JWT signature", "registration API key", "AWS secret access key",
                                   "the key ring's private key"])
def test_a_planted_secret_fails_the_check(planted, where, which):
    stack, seen = planted
    secret = next(v for k, v in leaks.secrets_of(stack, seen).items() if k.startswith(which))
    if where == "response":
        seen.responses.append(("GET", "http://127.0.0.1:1/api/v1/approvals/x", 200, f'{{"echo": "{secret}"}}'))
    else:
        (stack.state / where).write_text(f"an innocent line\nsomething said {secret}\n")
    with pytest.raises(AssertionError, match=which):
        leaks.check(stack, seen)


def test_a_jwt_shaped_string_in_a_log_fails_the_check(planted):
    stack, seen = planted
    (stack.state / "worker.log").write_text("Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ\n")
    with pytest.raises(AssertionError, match="JWT-shaped"):
        leaks.check(stack, seen)

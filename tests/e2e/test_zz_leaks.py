"""Issue 7 leak check, run last: no task token, JWT, API key or AWS secret that the suite handled appears in
any worker response or in any log line of ringi's own processes (worker instances, relay, mailbox)."""
import re

from conftest import SEEN

JWT_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}")


def ours(path):
    return path.name.startswith(("worker", "relay", "mailbox")) and path.suffix == ".log"


def test_no_secret_in_responses_or_logs(stack):
    logs = {p.name: p.read_text(errors="replace") for p in stack.state.iterdir() if ours(p)}
    assert "worker.log" in logs
    secrets = {
        **{f"task token {t[:8]}…": t for t in SEEN["task_tokens"]},
        **{f"JWT signature {j[-8:]}": j.split(".")[2] for j in SEEN["jwts"] if j.count(".") == 2 and len(j.split(".")[2]) > 20},
        "registration API key": stack.api_key,
        "AWS secret access key": stack.edge_key[1],
    }
    # Only run meaningfully after the rest of the suite (it is named to sort last).
    assert len(SEEN["responses"]) >= 50 or len(SEEN["task_tokens"]) == 0, "run with the whole suite"
    leaks = []
    for name, secret in secrets.items():
        for log_name, text in logs.items():
            if secret in text:
                leaks.append(f"{name} in {log_name}")
        for method, url, status, body in SEEN["responses"]:
            if secret in body:
                leaks.append(f"{name} in the response to {method} {url} ({status})")
    assert not leaks, leaks
    for log_name, text in logs.items():
        assert not JWT_SHAPE.search(text), f"a JWT-shaped string in {log_name}"
    print(f"leak check: {len(secrets)} secrets × {len(logs)} logs + {len(SEEN['responses'])} responses, none leaked")

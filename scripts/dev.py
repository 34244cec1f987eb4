#!/usr/bin/env python3
"""`make dev`: the whole ringi system on 127.0.0.1 through the same launcher the tests use.
Ctrl-C stops every process it started."""
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ringi_stack import ROOT, Ports, Stack, StackError, fresh_state  # noqa: E402


def main() -> int:
    state = ROOT / ".ringi" / "dev"
    print("ringi: starting the local stack (state and logs in .ringi/dev/)")
    t0 = time.monotonic()
    stack = Stack(state=fresh_state(state), ports=Ports())
    try:
        stack.start()
    except StackError as e:
        print(f"\nringi: could not start: {e}", file=sys.stderr)
        return 1
    env = {
        "RINGI_APP_URL": stack.base_url,
        "RINGI_API_KEY": stack.api_key,
        "RINGI_MOTO_URL": stack.moto_url,
        "RINGI_IDP_URL": stack.idp_url,
        "RINGI_ISSUER": stack.issuer,
        "RINGI_CLIENT_ID": stack.client_id,
        "RINGI_DEMO_USERS": "alice,bob,carol (password Passw0rd!)",
    }
    (ROOT / ".ringi" / "dev.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    print(f"""
ringi is ready in {time.monotonic() - t0:.1f}s
  app            {stack.base_url}/
  API            {stack.base_url}/api/v1/approvals   (register with: Authorization: Bearer $RINGI_API_KEY)
  sign-in        {stack.idp_url}/oauth2/authorize   demo users alice / bob / carol, password Passw0rd!
  AWS (moto)     {stack.moto_url}
  settings       .ringi/dev.env
Ctrl-C stops everything.""")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        while not stopping:
            for p in stack.procs:
                if p.popen.poll() is not None:
                    print(f"ringi: {p.name} exited ({p.popen.returncode}); see {p.log}", file=sys.stderr)
                    stopping.append(1)
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    print("\nringi: stopping…")
    stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`.ringi/dev.env` (written by `make dev`, scripts/dev/dev.py) is a valid shell file and a valid dotenv file: every
value, including ones with spaces, parentheses, `$`, `!` and `;`, reads back exactly from both."""
import subprocess

import pytest
from dotenv import dotenv_values

from support import program

dev = program("scripts/dev/dev.py")
format_env, read_env = dev.format_env, dev.read_env

ENV = {
    "RINGI_APP_URL": "http://127.0.0.1:8787",
    "RINGI_DEMO_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:ringi-demo-approval",
    "RINGI_DEMO_USERS": "alice,bob,carol (password Passw0rd!)",
    "RINGI_ODD": 'a;b && c | $HOME `id` "quoted" \\ * ~ #',
    "RINGI_EMPTY": "",
}


def test_dev_env_can_be_sourced_in_bash_and_read_as_dotenv(tmp_path):
    f = tmp_path / "dev.env"
    f.write_text(format_env(ENV))
    script = f"set -eu; source {f}; " + "; ".join(f'printf "%s\\0" "${k}"' for k in ENV)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.split("\0")[:-1] == [str(v) for v in ENV.values()], out.stderr
    assert dotenv_values(f) == ENV
    assert read_env(f.read_text()) == ENV


def test_values_that_cannot_be_quoted_are_refused():
    for bad in ["it's", "two\nlines"]:
        with pytest.raises(ValueError):
            format_env({"RINGI_X": bad})

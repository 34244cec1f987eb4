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


def test_a_build_is_skipped_only_while_its_own_inputs_and_outputs_are_as_it_left_them(tmp_path):
    """scripts/build/uptodate.py, on a repository of its own: no stamp → build; built → skip; an edit to the
    worker's sources rebuilds the worker and not the SPA; a missing output rebuilds; a failed build leaves no
    stamp, so it is tried again."""
    from support import ROOT
    for f in ("core/src/lib.rs", "edge/src/lib.rs", "app/src/lib.rs", "Cargo.lock"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("// v1\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    env = {"RINGI_ROOT": str(tmp_path), "PATH": __import__("os").environ["PATH"]}
    script = str(ROOT / "scripts/build/uptodate.py")

    def up(name: str, *flags: str) -> bool:
        return subprocess.run(["python3", script, name, *flags], env=env).returncode == 0

    def built(name: str, outputs: list[str]) -> None:
        assert not up(name)
        for o in outputs:
            (tmp_path / o).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / o).write_text("built")
        assert up(name, "--done")

    spa, worker = ["dist/index.html", "dist/admin.html"], ["edge/build/worker/shim.mjs", "edge/build/index_bg.wasm"]
    built("spa", spa)
    built("worker", worker)
    assert up("spa") and up("worker")
    (tmp_path / "edge/src/lib.rs").write_text("// v2\n")
    assert up("spa") and not up("worker"), "only the build whose inputs changed"
    assert not up("worker"), "the check that saw the change left no stamp: a failed build is tried again"
    built("worker", worker)
    (tmp_path / "core/src/lib.rs").write_text("// v2\n")
    assert not up("spa") and not up("worker"), "core goes into both"
    built("spa", spa)
    (tmp_path / "dist/admin.html").unlink()
    assert not up("spa"), "an output gone"


def test_the_watcher_names_the_builds_an_edit_touched(tmp_path, monkeypatch):
    """scripts/dev/dev.py's Watcher, on a repository of its own: nothing changed → nothing to build; a worker
    source → the worker; core → both; a new file in the SPA's sources (git does not know it yet) → the SPA."""
    for f in ("core/src/lib.rs", "edge/src/lib.rs", "app/src/lib.rs", "Cargo.lock"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("// v1\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.setattr(dev.uptodate, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    watcher = dev.Watcher()
    assert watcher.changed() == []
    (tmp_path / "edge/src/lib.rs").write_text("// v2\n")
    assert watcher.changed() == ["worker"]
    assert watcher.changed() == [], "seen once"
    (tmp_path / "core/src/lib.rs").write_text("// v2\n")
    assert sorted(watcher.changed()) == ["spa", "worker"]
    (tmp_path / "app/src/page.rs").write_text("// new\n")
    assert watcher.changed() == ["spa"]

"""edge/wrangler.toml's [env.production] and the config deploy/deploy.py renders from it
(edge/wrangler.production.json), checked by reading them and with the real pinned wrangler
(`wrangler deploy --dry-run`, which needs no login but the built worker: `make build`).

    ~/.cache/ringi/venv/bin/python -m pytest -q tests/deploy/test_wrangler_config.py
"""
from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from deploy_harness import ROOT

TOML = tomllib.loads((ROOT / "edge" / "wrangler.toml").read_text())
PROD = TOML["env"]["production"]
REQUIRED_VARS = ("PUBLIC_BASE_URL", "COGNITO_ISSUER", "COGNITO_CLIENT_ID")  # core/src/config/: req(…)
SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "REGISTER_API_KEYS")
OUTPUTS = {"CognitoIssuer": "https://cognito-idp.eu-central-1.amazonaws.com/eu-central-1_AbCdEf123",
           "SpaClientId": "4ab5cd6ef7gh8ij9kl0mn1op2q",
           "CognitoDomain": "https://acme.auth.eu-central-1.amazoncognito.com",
           "RegisterScope": "ringi/approvals.write", "RegisterClientIds": "", "AwsRegion": "eu-central-1",
           "MailFrom": "ringi@mail.acme.example"}
SETTINGS = {"AWS_REGION": "eu-central-1", "PUBLIC_HOST": "approvals.acme.example", "COGNITO_DOMAIN_PREFIX": "acme",
            "MAIL_FROM": "ringi@mail.acme.example", "WORKER_NAME": "acme-ringi", "D1_DATABASE_NAME": "acme-ringi-db",
            "MAIL_ALLOWED_DOMAINS": "ops.acme.example"}
DB_ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def test_the_cron_runs_locally_and_in_production():
    assert TOML["triggers"]["crons"], "without a cron nothing ever expires"
    assert PROD["triggers"]["crons"] == TOML["triggers"]["crons"]


def test_production_repeats_what_environments_do_not_inherit():
    assert set(TOML["vars"]) <= set(PROD["vars"]), "vars are not inherited: every name the worker reads is repeated"
    assert not [v for v in PROD["vars"].values() if "127.0.0.1" in v]
    [db] = PROD["d1_databases"]
    assert db["binding"] == "DB" and db["migrations_dir"] == TOML["d1_databases"][0]["migrations_dir"]
    assert PROD["assets"] == TOML["assets"]
    assert PROD["name"], "without a name wrangler would call the worker NAME-production"


def test_production_serves_only_its_custom_domain_and_keeps_logs():
    assert PROD["workers_dev"] is False and PROD["preview_urls"] is False
    assert [r for r in PROD["routes"] if r.get("custom_domain") is True]
    assert PROD["observability"]["enabled"] is True
    assert PROD["vars"]["TOKEN_USE"] == "id"
    assert not set(SECRETS) & set(PROD["vars"])


def test_production_serves_from_the_edge_nearest_the_approver():
    # No [placement]: with run_worker_first every asset request would travel to a placed worker (wrangler warns),
    # and with D1 near the approvers the edge is where a request makes its round trips fastest (docs/benchmarks.md
    # §8, docs/deploy.md "Latency").
    assert "placement" not in PROD and "placement" not in TOML
    assert PROD["assets"]["run_worker_first"] is True


def rendered(deploy_module) -> dict:
    s = {k.name: k.default or "" for k in deploy_module.KEYS} | SETTINGS
    d = deploy_module.Deploy(root=ROOT, s=deploy_module.derive(s), run=deploy_module.Runner(ROOT))
    d.outputs, d.db_id = dict(OUTPUTS), DB_ID
    return deploy_module.render_wrangler_config(d)


def test_rendered_config_carries_the_settings_and_outputs(deploy_module):
    config = rendered(deploy_module)
    prod = config["env"]["production"]
    v = prod["vars"]
    assert {k: v[k] for k in REQUIRED_VARS} == {"PUBLIC_BASE_URL": "https://approvals.acme.example",
                                               "COGNITO_ISSUER": OUTPUTS["CognitoIssuer"],
                                               "COGNITO_CLIENT_ID": OUTPUTS["SpaClientId"]}
    assert v["COGNITO_DOMAIN"] == OUTPUTS["CognitoDomain"] and v["AWS_REGION"] == "eu-central-1"
    assert v["MAIL_FROM"] == OUTPUTS["MailFrom"] and v["REGISTER_SCOPE"] == OUTPUTS["RegisterScope"]
    assert v["TOKEN_USE"] == "id" and v["DEFAULT_LOCALE"] == "en"
    assert v["MAIL_ALLOWED_DOMAINS"] == "ops.acme.example"
    assert not set(SECRETS) & set(v)
    assert prod["name"] == "acme-ringi"
    assert prod["routes"] == [{"pattern": "approvals.acme.example", "custom_domain": True}]
    assert prod["d1_databases"] == [{**PROD["d1_databases"][0], "database_name": "acme-ringi-db", "database_id": DB_ID}]
    # The top level is the production config too: forgetting --env production cannot ship local values.
    assert {k: config[k] for k in prod} == prod
    assert "127.0.0.1" not in json.dumps(config)


def test_rendered_config_refuses_secrets_among_vars(deploy_module, tmp_path):
    (tmp_path / "edge").mkdir()
    toml = (ROOT / "edge" / "wrangler.toml").read_text() + 'REGISTER_API_KEYS = "abc"\n'
    (tmp_path / "edge" / "wrangler.toml").write_text(toml)
    s = {k.name: k.default or "" for k in deploy_module.KEYS} | SETTINGS
    d = deploy_module.Deploy(root=tmp_path, s=deploy_module.derive(s), run=deploy_module.Runner(tmp_path))
    d.outputs, d.db_id = dict(OUTPUTS), DB_ID
    with pytest.raises(deploy_module.StepError, match="REGISTER_API_KEYS must be secrets"):
        deploy_module.render_wrangler_config(d)


# ─── the real wrangler ─────────────────────────────────────────────────────────────────────────────────────


def wrangler_dry_run(config: Path, outdir: Path) -> str:
    if not ((ROOT / "edge/build/worker/shim.mjs").exists() and (ROOT / "dist/index.html").exists()):
        pytest.skip("the built worker is missing (edge/build/worker/shim.mjs, dist/): run `make build` first")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDFLARE_")}  # a dry run needs no login
    proc = subprocess.run(["bash", "-c", '. scripts/build/env.sh && cd edge && wrangler deploy --dry-run --outdir "$1" '
                           '--config "$2" --env production', "-", str(outdir), config.name],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "WARNING" not in out, out
    assert (outdir / "shim.js").exists()
    return out


@pytest.mark.built
def test_real_wrangler_accepts_the_committed_production_env(tmp_path):
    out = wrangler_dry_run(ROOT / "edge" / "wrangler.toml", tmp_path)
    assert "env.DB (ringi)" in out and "env.ASSETS" in out


@pytest.mark.built
def test_real_wrangler_accepts_the_rendered_config(deploy_module, tmp_path):
    # In edge/ like the real file (wrangler resolves main, assets and migrations from it); gitignored.
    config = ROOT / "edge" / f"wrangler.production.pytest-{os.getpid()}.json"
    config.write_text(json.dumps(rendered(deploy_module), indent=2))
    try:
        out = wrangler_dry_run(config, tmp_path)
    finally:
        config.unlink()
    assert "env.DB (acme-ringi-db)" in out
    assert 'env.PUBLIC_BASE_URL ("https://approvals.acme.example")' in out
    assert f'env.COGNITO_CLIENT_ID ("{OUTPUTS["SpaClientId"]}")' in out

"""Fixtures of the deploy tests (the helpers behind them are in deploy_harness.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from deploy_harness import load_deploy_module, new_deployer


def pytest_configure(config):
    # `make test` runs the other deploy checks beside the wasm builds and these once the builds are done.
    config.addinivalue_line("markers", "built: needs `make build`'s outputs (the real wrangler's dry run)")


@pytest.fixture(scope="session")
def deploy_module():
    return load_deploy_module()


@pytest.fixture
def deployer(tmp_path: Path):
    d = new_deployer(tmp_path)
    yield d
    d.worker.server.shutdown()

"""Fixtures of the deploy tests (the helpers behind them are in deploy_harness.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from deploy_harness import load_deploy_module, new_deployer


@pytest.fixture(scope="session")
def deploy_module():
    return load_deploy_module()


@pytest.fixture
def deployer(tmp_path: Path):
    d = new_deployer(tmp_path)
    yield d
    d.worker.server.shutdown()

"""What the end-to-end tests share: the stack's HTTP client and workflows (`api`), the secrets the suite saw and
the leak scan (`leaks`), browser page objects (`pages`), the Step Functions fault proxy (`faultproxy`).
Test modules import from here (and fixtures from conftest.py), never from each other."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "tests" / "artifacts"


def program(path: str) -> ModuleType:
    """A program of the repository (a stand-in, `make dev`), loaded from its file for a test of its functions:
    programs are run, not installed, so they are on no import path (standins/mailbox.py would hide the
    standard library's `mailbox` there)."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

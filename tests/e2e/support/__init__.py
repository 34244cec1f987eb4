"""What the end-to-end tests share: the stack's HTTP client and workflows (`api`), the secrets the suite saw and
the leak scan (`leaks`), browser page objects (`pages`), the Step Functions fault proxy (`faultproxy`).
Test modules import from here (and fixtures from conftest.py), never from each other."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "tests" / "artifacts"
# The stack launcher, the demo's relay and the shared Chromium flags live in scripts/.
if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))

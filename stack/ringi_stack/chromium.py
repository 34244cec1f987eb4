"""The machine's Chromium as the end-to-end tests and the benchmark launch it (headless, through Playwright):
one list of flags, so that what the tests check and what the benchmark times run the same browser."""
from __future__ import annotations

EXECUTABLE = "/usr/bin/chromium"
# No sandbox (root in a container), no GPU, no QUIC, and none of the background traffic a first run makes.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def launch(playwright):
    """A headless Chromium browser from a `sync_playwright()` context; the caller closes it."""
    return playwright.chromium.launch(executable_path=EXECUTABLE, args=ARGS)

"""`make dev`'s live reload: with DEV_RELOAD the worker names a reload script in every page, tagged with the build it
runs, and an open page reloads itself once the worker runs another build — here the SPA's files change in a copy of
dist/ that this worker serves, which wrangler picks up as it picks up `make dev`'s rebuilds. Without the switch
(every other worker, and production, where it is refused) there is no script and no dev path."""
import re
import shutil

import requests

from support import ROOT
from support.pages import Tab

TAG = re.compile(r'<script src="/__dev/reload\.js" data-build="([0-9a-f]{16}-[0-9a-f]{16})"></script>')


def test_an_open_page_reloads_itself_when_the_worker_runs_another_build(stack, browser, tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(ROOT / "dist", dist)
    url = stack.extra_worker("reload", {"DEV_RELOAD": "on"}, assets=dist)
    try:
        served = TAG.search(requests.get(f"{url}/a/AAAAAAAAAAAAAAAAAAAAAA", timeout=10).text)
        assert served, "the page names the reload script"
        assert requests.get(f"{url}/__dev/build", timeout=10).text == served.group(1)
        script = requests.get(f"{url}/__dev/reload.js", timeout=10)
        assert script.headers["content-type"].startswith("text/javascript") and "location.reload" in script.text
        assert script.headers["cache-control"] == "no-store"

        with Tab(browser) as tab:
            tab.page.goto(f"{url}/")  # the inbox's page (signed out it offers the sign-in)
            tab.page.wait_for_load_state("networkidle")
            tab.page.evaluate("window.beforeTheRebuild = true")
            # What a rebuild of the SPA does to dist/: its pages change.
            index = dist / "index.html"
            index.write_text(index.read_text().replace("</body>", "<!-- rebuilt -->\n</body>"))
            tab.page.wait_for_function("() => window.beforeTheRebuild === undefined", timeout=30_000)
            tab.page.wait_for_load_state()
            rebuilt = TAG.search(tab.page.content())
            assert rebuilt and rebuilt.group(1) != served.group(1), "reloaded into the new build"
            assert tab.page.url == f"{url}/", "on the same page"
            assert not tab.csp_problems(), tab.csp_problems()
    finally:
        stack.stop_component("worker-reload")


def test_without_the_switch_there_is_no_reload_script_and_no_dev_path(stack):
    page = requests.get(f"{stack.base_url}/", timeout=10).text
    assert "/__dev/" not in page
    for path in ("/__dev/build", "/__dev/reload.js"):
        r = requests.get(f"{stack.base_url}{path}", timeout=10)
        assert "location.reload" not in r.text and not re.fullmatch(r"[0-9a-f]{16}-[0-9a-f]{16}", r.text), path

"""Opening an emailed link on a phone, in Chromium against the real stack. First open: with a session in the tab,
app/boot.js asks for the approval while the wasm downloads, and the app renders it from that answer.
Repeat opens: the service worker (public/sw.js) answers the hashed files from its cache and the app shell from
the network, so the open right after a deploy runs the new build (the cached shell answers only offline); it caches
nothing else — no API response, no token."""
from __future__ import annotations

import contextlib
import json
import re
import time
from urllib.parse import urlsplit

import pytest
import requests

from playwright.sync_api import expect

from support import ARTIFACTS
from support.pages import JWT_RE, SIGN_IN_MODULE, HostedUi, Tab, sub

CACHE = "ringi-shell-v1"
HASHED = re.compile(r"^/[^/]+-[0-9a-f]{8,16}(_bg\.wasm|\.js|\.css)$")
MARK = "<!--ringi-old-shell-->"
WASM_META = re.compile(r'<meta name="ringi-wasm" content="(/[^"]+_bg\.wasm)"')
CHUNK_META = re.compile(r'<meta name="ringi-chunk" data-parts="([^"]*)" content="(/[^"]+_bg\.wasm)">')
# The parts of the app in wasm chunks of their own (scripts/build/split.mjs names them after the split).
PART_CHUNK = re.compile(r"/ringi-(?!app-|shared\d|sign-in-[0-9a-f]{16}_)([a-z-]+)-[0-9a-f]{16}_bg\.wasm$")


def register(workflows, api, title: str, **fields) -> str:
    """A real paused execution registered with ringi for alice: its approval ID."""
    arn, token = workflows.start_paused(300)
    r = api.register(token, approvers=[{"sub": sub("alice")}], title=title,
                     context={"executionArn": arn, "stateName": "RequestApproval", **fields.pop("context", {})},
                     **fields)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def with_session(tab: Tab, stack, user="alice") -> None:
    """A signed-in tab: the session put into sessionStorage as app/src/infra/auth.rs keeps it, before any script."""
    now_ms = int(time.time() * 1000)
    session = {"bearer": stack.mint(sub(user)), "expiresAt": now_ms + 3600_000, "obtainedAt": now_ms,
               "viaReauth": False}
    tab.page.add_init_script("if (location.origin === %s) sessionStorage.setItem('ringi.session', %s);"
                             % (json.dumps(stack.base_url), json.dumps(json.dumps(session))))


def test_the_app_renders_the_approval_boot_js_asked_for_while_the_wasm_downloaded(stack, workflows, api, browser):
    title = 'Rotate the signing key <img src=x data-injected="1">'
    approval_id = register(workflows, api, title, summary="Line one.\nLine two <b>plain</b>.",
                           context={"requestedBy": "ci@example.com"})
    # A slow phone network (60 kB/s): the approval (under 1 kB) is there seconds before the wasm.
    with Tab(browser, locale="ja-JP") as tab:
        with_session(tab, stack)
        cdp = tab.ctx.new_cdp_session(tab.page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
                                                      "downloadThroughput": 60_000, "uploadThroughput": 60_000})
        asked = []
        tab.page.on("request", lambda r: asked.append(r.url)
                    if r.method == "GET" and r.url.endswith(f"/api/v1/approvals/{approval_id}") else None)
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(tab.page.locator("#boot-status")).to_be_visible()
        expect(tab.approval.title).to_have_text(title, timeout=90_000)
        expect(tab.page.get_by_test_id("approve")).to_have_text("✓ 承認する")
        expect(tab.approval.approve_button).to_be_enabled()
        expect(tab.page.get_by_text("Line two <b>plain</b>.")).to_be_visible()
        assert tab.page.locator("[data-injected]").count() == 0, "text only: nothing from the approval is markup"
        assert len(asked) == 1, f"the app takes the answer boot.js read rather than asking again: {asked}"
        tab.page.screenshot(path=ARTIFACTS / "first-load-ja-mobile.png")
        assert not tab.csp_problems(), tab.problems

    # The wasm never arrives: the failure is said where the status was.
    with Tab(browser) as tab:
        with_session(tab, stack)
        tab.page.route("**/*.wasm", lambda route: route.abort())
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(tab.page.locator("#boot-status")).to_have_text("The app could not start. Please reload the page.",
                                                              timeout=30_000)


def test_a_rejection_in_japanese_on_a_first_open(stack, workflows, api, browser):
    approval_id = register(workflows, api, "Rotate the key")
    with Tab(browser, locale="ja-JP") as tab:
        with_session(tab, stack)
        page = tab.page
        page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(page.get_by_test_id("reject")).to_have_text("✕ 却下する", timeout=30_000)
        tab.approval.comment.fill("鍵の期限はまだ先です")
        tab.approval.reject()
        expect(tab.approval.dialog).to_contain_text("この依頼を却下しますか？")
        tab.approval.confirm()
        expect(tab.approval.expect_result("rejected")).to_contain_text("却下しました。")
        view = api.get(approval_id, as_user=sub("alice")).json()
        assert view["status"] == "rejected" and view["decisions"][0]["comment"] == "鍵の期限はまだ先です"


def wait_for_service_worker(page) -> None:
    assert page.evaluate("navigator.serviceWorker.ready.then((r) => !!r.active)"), "no active service worker"


def cached(page) -> dict[str, str]:
    """Path → body of every entry of the shell cache (binary bodies as '')."""
    return page.evaluate("""async (name) => {
        const cache = await caches.open(name);
        const out = {};
        for (const request of await cache.keys()) {
            const response = await cache.match(request);
            const type = response.headers.get("content-type") || "";
            out[new URL(request.url).pathname] = /wasm/.test(type) ? "" : await response.text();
        }
        return out;
    }""", CACHE)


def test_a_second_open_is_answered_by_the_service_worker_and_the_api_is_never_cached(stack, workflows, api, tab):
    approval_id = register(workflows, api, "Opened twice")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    expect(tab.approval.title).to_have_text("Opened twice", timeout=30_000)
    wait_for_service_worker(page)

    response = page.reload()
    assert response.from_service_worker, "the HTML of a second open is answered by the service worker"
    expect(tab.approval.title).to_have_text("Opened twice", timeout=30_000)
    # The approval itself came from the API, over the network, with the bearer.
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    entries = cached(page)
    assert "/" in entries and any(p.endswith("_bg.wasm") for p in entries), sorted(entries)
    # The parts on demand too (an offline start may open any of them), not only those this open fetched.
    chunks = [path for _, path in CHUNK_META.findall(entries["/"])]
    assert chunks and all(path in entries for path in chunks), (chunks, sorted(entries))
    assert all(p == "/" or HASHED.match(p) for p in entries), f"only the shell and hashed files: {sorted(entries)}"
    bearer = page.evaluate("JSON.parse(sessionStorage.getItem('ringi.session')).bearer")
    for path, body in entries.items():
        assert bearer not in body and not JWT_RE.search(body), f"a token in the cached {path}"
    # The cached shell is the page the worker serves: configuration embedded, strict CSP kept.
    assert 'id="ringi-config"' in entries["/"]
    assert "unsafe-inline" not in (response.headers.get("content-security-policy") or "x")
    assert not tab.csp_problems(), tab.problems


def mark_cached_shell(page) -> None:
    """Stand-in for the shell of an earlier build (before a deploy): the cached one, marked (headers kept)."""
    page.evaluate("""async ([name, mark]) => {
        const cache = await caches.open(name);
        const shell = await cache.match("/");
        const html = (await shell.text()).replace("</body>", mark + "</body>");
        await cache.put("/", new Response(html, { headers: shell.headers }));
    }""", [CACHE, MARK])


def test_a_repeat_open_starts_from_the_cached_shell_and_the_one_after_a_deploy_runs_the_new_build(
        stack, workflows, api, tab):
    approval_id = register(workflows, api, "Shell first")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    expect(tab.approval.title).to_be_visible(timeout=30_000)
    wait_for_service_worker(page)
    # The cached shell stands for the build before a deploy: marked, its headers (the CSP with boot.js's hash) kept.
    mark_cached_shell(page)

    # The open right after the deploy: the cached shell at once (no round trip before the approval is asked for),
    # with the path it was opened at; the current shell is fetched beside it and kept once its files are.
    response = page.goto(f"{stack.base_url}/a/{approval_id}")
    assert response.from_service_worker and MARK in page.content(), "the cached shell, at once"
    expect(tab.approval.title).to_have_text("Shell first", timeout=30_000)
    page.wait_for_function("""async ([name, mark]) => {
        const shell = await (await caches.open(name)).match("/");
        return shell && !(await shell.text()).includes(mark);
    }""", arg=[CACHE, MARK], timeout=30_000)
    # The next open runs the current build.
    response = page.goto(f"{stack.base_url}/a/{approval_id}")
    assert response.from_service_worker and MARK not in page.content(), "the shell the last open fetched"
    expect(tab.approval.title).to_have_text("Shell first", timeout=30_000)

    # Without a network the cached shell answers as well, and its hashed files come from the cache.
    mark_cached_shell(page)
    page.context.set_offline(True)
    try:
        response = page.goto(f"{stack.base_url}/a/{approval_id}")
        assert response.from_service_worker and MARK in page.content(), "offline: the cached shell"
        expect(page.locator("#ringi-config")).to_be_attached()
    finally:
        page.context.set_offline(False)
    assert not tab.csp_problems(), tab.problems


def bundle_of(html: str) -> str:
    """The wasm an SPA page starts (boot.js reads it from this <meta>)."""
    m = WASM_META.search(html)
    assert m, "no ringi-wasm meta in the page"
    return m.group(1)


def test_the_emailed_link_loads_the_small_bundle_and_the_rare_pages_the_full_one(stack, workflows, api, tab):
    """Two bundles of the app (docs/design.md §11): the emailed link's (sign-in, inbox, approval page) and the full
    one with the audit and settings pages, which the worker serves for those paths only — each with the
    configuration embedded, strict CSP, precompressed, immutable. In the app, the link to the settings page is a
    full-page load (not answered by the service worker's cached shell), which then shows the settings page."""
    pages = {path: requests.get(f"{stack.base_url}{path}", timeout=30)
             for path in ["/", "/a/abcdefghijklmnop1234", "/auth/callback", "/audit", "/settings", "/settings/"]}
    for path, r in pages.items():
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), path
        assert 'id="ringi-config"' in r.text, f"configuration embedded in {path}"
        csp = r.headers.get("content-security-policy") or ""
        assert "script-src" in csp and "unsafe-inline" not in csp, f"strict CSP on {path}: {csp}"
    small, full = bundle_of(pages["/"].text), bundle_of(pages["/audit"].text)
    assert small != full
    assert {bundle_of(pages[p].text) for p in ["/a/abcdefghijklmnop1234", "/auth/callback"]} == {small}
    assert {bundle_of(pages[p].text) for p in ["/settings", "/settings/"]} == {full}
    # No page preloads the app's wasm: boot.js asks for it where the app starts (not before a sign-in's redirect).
    preloaded = [path for path, r in pages.items() if f'<link rel="preload" href="{bundle_of(r.text)}"' in r.text]
    assert not preloaded, preloaded
    sizes = {}
    for wasm in (small, full):
        r = requests.get(f"{stack.base_url}{wasm}", headers={"accept-encoding": "br"}, timeout=30)
        assert r.status_code == 200 and r.headers["content-encoding"] == "br", wasm
        assert "immutable" in r.headers["cache-control"], wasm
        sizes[wasm] = len(r.content)
    assert sizes[small] < sizes[full], f"the emailed link's bundle is the smaller one: {sizes}"

    approval_id = register(workflows, api, "Two bundles")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    expect(tab.approval.title).to_have_text("Two bundles", timeout=30_000)
    assert bundle_of(page.content()) == small
    wait_for_service_worker(page)
    page.reload()
    expect(tab.approval.title).to_have_text("Two bundles", timeout=30_000)
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    with page.expect_navigation(url=f"{stack.base_url}/settings") as nav:
        page.get_by_test_id("settings-link").click()
    assert not nav.value.from_service_worker, "the settings page is not the cached shell"
    expect(page.get_by_test_id("ooo-current")).to_be_visible(timeout=30_000)
    assert bundle_of(page.content()) == full
    # The cached shell stays the emailed link's, and a repeat open of the link still starts from it.
    assert bundle_of(cached(page)["/"]) == small
    # Back in the full bundle's app, the wordmark leads to the inbox without another page load.
    loads = len(tab.navigations)
    page.locator("a.wordmark").click()
    expect(tab.inbox.item(approval_id)).to_be_visible(timeout=30_000)
    assert len(tab.navigations) == loads, tab.navigations[loads:]
    assert not tab.csp_problems(), tab.problems


def wasm_fetched(page) -> dict[str, list[str]]:
    """Path → how each request for it started (`link`: a preload; `fetch`: a script), for every wasm this document
    fetched (Resource Timing)."""
    out: dict[str, list[str]] = {}
    for path, initiator in page.evaluate("""performance.getEntriesByType("resource")
            .filter((e) => e.name.endsWith(".wasm")).map((e) => [new URL(e.name).pathname, e.initiatorType])"""):
        out.setdefault(path, []).append(initiator)
    return out


def test_the_approval_page_leaves_the_other_parts_and_the_callback_preloads_its_own(stack, workflows, api, browser):
    """Parts on demand (docs/design.md §11): a signed-in open of an emailed link downloads the main module and, after
    the decision form, the part below it (timeline) and the delegation's (its out-of-office hint); not the inbox's,
    the sign-in callback's or the configuration fallback's, nor the sign-in's module. A sign-in's callback page
    preloads its part beside the main module (boot.js), and the app takes that preload: one request; the sign-in's
    module is fetched once, by boot.js."""
    approval_id = register(workflows, api, "Parts on demand")
    with Tab(browser) as tab:
        with_session(tab, stack)
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(tab.approval.approve_button).to_be_enabled(timeout=30_000)
        expect(tab.page.get_by_test_id("timeline")).to_be_visible()
        fetched = wasm_fetched(tab.page)
        parts = {PART_CHUNK.search(path).group(1) for path in fetched if PART_CHUNK.search(path)}
        # The delegation's may still be on its way: it is asked for with the form, the part below after it.
        assert "approval-below" in parts and parts <= {"approval-below", "delegate-dialog"}, fetched
        assert not any(SIGN_IN_MODULE.search(path) for path in fetched), fetched
        assert bundle_of(tab.page.content()) in fetched, fetched

    with Tab(browser) as tab:
        tab.open_signed_in(stack, f"/a/{approval_id}")
        expect(tab.approval.title).to_have_text("Parts on demand", timeout=30_000)
        # Still the callback page's document (the app went on to the approval without a page load).
        fetched = wasm_fetched(tab.page)
        wanted = [path for parts, path in CHUNK_META.findall(tab.page.content()) if "sign_in_callback" in parts.split()]
        assert wanted and all(fetched.get(path) == ["link"] for path in wanted), (wanted, fetched)
        assert [initiators for path, initiators in fetched.items() if SIGN_IN_MODULE.search(path)] == [["fetch"]], \
            fetched
        assert not tab.csp_problems(), tab.problems


def test_a_part_that_cannot_be_downloaded_shows_a_retry_in_its_place(stack, workflows, api, browser):
    """A part's chunk that does not arrive (a network gone, a deploy in between) leaves the rest of the page working
    and shows a retry card where the part goes (one per chunk); the retry downloads it again (a failure is not
    remembered). The delegation's chunk (fetched with the action, for the out-of-office hint, which is left out while
    it is missing) opens the dialog once a retry brings it, and the hint with it."""
    approval_id = register(workflows, api, "A part goes missing")
    # Out of office from now on (after the registration, so the approval stays alice's): the page offers the hand-over.
    # The service worker would fetch the chunks itself, out of the page's routes: none here.
    with _out_of_office(api, "alice", delegate="bob"), Tab(browser) as tab:
        tab.ctx.route("**/sw.js", lambda route: route.abort())
        with_session(tab, stack)
        missing = re.compile(r".*/ringi-(approval-below|inbox)-[0-9a-f]+_bg\.wasm$")
        tab.page.route(missing, lambda route: route.abort())
        # The delegation's chunk (its dialog, and the out-of-office hint fetched with the action) is missing too:
        # a hint that cannot come is left out, without a card of its own.
        dialog_chunk = re.compile(r".*/ringi-delegate-dialog-[0-9a-f]+_bg\.wasm$")
        tab.page.route(dialog_chunk, lambda route: route.abort())
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(tab.approval.approve_button).to_be_enabled(timeout=30_000)
        card = tab.page.get_by_test_id("part-error")
        expect(card).to_be_visible(timeout=30_000)
        # One card for the chunk, under the form, though the notices above it come in the same chunk.
        expect(card).to_have_count(1)
        expect(card).to_have_attribute("role", "alert")
        expect(card.get_by_role("heading", level=2)).to_have_text("Part of this page could not be loaded")
        expect(tab.page.get_by_test_id("timeline")).to_have_count(0)
        # A retry while the network is still down keeps the card (and the focus on its button).
        tab.page.get_by_test_id("part-retry").click()
        expect(tab.page.get_by_test_id("part-retry")).to_be_enabled()
        expect(tab.page.get_by_test_id("part-retry")).to_be_focused()
        tab.page.unroute(missing)
        tab.page.get_by_test_id("part-retry").click()
        expect(tab.page.get_by_test_id("timeline")).to_be_visible(timeout=30_000)
        expect(card).to_have_count(0)
        # The approval can still be decided as usual.
        expect(tab.approval.approve_button).to_be_enabled()

        # Opening the delegation dialog fetches its chunk again: its card stands under the button, and a retry opens
        # the dialog. The out-of-office hint, quietly left out so far, comes with that chunk.
        expect(tab.page.get_by_test_id("ooo-hint")).to_have_count(0)
        tab.page.get_by_test_id("delegate-open").click()
        expect(tab.page.get_by_test_id("delegate-section").get_by_test_id("part-error")).to_be_visible(timeout=30_000)
        expect(tab.page.get_by_test_id("delegate-dialog")).to_have_count(0)
        tab.page.unroute(dialog_chunk)
        tab.page.get_by_test_id("part-retry").click()
        expect(tab.page.get_by_test_id("delegate-dialog")).to_be_visible(timeout=30_000)
        expect(card).to_have_count(0)
        expect(tab.page.get_by_test_id("ooo-hint")).to_have_count(1)
        tab.page.get_by_test_id("delegate-cancel").click()
        expect(tab.page.get_by_test_id("delegate-dialog")).not_to_be_visible()

        # The inbox is a part as a whole: its card is the page's.
        tab.page.route(missing, lambda route: route.abort())
        tab.page.goto(f"{stack.base_url}/")
        expect(card).to_be_visible(timeout=30_000)
        expect(card.get_by_role("heading", level=1)).to_have_text("Part of this page could not be loaded")
        tab.page.unroute(missing)
        tab.page.get_by_test_id("part-retry").click()
        expect(tab.inbox.item(approval_id)).to_be_visible(timeout=30_000)
        assert not tab.csp_problems(), tab.problems


@contextlib.contextmanager
def _out_of_office(api, user: str, delegate: str):
    """`user` out of office for the next hour, handing over to `delegate`; back in office afterwards."""
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    away = api.call("PUT", "/api/v1/me/out-of-office", as_user=sub(user),
                    body={"delegate": {"sub": sub(delegate)}, "until": until})
    assert away.status_code == 200, away.text
    try:
        yield
    finally:
        api.call("DELETE", "/api/v1/me/out-of-office", as_user=sub(user))


@pytest.mark.parametrize("missing", ["module", "page"])
def test_a_sign_in_whose_code_cannot_be_downloaded_is_tried_again_in_place(stack, workflows, api, browser, missing):
    """The sign-in's module (the code exchange) or the callback page's part does not arrive: the sign-in is not lost.
    The page's retry card tries the same sign-in again (the code is still unused), then goes on to the emailed link's
    approval."""
    approval_id = register(workflows, api, "Signed in at the second try")
    with Tab(browser) as tab:
        tab.ctx.route("**/sw.js", lambda route: route.abort())
        missing = SIGN_IN_MODULE if missing == "module" else re.compile(r".*/ringi-sign-in-callback-[0-9a-f]+_bg\.wasm$")
        tab.page.route(missing, lambda route: route.abort())
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        HostedUi(tab.page, stack).sign_in("alice")
        card = tab.page.get_by_test_id("part-error")
        expect(card).to_be_visible(timeout=30_000)
        expect(card.get_by_role("heading", level=1)).to_have_text("Part of this page could not be loaded")
        tab.page.get_by_test_id("part-retry").click()
        expect(tab.page.get_by_test_id("part-retry")).to_be_enabled()
        expect(tab.page.get_by_test_id("part-retry")).to_be_focused()
        tab.page.unroute(missing)
        tab.page.get_by_test_id("part-retry").click()
        expect(tab.approval.title).to_have_text("Signed in at the second try", timeout=30_000)
        assert tab.page.url == f"{stack.base_url}/a/{approval_id}"
        assert not tab.csp_problems(), tab.problems


def test_a_sign_in_in_a_new_tab_lands_on_the_approval_asked_for_once(stack, workflows, api, browser):
    """The emailed link opened in a new tab (no session in it): the callback page exchanges the code with the sign-in's
    module and asks for the approval at once, while the app downloads; the app renders that answer and decides."""
    approval_id = register(workflows, api, "Decided after a sign-in", summary="Signed in a moment ago.")
    with Tab(browser) as tab:
        tab.ctx.route("**/sw.js", lambda route: route.abort())
        asked = []
        tab.page.on("request", lambda r: asked.append(r.url)
                    if r.method == "GET" and r.url.endswith(f"/api/v1/approvals/{approval_id}") else None)
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        HostedUi(tab.page, stack).sign_in("alice")
        expect(tab.approval.title).to_have_text("Decided after a sign-in", timeout=60_000)
        assert "code=" not in tab.page.url and "state=" not in tab.page.url, tab.page.url
        assert tab.page.evaluate("JSON.parse(sessionStorage.getItem('ringi.session')).bearer.split('.').length") == 3
        assert len(asked) == 1, f"the app takes the answer the callback page asked for: {asked}"
        tab.approval.decide("approve")
        tab.approval.expect_result("approved")
    assert api.get(approval_id, as_user=sub("alice")).json()["status"] == "approved"


def test_a_new_tab_signed_in_at_the_idp_downloads_the_sign_in_on_the_way(stack, workflows, api, browser):
    """The emailed link in a new tab of a browser signed in at the IdP, as a first visit (empty HTTP cache, no service
    worker), on a phone's round trips: the IdP answers the authorize request with a redirect to the callback, so the
    link's page stays until the callback page arrives. What the link's page asked for before leaving (the sign-in's
    module and the callback page's part, not the app) downloads meanwhile; the callback page takes it from the HTTP
    cache and, told so by the page before, asks for the app at once."""
    approval_id = register(workflows, api, "Signed in at the IdP")
    with Tab(browser) as tab:
        tab.open_signed_in(stack, f"/a/{approval_id}")
        expect(tab.approval.title).to_have_text("Signed in at the IdP", timeout=30_000)
        tab.page.evaluate("navigator.serviceWorker.getRegistrations()"
                          ".then((rs) => Promise.all(rs.map((r) => r.unregister())))")
        page = tab.ctx.new_page()
        cdp = tab.ctx.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.clearBrowserCache")
        # Each of the chain's two answers (authorize, callback) a round trip away; on loopback the chain would be
        # over before any download.
        cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 300,
                                                      "downloadThroughput": 4_000_000, "uploadThroughput": 4_000_000})
        documents, before_callback, on_callback = [], [], []
        page.on("framenavigated", lambda frame: documents.append(urlsplit(frame.url).path)
                if frame == page.main_frame else None)
        page.on("request", lambda r: (on_callback if "/auth/callback" in documents else before_callback).append(
            urlsplit(r.url).path) if r.url.endswith(".wasm") else None)
        page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(page.get_by_test_id("approval-title")).to_have_text("Signed in at the IdP", timeout=30_000)
        assert documents[:2] == [f"/a/{approval_id}", "/auth/callback"], documents
        html = page.content()
        app = bundle_of(html)
        part = [path for parts, path in CHUNK_META.findall(html) if "sign_in_callback" in parts.split()]
        sign_in = [path for path in before_callback if SIGN_IN_MODULE.search(path)]
        assert len(sign_in) == 1 and sorted(before_callback) == sorted(sign_in + part), before_callback
        downloaded = page.evaluate("""performance.getEntriesByType("resource")
            .filter((e) => e.name.endsWith(".wasm")).map((e) => [new URL(e.name).pathname, e.transferSize])""")
        assert [size for path, size in downloaded if path in before_callback] == [0] * len(before_callback), downloaded
        assert [size > 0 for path, size in downloaded if path == app] == [True], downloaded
        assert on_callback.index(app) < on_callback.index(sign_in[0]), on_callback
        assert not tab.csp_problems(), tab.problems

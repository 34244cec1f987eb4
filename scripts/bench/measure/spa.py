"""The SPA's first load on a deep link /a/{id}: time to interactive and each step of it, in Chromium with CPU and
network throttling (DevTools' Slow 4G preset), signed in or out, cold or warm cache."""
from __future__ import annotations

import json
import re
import statistics
import time

from ringi_stack import chromium
from common import session_record
from results import SpaLoad, SpaRun, Step

# Chromium DevTools' "Slow 4G" preset, exactly: `Slow4GConditions` in devtools-frontend
# front_end/core/sdk/NetworkManager.ts (the preset called "Fast 3G" before May 2024; a devtools-frontend unit test
# asserts these numbers): download 1.6 Mb/s × 0.9 = 180,000 B/s, upload 750 kb/s × 0.9 = 84,375 B/s, latency
# 150 ms × 3.75 = 562.5 ms (added once per request; bandwidth shared by parallel requests; no TCP/TLS handshakes).
SLOW_4G = {"offline": False, "latency": 150 * 3.75, "downloadThroughput": 1.6 * 1000 * 1000 / 8 * 0.9,
           "uploadThroughput": 750 * 1000 / 8 * 0.9, "connectionType": "cellular4g"}
assert (SLOW_4G["downloadThroughput"], SLOW_4G["uploadThroughput"], SLOW_4G["latency"]) == (180_000, 84_375, 562.5)
# What a phone on the deployed site is answered with: Chrome offers brotli over HTTPS and Cloudflare serves the
# build's `.br` (edge/src/assets.rs). Chromium on http://127.0.0.1 offers "gzip, deflate, br, zstd", and local
# workerd (Miniflare) answers with the first coding listed, re-encoding the body: gzip. The "br" conditions send the
# header an HTTPS page is effectively answered by (`Network.setExtraHTTPHeaders`), the others measure as served here.
BROTLI_FIRST = "br, gzip"
# (key, throttled, signed in as, warm HTTP cache, service worker allowed, Accept-Encoding), each on /a/{id} (spa_tti).
SPA_CONDITIONS = [("throttled", True, None, False, True, None),
                  ("signed_in_throttled", True, "bench-inbox", False, True, None),
                  ("throttled_br", True, None, False, True, BROTLI_FIRST),
                  ("signed_in_throttled_br", True, "bench-inbox", False, True, BROTLI_FIRST),
                  ("throttled_warm", True, None, True, True, None),
                  ("signed_in_warm_throttled", True, "bench-inbox", True, True, None),
                  ("signed_in_warm_throttled_no_sw", True, "bench-inbox", True, False, None),
                  ("unthrottled", False, None, False, True, None),
                  ("signed_in_unthrottled", False, "bench-inbox", False, True, None)]
SPA_LABELS = {"throttled": "signed out, cold, 4× CPU + Slow 4G, gzip (as served locally)",
              "signed_in_throttled": "signed in, cold, 4× CPU + Slow 4G, gzip (as served locally)",
              "throttled_br": "signed out, cold, 4× CPU + Slow 4G, brotli (as over HTTPS)",
              "signed_in_throttled_br": "signed in, cold, 4× CPU + Slow 4G, brotli (as over HTTPS)",
              "throttled_warm": "signed out, warm cache, 4× CPU + Slow 4G",
              "signed_in_warm_throttled": "signed in, warm cache, 4× CPU + Slow 4G",
              "signed_in_warm_throttled_no_sw": "signed in, warm HTTP cache only (service worker blocked), 4× CPU + Slow 4G",
              "unthrottled": "signed out, cold, no throttling (local)",
              "signed_in_unthrottled": "signed in, cold, no throttling (local)"}


# In the page, before any script: when the app shell first appears, when the measured view appears, when the
# page starts leaving for the Hosted UI, and when WebAssembly compilation/instantiation starts and resolves.
SPA_PROBE = """(() => {
  const selector = %s;
  const mark = () => {
    if (window.__ringiShell === undefined && document.querySelector('.app'))
      window.__ringiShell = performance.now();
    if (window.__ringiReady === undefined && document.querySelector(selector))
      window.__ringiReady = performance.now();
    // The app's own page shows the approval (its decision form may follow a task later).
    if (window.__ringiTitle === undefined && document.querySelector('[data-testid=approval-title]'))
      window.__ringiTitle = performance.now();
    // A decision can be made: the app's form.
    if (window.__ringiUsable === undefined && document.querySelector('[data-testid=approve]'))
      window.__ringiUsable = performance.now();
  };
  new MutationObserver(mark).observe(document, {subtree: true, childList: true, attributes: true,
                                                attributeFilter: ['data-testid']});
  window.addEventListener('beforeunload', () => { window.__ringiLeave ??= performance.now(); });
  window.__ringiWasm = [];
  for (const name of ['instantiateStreaming', 'instantiate', 'compileStreaming', 'compile']) {
    const original = WebAssembly[name];
    if (typeof original !== 'function') continue;
    WebAssembly[name] = function (...args) {
      const entry = {name, start: performance.now()};
      window.__ringiWasm.push(entry);
      const result = original.apply(this, args);
      result.then(() => { entry.end = performance.now(); }, () => { entry.end = performance.now(); entry.failed = true; });
      return result;
    };
  }
})();"""

SPA_STATS = """() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const res = performance.getEntriesByType('resource').map(e => ({
    name: new URL(e.name).pathname, start: e.startTime, response_start: e.responseStart, end: e.responseEnd,
    transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize, duration: e.duration,
    initiator: e.initiatorType}));
  return {ready: window.__ringiReady, leave: window.__ringiLeave, shell: window.__ringiShell,
          title: window.__ringiTitle, usable: window.__ringiUsable,
          fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
          html: {response_start: nav.responseStart, end: nav.responseEnd, transfer: nav.transferSize,
                 encoded: nav.encodedBodySize, decoded: nav.decodedBodySize},
          wasm: window.__ringiWasm || [], resources: res};
}"""


def spa_steps(stats: dict, end_ms: float) -> dict:
    """One run's load, step by step (ms from navigation start): the HTML, each request with its bytes, the
    WebAssembly compile+instantiate, the first render of the app shell and the end (view shown or redirect)."""
    reqs = [r for r in stats["resources"] if r["start"] < end_ms]
    # The app's main module (on the sign-in's callback page the sign-in's own module comes first).
    wasms = [r for r in reqs if r["name"].endswith(".wasm")]
    wasm_res = next((r for r in wasms if r["name"].startswith("/ringi-app-")), wasms[0] if wasms else None)
    # boot.js compiles the streamed wasm (compileStreaming) and then instantiates the module: the step spans both.
    done = [w for w in stats["wasm"] if w.get("end") and not w.get("failed")]
    last = next((w for w in reversed(done) if w["name"].startswith("instantiate")), None)
    inst = {"start": min(w["start"] for w in done), "end": last["end"]} if last else None
    # Requests that happen one after another: a request starts a new wave when it starts after every request of
    # the previous wave has ended (DevTools throttling adds the latency once per request).
    waves, wave_end = 1, stats["html"]["end"] or 0
    for r in sorted((r for r in reqs if r["transfer"]), key=lambda r: r["start"]):  # not the ones from the HTTP cache
        if r["start"] >= wave_end - 1:
            waves += 1
        wave_end = max(wave_end, r["end"]) if r["start"] >= wave_end - 1 else wave_end
    return {
        "end_ms": end_ms, "shell_ms": stats.get("shell"),
        "title_ms": stats.get("title"),
        "usable_ms": stats.get("usable"), "fcp_ms": stats.get("fcp"),
        "html": stats["html"],
        "requests": [{k: r[k] for k in ("name", "start", "end", "transfer", "encoded", "decoded")} for r in reqs],
        "bytes_before_end": (stats["html"].get("transfer") or 0) + sum(r["transfer"] or 0 for r in reqs),
        "serial_waves": waves,
        "wasm_instantiate": {"start": inst["start"], "end": inst["end"],
                             "after_last_byte": inst["end"] - wasm_res["end"] if wasm_res else None} if inst else None,
    }


def spa_tti(stack, base_url: str, approval_id: str, runs: int, throttle: bool,
            signed_in_as: str | None = None, warm: bool = False, service_worker: bool = True,
            accept_encoding: str | None = None) -> SpaLoad:
    """Median time to interactive of the deep link /a/{approval_id}, a fresh browser context per run.
    Signed out: until the page starts leaving for the Hosted UI (else `[data-testid=app-ready]`).
    Signed in (a session put into sessionStorage the way the SPA keeps it): until the app's decision form is
    there (`[data-testid=approve]`; the app renders the approval's title a task or two before it). Cold: HTTP
    cache disabled. Warm: the same link loaded once in the context first (HTTP cache on, as a phone opening the
    link a second time), then measured. `service_worker` False: the context blocks service workers (what the warm
    case was without one). `accept_encoding`: sent instead
    of Chromium's own (see BROTLI_FIRST).
    All times are `performance.now()` in the page (origin = navigation start)."""
    from playwright.sync_api import sync_playwright
    selector = "[data-testid=approve]" if signed_in_as else "[data-testid=app-ready]"
    results = []
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            for _ in range(runs):
                context = browser.new_context(service_workers="allow" if service_worker else "block")
                page = context.new_page()
                page.add_init_script(SPA_PROBE % json.dumps(selector))
                if signed_in_as:
                    session = session_record(stack.mint(signed_in_as), 3600_000)
                    page.add_init_script("if (location.origin === %s) sessionStorage.setItem('ringi.session', %s);"
                                         % (json.dumps(base_url), json.dumps(json.dumps(session))))
                redirected = {}
                cdp = context.new_cdp_session(page)

                def to_idp(event):
                    # Aborted: the navigation is dropped and the SPA's document stays, so its timings can be read.
                    # (CDP's Fetch domain, not Playwright's routing, which would turn the HTTP cache off.)
                    redirected.setdefault("t", time.monotonic())
                    cdp.send("Fetch.failRequest", {"requestId": event["requestId"], "errorReason": "Aborted"})

                cdp.on("Fetch.requestPaused", to_idp)
                cdp.send("Fetch.enable", {"patterns": [{"urlPattern": f"{stack.idp_url}/*"}]})
                cdp.send("Network.enable")
                cdp.send("Network.setCacheDisabled", {"cacheDisabled": not warm})
                if accept_encoding:
                    cdp.send("Network.setExtraHTTPHeaders", {"headers": {"Accept-Encoding": accept_encoding}})
                if throttle:
                    cdp.send("Network.emulateNetworkConditions", SLOW_4G)
                    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})

                def load():
                    redirected.clear()
                    page.goto(f"{base_url}/a/{approval_id}", wait_until="commit", timeout=120_000)
                    deadline, ready_at = time.monotonic() + 120, None
                    while time.monotonic() < deadline:
                        ready, leave = page.evaluate("[window.__ringiReady, window.__ringiLeave]")
                        if leave is not None and "t" in redirected:
                            break
                        if ready is not None:
                            # Signed out, the app is ready the moment it starts the sign-in: wait for the redirect.
                            ready_at = ready_at or time.monotonic()
                            if signed_in_as or time.monotonic() - ready_at > 3:
                                break
                        time.sleep(0.05)
                    else:
                        raise RuntimeError(f"the SPA never showed {selector} nor redirected to sign in")
                    time.sleep(0.1)
                    return page.evaluate(SPA_STATS)

                sw_throttle = None
                if warm:
                    load()
                    # The first visit installs the service worker (app/boot.js): a phone opening the link again
                    # later finds it active. Its network is the page's (throttle_service_workers); its own CPU is
                    # not throttled (CDP throttles the page's renderer).
                    # Signed out, the first visit leaves to sign in before the app starts: no worker is installed.
                    if service_worker and signed_in_as:
                        installed = page.evaluate(
                            "navigator.serviceWorker ? Promise.race([navigator.serviceWorker.ready.then(() => true), "
                            "new Promise((r) => setTimeout(() => r(false), 30000))]) : false")
                        if installed and throttle:
                            sw_throttle = throttle_service_workers(browser, SLOW_4G)
                stats = load()
                if sw_throttle:
                    sw_throttle.detach()
                leave, ready = stats.get("leave"), stats.get("ready")
                if signed_in_as and ready is not None:
                    tti, ended_by = ready, "approval rendered"
                elif leave is not None:
                    tti, ended_by = leave, "sign-in redirect"
                else:
                    tti, ended_by = ready, "app-ready"
                results.append(SpaRun(tti_ms=tti, ended_by=ended_by, **spa_steps(stats, tti), resources=[
                    {"name": x["name"], "transfer": x["transfer"], "encoded": x["encoded"], "decoded": x["decoded"],
                     "duration": x["duration"]} for x in stats["resources"]]))
                context.close()
        finally:
            browser.close()
    return SpaLoad(runs=results, steps=median_steps(results))


def throttle_service_workers(browser, conditions: dict):
    """DevTools' network emulation is per target: a page's does not reach its service worker, whose own fetches (the
    shell it fetches beside a navigation, the files it caches) would otherwise run at full speed, as no phone's do.
    Applies `conditions` to every service worker there is, each through a session of its own on a browser CDP
    session, and waits until each has taken them. Returns that session: the emulation lasts as long as it does."""
    cdp = browser.new_browser_cdp_session()
    answered = set()
    cdp.on("Target.receivedMessageFromTarget", lambda e: answered.add(json.loads(e["message"]).get("id")))
    workers = [t for t in cdp.send("Target.getTargets")["targetInfos"] if t["type"] == "service_worker"]
    if not workers:
        raise RuntimeError("no service worker to throttle")
    asked = set()
    for n, target in enumerate(workers):
        # Not flattened: Playwright's CDP sessions cannot address a flattened child session.
        session = cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": False})["sessionId"]
        for i, (method, params) in enumerate((("Network.enable", {}), ("Network.emulateNetworkConditions", conditions))):
            asked.add(message_id := 1000 + 10 * n + i)
            cdp.send("Target.sendMessageToTarget", {"sessionId": session, "message": json.dumps(
                {"id": message_id, "method": method, "params": params})})
    deadline = time.monotonic() + 10
    while not asked <= answered:
        if time.monotonic() > deadline:
            raise RuntimeError("a service worker did not take the network conditions")
        cdp.send("Browser.getVersion")  # a round trip, in which Playwright delivers the answers that came
    return cdp


def step_key(path: str) -> str:
    """A request's path with what differs between builds and approvals left out (content hashes, the id)."""
    key = re.sub(r"-[0-9a-f]{8,16}(?=[._])", "-…", path)
    return re.sub(r"^/api/v1/approvals/[^/]+$", "/api/v1/approvals/{id}", key)


def median_steps(results: list[SpaRun]) -> list[Step]:
    """(step, median start ms, median end ms, median bytes) over runs, in the order of a typical run."""
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    rows = [Step("HTML (navigation → last byte)", 0.0, med([r.html["end"] for r in results if r.html.get("end")]),
                 med([r.html["transfer"] for r in results if r.html.get("transfer") is not None]))]
    names = []
    for r in results:
        for q in r.requests:
            if step_key(q["name"]) not in names:
                names.append(step_key(q["name"]))
    for key in names:
        hits = [next(q for q in r.requests if step_key(q["name"]) == key) for r in results
                if any(step_key(q["name"]) == key for q in r.requests)]
        rows.append(Step(f"GET {key}", med([q["start"] for q in hits]), med([q["end"] for q in hits]),
                         med([q["transfer"] for q in hits])))
    inst = [r.wasm_instantiate for r in results if r.wasm_instantiate]
    if inst:
        after = med([i["after_last_byte"] for i in inst if i["after_last_byte"] is not None]) or 0
        rows.append(Step(f"wasm compile + instantiate (streaming; resolves after the last byte by {after:.0f} ms)",
                         med([i["start"] for i in inst]), med([i["end"] for i in inst]), None))
    rows.append(Step("first render of the app shell", None, med([r.shell_ms for r in results if r.shell_ms]), None))
    ends = {"approval rendered": "decision form interactive (the app rendered the approval)"}
    rows.append(Step("end: " + "/".join(sorted({ends.get(r.ended_by, r.ended_by) for r in results})), None,
                     med([r.tti_ms for r in results]), med([r.bytes_before_end for r in results])))
    rows.append(Step(f"serial request waves (HTML included): {med([r.serial_waves for r in results]):.0f}",
                     None, None, None))
    return rows


# A new tab of a browser that is signed in at the IdP but has no session in this tab: the emailed link's usual first
# open on a phone. (key, cold: HTTP cache off and no service worker, as a first visit; else the app's files cached
# by an earlier visit and its service worker active.)
NEW_TAB_CONDITIONS = [("new_tab_idp_session_br", True), ("new_tab_idp_session_warm_br", False)]
NEW_TAB_LABELS = {"new_tab_idp_session_br": "new tab, live IdP session, cold, 4× CPU + Slow 4G (app and IdP), brotli",
                  "new_tab_idp_session_warm_br": "new tab, live IdP session, app cached + service worker, 4× CPU + "
                                                 "Slow 4G (app and IdP), brotli"}
SPA_LABELS.update(NEW_TAB_LABELS)

# The same probe, with the document's time origin: the new-tab open spans several documents (the link, the IdP's
# redirects, the callback), so its times are taken from the click, in wall-clock milliseconds.
ORIGIN_PROBE = "window.__ringiOrigin = performance.timeOrigin;"


def spa_new_tab(stack, base_url: str, user: dict, runs: int, cold: bool) -> SpaLoad:
    """The emailed link /a/{id} opened in a new tab while the IdP still has a session: boot.js sends the tab to the
    Hosted UI, the IdP answers with a code at once (no form), the callback exchanges it, the approval is fetched
    and shown. Measured from the moment the link is opened until a decision can be made (the app's Approve), across the documents of the round trip, with the app and the IdP behind the same throttling.
    Each run: a fresh context signed in once at the IdP through the app (unthrottled), then — cold — its HTTP cache
    cleared and the service worker removed (a first visit: the cache starts empty and fills as the documents of the
    round trip load, as any browser's does); a new tab opens the link of an approval the user may decide."""
    from playwright.sync_api import sync_playwright
    import requests
    approval = requests.post(f"{base_url}/api/v1/approvals", timeout=30, headers={"authorization": f"Bearer {stack.api_key}"},
                             json={"taskToken": f"bench-new-tab-{time.time_ns()}", "title": "Deploy payments-api v2.41",
                                   "summary": "bench: new tab", "timeoutSeconds": 3600,
                                   "approvers": [{"sub": user["sub"]}]})
    assert approval.status_code == 201, approval.text
    approval_id = approval.json()["id"]
    selector = "[data-testid=approve]"
    results = []
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            for _ in range(runs):
                context = browser.new_context(service_workers="allow")
                first = context.new_page()
                first.goto(f"{base_url}/a/{approval_id}")
                first.wait_for_url(f"{stack.idp_url}/**", timeout=60_000)
                first.fill("input[name=username]", user["username"])
                first.fill("input[name=password]", user["password"])
                first.click("input[name=signInSubmitButton]")
                first.wait_for_selector(selector, timeout=60_000)
                if cold:
                    first.evaluate("navigator.serviceWorker.getRegistrations()"
                                   ".then((rs) => Promise.all(rs.map((r) => r.unregister())))")
                else:
                    first.evaluate("navigator.serviceWorker.ready.then(() => true)")
                first.close()
                # The cached app's service worker fetches on the same network as the tab (throttle_service_workers).
                sw_throttle = None if cold else throttle_service_workers(browser, SLOW_4G)
                page = context.new_page()
                page.add_init_script(SPA_PROBE % json.dumps(selector))
                page.add_init_script(ORIGIN_PROBE)
                cdp = context.new_cdp_session(page)
                cdp.send("Network.enable")
                if cold:
                    cdp.send("Network.clearBrowserCache")
                cdp.send("Network.setExtraHTTPHeaders", {"headers": {"Accept-Encoding": BROTLI_FIRST}})
                cdp.send("Network.emulateNetworkConditions", SLOW_4G)
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
                documents = []
                page.on("request", lambda r: documents.append((time.time() * 1000, r.url))
                        if r.is_navigation_request() and r.frame == page.main_frame else None)
                clicked = time.time() * 1000
                page.goto(f"{base_url}/a/{approval_id}", wait_until="commit", timeout=120_000)
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    try:
                        if page.evaluate("window.__ringiUsable !== undefined && window.__ringiReady !== undefined"):
                            break
                    except Exception:  # noqa: BLE001 - the page is between documents
                        pass
                    time.sleep(0.05)
                else:
                    raise RuntimeError("the new tab never showed the approval")
                time.sleep(0.1)
                stats = page.evaluate(SPA_STATS)
                shift = page.evaluate("window.__ringiOrigin") - clicked
                stats = _shifted(stats, shift)
                if sw_throttle:
                    sw_throttle.detach()
                results.append(SpaRun(tti_ms=stats["ready"], ended_by="approval rendered",
                                      **spa_steps(stats, stats["ready"]), resources=[],
                                      documents=[{"at_ms": t - clicked, "url": _path_of(u, stack)} for t, u in documents]))
                context.close()
        finally:
            browser.close()
    steps = [Step(f"document: {d['url']}", d["at_ms"], None, None) for d in results[len(results) // 2].documents]
    # The last document's own load (the callback page: its HTML, the sign-in's module, the token request, the
    # approval, the app), in the same terms as a signed-in open's, from the click.
    callback = median_steps(results)
    steps.append(Step("last document's HTML, last byte", None, callback[0].end, callback[0].bytes))
    steps += [s for s in callback[1:] if not s.label.startswith("end:")]
    steps.append(Step("end: decision form interactive (the app rendered the approval)", None,
                      statistics.median(r.tti_ms for r in results), None))
    return SpaLoad(runs=results, steps=steps)


def _shifted(stats: dict, by: float) -> dict:
    """The final document's times moved from its own origin to the click's."""
    move = lambda v: None if v is None else v + by  # noqa: E731
    out = dict(stats)
    for k in ("ready", "leave", "shell", "title", "usable", "fcp"):
        out[k] = move(stats.get(k))
    out["html"] = {**stats["html"], "response_start": move(stats["html"].get("response_start")),
                   "end": move(stats["html"].get("end"))}
    out["resources"] = [{**r, "start": move(r["start"]), "response_start": move(r["response_start"]),
                         "end": move(r["end"])} for r in stats["resources"]]
    out["wasm"] = [{**w, "start": move(w["start"]), "end": move(w.get("end"))} for w in stats["wasm"]]
    return out


def _path_of(url: str, stack) -> str:
    """A document's URL without what differs per run (codes, state, the id)."""
    from urllib.parse import urlsplit
    u = urlsplit(url)
    who = "IdP" if url.startswith(stack.idp_url) else "app"
    return f"{who} {re.sub(r'/a/[^/]+$', '/a/{id}', u.path)}"

"""The worker serves the SPA shell, health and runtime config, and JSON errors for unknown API paths."""
import base64
import gzip
import hashlib
import http.client
import json
import re
from urllib.parse import urlsplit

import requests
from playwright.sync_api import sync_playwright

from ringi_stack import chromium
from support import ARTIFACTS, ROOT


def test_healthz(stack):
    r = requests.get(f"{stack.base_url}/healthz", timeout=10)
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


def test_config_json_comes_from_wrangler_vars(stack):
    r = requests.get(f"{stack.base_url}/config.json", timeout=10)
    assert r.status_code == 200
    assert r.json() == {
        "cognitoDomain": stack.idp_url,
        "clientId": stack.client_id,
        "redirectUri": f"{stack.base_url}/auth/callback",
        "issuer": stack.issuer,
        "tokenUse": "access",
        "defaultLocale": "en",
        "version": "0.1.0",
        # Cognito's endpoints, below the Hosted UI domain (no discovery for a user pool).
        "provider": "cognito",
        "authorizationEndpoint": f"{stack.idp_url}/oauth2/authorize",
        "tokenEndpoint": f"{stack.idp_url}/oauth2/token",
        "endSessionEndpoint": f"{stack.idp_url}/logout",
        "scope": "openid email profile",
        "groupsClaim": "cognito:groups",
    }
    assert r.headers["cache-control"] == "no-store"


def test_unknown_api_paths_get_a_json_404(stack):
    for path in ["/api/nope", "/api/v1/approvals/x/y/z", "/api/v2/approvals"]:
        r = requests.get(f"{stack.base_url}{path}", timeout=10)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("application/json")
        assert r.json()["error"]["code"] == "no_route"
        assert r.json()["error"]["message"]


def test_wrong_method_is_a_json_405(stack):
    r = requests.post(f"{stack.base_url}/healthz", timeout=10)
    assert r.status_code == 405
    assert r.json()["error"]["code"] == "method_not_allowed"


def test_security_headers_on_assets_and_api(stack):
    for path in ["/", "/a/some-approval-id-123", "/healthz", "/api/nope"]:
        h = requests.get(f"{stack.base_url}{path}", timeout=10).headers
        csp = h["content-security-policy"]
        assert "'unsafe-inline'" not in csp and "'wasm-unsafe-eval'" in csp and "frame-ancestors 'none'" in csp, path
        assert h["referrer-policy"] == "no-referrer"
        assert h["x-content-type-options"] == "nosniff"
        assert h["strict-transport-security"].startswith("max-age=")
        assert h["cross-origin-opener-policy"] == "same-origin", path
        allowed = dict(item.strip().split("=", 1) for item in h["permissions-policy"].split(","))
        assert {"camera", "microphone", "geolocation", "payment", "usb"} <= set(allowed), path
        assert set(allowed.values()) == {"()"}, "every listed feature is denied"
        # connect-src: the worker plus the Hosted UI domain and the issuer (both the IdP here), nothing else.
        directives = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
        assert directives["connect-src"] == ["'self'", stack.idp_url], csp


def test_spa_html_is_revalidated_and_hashed_assets_are_served(stack):
    r = requests.get(f"{stack.base_url}/a/abcdefghijklmnop1234", timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["cache-control"] == "no-cache"
    assert " style=" not in r.text, "CSP: no inline style"
    # The one inline script that runs, the start-up script, is allowed by its hash and nothing else is.
    executed = [s for s in re.findall(r"<script([^>]*)>", r.text) if "src=" not in s and 'type="application/json"' not in s]
    assert executed == [""], executed
    [boot] = re.findall(r"<script>(.*?)</script>", r.text, re.S)
    digest = base64.b64encode(hashlib.sha256(boot.encode()).digest()).decode()
    directives = [d.split() for d in r.headers["content-security-policy"].split(";")]
    script_src = next(d[1:] for d in directives if d[:1] == ["script-src"])
    assert script_src == ["'self'", "'wasm-unsafe-eval'", f"'sha256-{digest}'"], script_src
    assert "'sha256-" not in requests.get(f"{stack.base_url}/healthz", timeout=10).headers["content-security-policy"]


def test_spa_renders_from_wasm_in_chromium(stack):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            page = browser.new_page()
            problems = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"{stack.base_url}/", wait_until="load")
            ready = page.wait_for_selector("[data-testid=app-ready]", timeout=30_000)
            assert "ringi" in page.title().lower() or "稟議" in ready.inner_text()
            assert page.evaluate("typeof WebAssembly") == "object"
            # Rendered by the wasm app, not the static HTML: the version from /config.json is in the page.
            page.wait_for_selector("text=0.1.0", timeout=10_000)
            page.screenshot(path=str(ARTIFACTS / "smoke-home.png"))
            # Deep link: SPA fallback serves index.html, and the approval route of a signed-out visitor sends
            # the browser to the Hosted UI (tests/e2e/test_spa.py covers the whole sign-in).
            page.goto(f"{stack.base_url}/a/abcdefghijklmnop1234", wait_until="load")
            page.wait_for_url(f"{stack.idp_url}/**", timeout=30_000)
            page.wait_for_selector("input[name=username]", timeout=10_000)
            assert not [p for p in problems if "Content Security Policy" in p or "Refused" in p], problems
            assert not [p for p in problems if "Permissions-Policy" in p or "Permissions Policy" in p], problems
        finally:
            browser.close()


def test_spa_html_carries_the_runtime_config(stack):
    """The worker embeds what /config.json returns into the HTML as a non-executed JSON block, so the SPA needs no
    request before it can route; the HTML itself is never cached without revalidation."""
    for path in ["/", "/a/abcdefghijklmnop1234", "/auth/callback"]:
        r = requests.get(f"{stack.base_url}{path}", timeout=10)
        assert r.status_code == 200 and r.headers["cache-control"] == "no-cache", path
        assert "etag" not in r.headers, "the HTML is not the stored file: none of the file's validators"
        blocks = re.findall(r'<script type="application/json" id="ringi-config">(.*?)</script>', r.text, re.S)
        assert len(blocks) == 1, r.text
        assert "<" not in blocks[0] and ">" not in blocks[0], blocks[0]
        assert json.loads(blocks[0]) == requests.get(f"{stack.base_url}/config.json", timeout=10).json()
        assert r.text.index('id="ringi-config"') < r.text.index("</head>")
    # Revalidation of the HTML always gets the page (never a 304 of the stored file without the config).
    r = requests.get(f"{stack.base_url}/", headers={"If-None-Match": "*", "If-Modified-Since":
                                                    "Sat, 01 Jan 2000 00:00:00 GMT"}, timeout=10)
    assert r.status_code == 200 and 'id="ringi-config"' in r.text


def test_spa_boots_from_the_embedded_config_under_the_strict_csp(stack):
    """The app reads the embedded config (no /config.json request), compiles the wasm while it streams (served as
    application/wasm, else wasm-bindgen warns and falls back) and nothing is refused by the CSP."""
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            page = browser.new_page()
            messages, requested = [], []
            page.on("console", lambda m: messages.append((m.type, m.text)))
            page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
            page.on("request", lambda r: requested.append(r.url))
            page.goto(f"{stack.base_url}/", wait_until="load")
            page.wait_for_selector("[data-testid=app-ready]", timeout=30_000)
            page.wait_for_selector("text=0.1.0", timeout=10_000)
            assert not [u for u in requested if u.endswith("/config.json")], requested
            assert not [m for m in messages if m[0] in ("error", "pageerror")], messages
            assert not [m for m in messages if "Content Security Policy" in m[1] or "Refused" in m[1]], messages
            assert not [m for m in messages if "instantiateStreaming" in m[1] or "MIME" in m[1]], messages
        finally:
            browser.close()


def test_a_page_without_the_embedded_config_fetches_it_and_retries_a_failure(stack):
    """A page served without the embedded block (another host of the files, a broken embedding) starts all the same:
    the app fetches /config.json, with a retry card while that fails."""
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            page = browser.new_page()
            strip = re.compile(r'<script type="application/json" id="ringi-config">.*?</script>', re.S)

            def without_config(route):
                response = route.fetch()
                route.fulfill(response=response, body=strip.sub("", response.text()))

            page.route(f"{stack.base_url}/", without_config)
            config_fails = {"now": True, "asked": 0}

            def config(route):
                config_fails["asked"] += 1
                route.abort() if config_fails["now"] else route.continue_()

            page.route(f"{stack.base_url}/config.json", config)
            page.goto(f"{stack.base_url}/", wait_until="load")
            assert page.locator("#ringi-config").count() == 0
            page.wait_for_selector("[data-testid=config-error]", timeout=30_000)
            assert page.locator("[data-testid=app-loading]").count() == 1
            assert "/config.json" in page.inner_text("[data-testid=config-error] code")
            # A retry that fails again keeps the card, and the focus on its button (not re-created).
            page.focus("[data-testid=config-retry]")
            page.click("[data-testid=config-retry]")
            page.wait_for_function("""() => document.activeElement?.dataset.testid === 'config-retry'
                && document.activeElement.getAttribute('aria-disabled') === 'false'""", timeout=10_000)
            assert config_fails["asked"] == 2, config_fails
            assert page.locator("[data-testid=config-error]").count() == 1
            config_fails["now"] = False
            page.click("[data-testid=config-retry]")
            page.wait_for_selector("[data-testid=app-ready]", timeout=30_000)
            # The routes with what /config.json says: the version in the footer, the landing page's sign-in.
            page.wait_for_selector("text=0.1.0", timeout=10_000)
            page.wait_for_selector("[data-testid=welcome] [data-testid=sign-in]", timeout=10_000)
            assert page.locator("[data-testid=config-error]").count() == 0
        finally:
            browser.close()


def _raw_get(stack, path, accept_encoding=None):
    """(status, lower-cased headers, body as sent): http.client, so that nothing is decoded on the way."""
    u = urlsplit(stack.base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": accept_encoding} if accept_encoding else {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_hashed_assets_are_served_precompressed_and_immutable(stack):
    """The build's brotli/gzip of each content-hashed file, as is, with the encoding the browser accepts (Chrome
    sends `br` only over HTTPS: plain-HTTP pages get gzip), the right type (application/wasm: streaming
    compilation) and a year-long immutable cache; stable names and the HTML are revalidated."""
    html = requests.get(f"{stack.base_url}/", timeout=10).text
    names = sorted(set(re.findall(r'(?:src|href|content)="/([^"/]+-[0-9a-f]{8,16}(?:_bg\.wasm|\.js|\.css))"', html)))
    types = {"wasm": "application/wasm", "js": "text/javascript", "css": "text/css"}
    assert {n.rsplit(".", 1)[1] for n in names} == set(types), names
    for name in names:
        raw = (ROOT / "dist" / name).read_bytes()
        # Local workerd (Miniflare) answers with the first coding the client lists, re-encoding if needed (so the gzip
        # bytes here are its own): the brotli cases list br first. Chrome over plain HTTP sends "gzip, deflate".
        for accept, encoding in [("br", "br"), ("br, gzip", "br"), ("gzip, deflate", "gzip"), ("br;q=0, gzip", "gzip"),
                                 (None, None)]:
            status, h, body = _raw_get(stack, f"/{name}", accept)
            assert status == 200, (name, accept, status)
            assert h["content-type"].startswith(types[name.rsplit(".", 1)[1]]), (name, h["content-type"])
            assert h["cache-control"] == "public, max-age=31536000, immutable", (name, h)
            assert "accept-encoding" in h.get("vary", "").lower(), (name, h)
            assert h["x-content-type-options"] == "nosniff" and "'unsafe-inline'" not in h["content-security-policy"]
            assert h.get("content-encoding") == encoding, (name, accept, h.get("content-encoding"))
            if encoding == "br":
                assert body == (ROOT / "dist" / f"{name}.br").read_bytes(), f"{name}: the build's brotli, as is"
                assert len(body) < len(raw)
            elif encoding == "gzip":
                assert gzip.decompress(body) == raw, name
            else:
                assert body == raw, name
    for path in ["/", "/a/abcdefghijklmnop1234", "/favicon.svg", "/manifest.webmanifest",
                 "/boot-0123456789abcdef.js"]:  # the last: a hashed-looking name that does not exist
        h = requests.get(f"{stack.base_url}{path}", timeout=10).headers
        assert "immutable" not in h.get("cache-control", ""), (path, h.get("cache-control"))
        assert "content-encoding" not in h or h["content-encoding"] != "br", path

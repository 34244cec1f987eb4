// Starts the ringi SPA without an inline script, so the Content-Security-Policy needs no 'unsafe-inline'
// (script-src 'self' 'wasm-unsafe-eval'). Trunk writes the hashed names of the wasm-bindgen JS and the wasm
// into <meta name="ringi-js"> / <meta name="ringi-wasm"> (Trunk.toml `pattern_script`); this module is itself
// processed by Trunk (hashed file name + integrity attribute).
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute("content");

function showFailure(error) {
  console.error("ringi: the application could not start", error);
  const status = document.getElementById("boot-status");
  if (status) {
    const ja = (navigator.language || "").toLowerCase().startsWith("ja");
    status.textContent = ja
      ? "アプリを起動できませんでした。ページを再読み込みしてください。"
      : "The app could not start. Please reload the page.";
    status.classList.add("boot__status--error");
  }
}

// A short link opened with a session in this tab: ask for the approval now, while the wasm downloads, instead
// of after the app has started. The app takes this response (app/src/infra/api.rs `take_prefetched`) when it asks
// for the same URL; anything unexpected here just means the app asks itself. The session's shape and expiry
// margin are those of app/src/infra/auth.rs.
function prefetchApproval() {
  const match = /^\/a\/([^/]+)$/.exec(location.pathname);
  if (!match) return;
  const session = JSON.parse(sessionStorage.getItem("ringi.session") || "null");
  if (typeof session?.bearer !== "string" || !(session.expiresAt - 30_000 > Date.now())) return;
  const url = `/api/v1/approvals/${encodeURIComponent(decodeURIComponent(match[1]))}`;
  const response = fetch(url, {
    headers: { Authorization: `Bearer ${session.bearer}`, Accept: "application/json" },
    cache: "no-store",
    credentials: "same-origin",
  });
  response.catch(() => {});
  globalThis.ringiPrefetch = { url, response };
}

try {
  prefetchApproval();
} catch {
  // Not worth a failure: the app asks for the approval itself.
}

try {
  const js = meta("ringi-js");
  const wasm = meta("ringi-wasm");
  if (!js || !wasm) {
    throw new Error("missing <meta name=ringi-js/ringi-wasm> (index.html not built by Trunk?)");
  }
  // Fetch the wasm with the integrity hash of the <link rel="preload"> Trunk injected: the download is checked
  // (SRI) and the preloaded response is reused (a preload with integrity only matches a request with the same).
  const preload = [...document.querySelectorAll('link[rel="preload"][as="fetch"]')].find(
    (link) => link.getAttribute("href") === wasm,
  );
  const integrity = preload?.getAttribute("integrity") || undefined;
  const response = fetch(wasm, { integrity, credentials: "same-origin" });
  const { default: init } = await import(js);
  await init({ module_or_path: response });
} catch (error) {
  showFailure(error);
}

// Starts the ringi SPA. Inlined into the page as a classic script (index.html), so that it runs as the parser reaches
// it: what it asks for at once (the app's wasm, a short link's approval) leaves with the page's first parse, not a
// task after the document is parsed, as an async module's would. The worker allows it by its hash (script-src
// 'sha256-…', no 'unsafe-inline'). The build wraps it in a function as it minifies it (scripts/build/minify.mjs), so
// none of its names lands in the global scope. Trunk writes the hashed names of the wasm-bindgen JS and the wasm
// into <meta name="ringi-js"> / <meta name="ringi-wasm"> (Trunk.toml `pattern_script`). STORAGE and LANGUAGES are
// the app's, written in front of this script at build time (app/src/early.rs, scripts/build/spa.sh), and so is
// CALLBACK_PATH.
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute("content");
// The approval ID of a short link (`/a/{id}`, as the link reads), or undefined on any other page.
const shortLinkId = (path = location.pathname) => /^\/a\/([^/]+)$/.exec(path)?.[1];
// A wasm module the build names in <meta name="…" content="…" data-integrity="…">: fetched checked against its
// integrity (SRI), which also lets a preload of it with the same integrity be reused. Null when the page names none.
function fetchNamedWasm(name) {
  const named = document.querySelector(`meta[name="${name}"]`);
  if (!named) return null;
  return fetch(named.content, { integrity: named.dataset.integrity || undefined, credentials: "same-origin" });
}
// The wasm chunks (their URLs) that a part of the app needs: scripts/build/split.mjs names each in a
// <meta name="ringi-chunk" data-parts="…">.
const chunksOf = (part) =>
  [...document.querySelectorAll('meta[name="ringi-chunk"]')]
    .filter((chunk) => chunk.dataset.parts.split(" ").includes(part))
    .map((chunk) => chunk.content);
// The page's configuration as the worker embedded it (JSON text), or undefined.
const embeddedConfig = () => document.getElementById("ringi-config")?.textContent || undefined;

// The sign-in's callback: its query (code, state) leaves the address bar and the history entry before anything else
// runs or any request is made; the code exchange takes it from here.
const callbackQuery = location.pathname === CALLBACK_PATH ? takeCallbackQuery() : null;
function takeCallbackQuery() {
  const query = location.search;
  history.replaceState(null, "", CALLBACK_PATH);
  return query;
}
// This tab's session as app/src/infra/auth.rs keeps it (null when signed out).
const storedSession = () => JSON.parse(sessionStorage.getItem(STORAGE.session) || "null");
// A short link opened with no session in this tab leaves for the IdP (`signInFirst`) and comes back to the callback
// page, whose sign-in's module goes first. Read once, as the page starts.
const leavesToSignIn = callbackQuery === null && shortLinkId() !== undefined && hasNoSession();
function hasNoSession() {
  try {
    return storedSession() === null;
  } catch {
    return false; // Unreadable: the app starts and says so.
  }
}

// What the callback page runs first (the sign-in's module, the callback page's part), asked for before leaving to
// sign in. A page's downloads go on until the next page arrives, and an IdP with a live session answers the
// authorize request with a redirect to the callback: this page stays for those two round trips, in which a phone
// downloads the module, and the callback page finds it in the HTTP cache (and a note that it is there,
// STORAGE.signInCached). Where the IdP shows a page of its own, the download stops there and the callback page
// makes it. Not the app's wasm: on a phone's bandwidth it would hold the module back past the callback page's
// arrival, which drops what is still under way.
function prefetchSignIn() {
  const module = meta("ringi-sign-in-wasm");
  for (const href of [module, meta("ringi-sign-in-js"), ...chunksOf("sign_in_callback")]) {
    if (!href) continue;
    const link = Object.assign(document.createElement("link"), { rel: "prefetch", href });
    // Noted once it is all there (this page is still open): the callback page then asks for the app at once.
    if (href === module) link.addEventListener("load", () => sessionStorage.setItem(STORAGE.signInCached, href));
    document.head.append(link);
  }
}
if (leavesToSignIn) {
  try {
    prefetchSignIn();
  } catch {
    // The callback page downloads them itself.
  }
}

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

// A short link opened with a session in this tab (or a sign-in that just completed on the way to one, `path`): ask
// for the approval now, while the wasm downloads, instead of after the app has started. The app takes this
// response (app/src/infra/api.rs `take_prefetched`) when it asks for the same URL; anything unexpected here just
// means the app asks itself. The session's shape and expiry margin are those of app/src/infra/auth.rs.
function prefetchApproval(path) {
  const id = shortLinkId(path);
  if (!id) return;
  const session = storedSession();
  if (typeof session?.bearer !== "string" || !(session.expiresAt - 30_000 > Date.now())) return;
  const url = `/api/v1/approvals/${encodeURIComponent(decodeURIComponent(id))}`;
  const response = fetch(url, {
    headers: { Authorization: `Bearer ${session.bearer}`, Accept: "application/json" },
    cache: "no-store",
    credentials: "same-origin",
  });
  // Read here, as soon as it arrives: the app then takes the text without waiting for a task of its own, so that its
  // page renders in the task that mounts it rather than after a frame of the skeleton.
  const answer = response.then(async (r) => ({ status: r.status, text: await r.text() }));
  answer.catch(() => {});
  globalThis.ringiPrefetch = { url, answer };
}

try {
  prefetchApproval();
} catch {
  // Not worth a failure: the app asks for the approval itself.
}

// The sign-in's code exchange (sign-in/: the `oauth2` crate and the session it keeps) is a wasm module of its own,
// a fraction of the app's: on the callback page it is fetched at once, beside the app, so that the sign-in
// completes, and the approval it came for is asked for, while the app still downloads. The build names its files
// (<meta name="ringi-sign-in-js"/"ringi-sign-in-wasm">, with their integrity). A module that could not be fetched
// is not remembered: asking again fetches it again.
let signInModule = null;
function loadSignIn() {
  signInModule ??= (async () => {
    const js = document.querySelector('meta[name="ringi-sign-in-js"]');
    const module = js && fetchNamedWasm("ringi-sign-in-wasm");
    if (!module) throw new Error("missing <meta name=ringi-sign-in-js/ringi-sign-in-wasm>");
    // The import takes this preload's response, checked against its integrity.
    const link = Object.assign(document.createElement("link"), { rel: "modulepreload", href: js.content });
    link.integrity = js.dataset.integrity;
    link.crossOrigin = "anonymous";
    document.head.append(link);
    const glue = await import(js.content);
    await glue.default({ module_or_path: module });
    return glue.complete;
  })().catch((error) => {
    signInModule = null;
    throw error;
  });
  return signInModule;
}
globalThis.ringiLoadSignIn = () => loadSignIn().then(() => undefined);

// This page's sign-in, completed once whoever asks first (this script as soon as the page is parsed, or the app's
// callback page): resolves to the page to go to, rejects with the module's answer (JSON) or, when the module could
// not be fetched, an error (then asking again tries again: the code is still unused).
let signIn = null;
globalThis.ringiCompleteSignIn = (config) => {
  signIn ??= loadSignIn().then(
    (complete) => complete(config, callbackQuery ?? ""),
    (error) => {
      signIn = null;
      throw error;
    },
  );
  return signIn;
};
// The app's wasm (the page has no preload of it), asked for as the page starts wherever the app starts on it. Not
// before leaving to sign in. On the callback page the sign-in's module goes first: when the page before noted it in
// the HTTP cache, the app's wasm is asked for at once; otherwise once the module is in (or could not come), so that
// on a phone's link the two do not share the bandwidth.
const appWasm = leavesToSignIn
  ? null
  : callbackQuery === null || signInCached()
    ? fetchNamedWasm("ringi-wasm")
    : loadSignIn().then(
        () => fetchNamedWasm("ringi-wasm"),
        () => fetchNamedWasm("ringi-wasm"),
      );
appWasm?.catch(() => {}); // Reported when the app starts with it.
if (callbackQuery !== null) loadSignIn().catch(() => {});

function signInCached() {
  try {
    const noted = sessionStorage.getItem(STORAGE.signInCached);
    sessionStorage.removeItem(STORAGE.signInCached);
    return noted !== null && noted === meta("ringi-sign-in-wasm");
  } catch {
    return false;
  }
}

// The parts of the app that come in wasm chunks of their own (scripts/build/split.mjs writes a
// <meta name="ringi-chunk" data-parts="…"> for each) and that this page shows at once: downloaded beside the app
// rather than once it has started. The callback's page (app/src/pages/sign_in.rs `callback_page`) and, signed
// in, the inbox (app/src/app.rs `inbox_part`); the approval page's own parts come after its decision form.
function preloadParts() {
  const page = location.pathname;
  const part = callbackQuery !== null ? "sign_in_callback" : page === "/" && storedSession() ? "inbox" : null;
  if (!part) return;
  for (const href of chunksOf(part)) {
    const link = Object.assign(document.createElement("link"), { rel: "preload", as: "fetch", href });
    // As the split JS fetches it (same-origin, `fetch` defaults), so that its request takes this response.
    link.crossOrigin = "anonymous";
    document.head.append(link);
  }
}
try {
  preloadParts();
} catch {
  // The app fetches them itself.
}

// Sign-in with authorization code + PKCE (S256). The one writer of the pending sign-in record
// (sessionStorage[STORAGE.pending]: state, PKCE verifier, page to come back to) that the sign-in module
// (sign-in/src/callback.rs `complete`) consumes on /auth/callback, where the oauth2 crate exchanges the code. The
// app calls it too (globalThis.ringiSignIn), so a short link opened signed-out need not wait for the wasm.
const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const randomB64url = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)));

// `stepUp` (an approval's `requireSignIn`, when it asks for a fresher or stronger sign-in than the session's): the
// provider is asked for a new sign-in (`prompt=login`), at most `max_age` seconds old, at one of `acr_values` (or
// of Entra's authentication contexts, `acrs`).
async function startSignIn(config, returnTo, lang, reauth, stepUp) {
  // As many random bytes as the oauth2 crate's own CsrfToken::new_random / PkceCodeChallenge::new_random_sha256.
  const state = randomB64url(16);
  const verifier = randomB64url(32);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  // The worker's configuration names the endpoint (Cognito: below the Hosted UI domain; OIDC: from the
  // issuer's discovery document), so no discovery request is made here.
  const url = new URL(config.authorizationEndpoint);
  const params = {
    response_type: "code",
    client_id: config.clientId,
    state,
    code_challenge: b64url(new Uint8Array(digest)),
    code_challenge_method: "S256",
    redirect_uri: config.redirectUri,
    scope: config.scope || "openid email profile",
  };
  // Cognito's managed login picks its language from `lang`; OpenID Connect providers from `ui_locales`.
  if (config.provider === "oidc") params.ui_locales = lang;
  else params.lang = lang;
  if (stepUp) {
    params.prompt = "login";
    if (Number.isInteger(stepUp.maxAgeSeconds)) params.max_age = String(stepUp.maxAgeSeconds);
    if (Array.isArray(stepUp.acr) && stepUp.acr.length) {
      params.acr_values = stepUp.acr.join(" ");
      // Entra ID ignores acr_values: it asks for an authentication context through the claims parameter (OpenID
      // Connect Core 5.5, which a provider that does not support it ignores). One value as Entra documents it.
      const acrs = stepUp.acr.length === 1 ? { essential: true, value: stepUp.acr[0] } : { essential: true, values: stepUp.acr };
      params.claims = JSON.stringify({ id_token: { acrs }, access_token: { acrs } });
    }
  }
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  sessionStorage.setItem(STORAGE.pending, JSON.stringify({ state, verifier, returnTo, createdAt: Date.now(), reauth }));
  sessionStorage.removeItem(STORAGE.signedOut);
  location.assign(url.href);
}
globalThis.ringiSignIn = startSignIn;

// The UI language the app would choose (app/src/infra/config.rs): the one picked in the header earlier, else the
// browser's first that the UI speaks, else the configured default.
function uiLanguage(config) {
  const speaks = (tag) => LANGUAGES.find((l) => (tag || "").split(/[-_]/)[0].toLowerCase() === l);
  const chosen = [localStorage.getItem(STORAGE.locale), ...(navigator.languages || [])].map(speaks).find(Boolean);
  return chosen || speaks(config.defaultLocale) || "en";
}

// A short link opened with no session in this tab has nothing to show before sign-in: go to the Hosted UI now
// rather than after the wasm has downloaded and started. A tab with an expired session is left to the app (it
// knows when signing in again would loop). Resolves false when the app should start instead.
async function signInFirst() {
  if (!leavesToSignIn) return false;
  const config = JSON.parse(embeddedConfig() || "null");
  if (!config?.authorizationEndpoint || !config.clientId || !config.redirectUri) return false;
  await startSignIn(config, location.pathname + location.search, uiLanguage(config), false);
  return true;
}

// Starts the wasm app.
async function startApp() {
  const js = meta("ringi-js");
  const wasm = meta("ringi-wasm");
  if (!js || !wasm) {
    throw new Error("missing <meta name=ringi-js/ringi-wasm> (index.html not built by Trunk?)");
  }
  const response = appWasm ?? fetchNamedWasm("ringi-wasm");
  const [{ default: init }, module] = await Promise.all([import(js), WebAssembly.compileStreaming(response)]);
  await init({ module_or_path: module });
}

// Repeat visits: public/sw.js serves the hashed files from a cache and the app shell from the network (the cached
// shell only offline). Registered once the app runs (a sign-in redirect leaves before), never for the API.
function registerServiceWorker() {
  if (!("serviceWorker" in navigator) || !isSecureContext) return;
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch((error) => {
    console.warn("ringi: offline start unavailable", error);
  });
}

// Signing out (app/src/context.rs `sign_out`) or turning notifications off (the settings page): the worker forgets
// this device's push subscription, with the session's `bearer`, then the browser does (design.md §9 "Push"). Here
// rather than in the wasm, so that the approval page's bundle carries none of it. Best effort: a subscription left
// behind is one the push service soon reports gone.
globalThis.ringiForgetPushDevice = async (bearer) => {
  try {
    const registration = await navigator.serviceWorker?.getRegistration();
    const subscription = await registration?.pushManager?.getSubscription();
    if (!subscription) return;
    if (bearer) {
      await fetch("/api/v1/me/push", {
        method: "DELETE",
        headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
        body: JSON.stringify({ endpoint: subscription.endpoint }),
      }).catch(() => {});
    }
    await subscription.unsubscribe();
  } catch (error) {
    console.warn("ringi: this device's notifications could not be turned off", error);
  }
};

// The page's own start, once the document is parsed: what follows reads the embedded configuration (placed at the end
// of <head>) and mounts the app. Everything above ran as the parser reached this script.
async function start() {
  if (document.readyState === "loading") {
    await new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }));
  }
  // The callback page: the sign-in completes with the embedded configuration (a page without it leaves the sign-in
  // to the app, once it has fetched it), and a short link it came back to is asked for at once, shown and decidable
  // before the app has arrived.
  const callbackConfig = callbackQuery !== null ? embeddedConfig() : undefined;
  if (callbackConfig) {
    globalThis
      .ringiCompleteSignIn(callbackConfig)
      .then((to) => prefetchApproval(to))
      .catch(() => {});
  }
  try {
    if (!(await signInFirst().catch(() => false))) {
      await startApp();
      registerServiceWorker();
    }
  } catch (error) {
    showFailure(error);
  }
}
start();

// ringi's service worker: repeat visits start without downloading the app again, nor waiting for its page. It keeps
// one copy of the app shell (the HTML every app path answers with, configuration embedded) and the content-hashed
// files that shell names. A navigation is answered by the cached shell at once, and the shell is fetched again
// beside it: on a phone's network that saves the open a whole round trip before the approval is even asked for.
// The build a deploy brings therefore runs from the open after the one that fetched it (its shell is kept once
// all of its files are); the API stays compatible across that one open (`/api/v1`). Without a cached shell (the
// first visit, or one whose files could not all be cached) the navigation goes to the network.
//
// Never cached: the API, tokens, anything that is not a same-origin GET of the shell or a hashed file (the
// Hosted UI and the token endpoint are other origins and are not touched).
const CACHE = "ringi-shell-v1";
const SHELL = "/";
// The names Trunk gives built files (ringi-core `assets::hashed_asset_type`): immutable, safe to keep.
const HASHED = /^\/[^/]+-[0-9a-f]{8,16}(_bg\.wasm|\.js|\.css)$/;
// The hashed files a shell loads: its modulepreload/preload/stylesheet links, boot script and <meta> names (the
// app's parts on demand among them: an offline start may open any page).
const ASSET_REF = /(?:href|src|content)="(\/[^"/]+-[0-9a-f]{8,16}(?:_bg\.wasm|\.js|\.css))"/g;

const assetsOf = (html) => [...new Set([...html.matchAll(ASSET_REF)].map((m) => m[1]))];

// Fetches the current shell and keeps it (`keepShell`).
async function refreshShell() {
  return keepShell(await fetch(SHELL, { cache: "no-cache", credentials: "same-origin" }));
}

// Once every hashed file this shell names is cached, makes it the cached shell and drops the files no shell needs
// any more. Any failure leaves the cache as it was.
async function keepShell(response) {
  if (!response.ok || !(response.headers.get("content-type") || "").startsWith("text/html")) return;
  const html = await response.clone().text();
  const wanted = assetsOf(html);
  const cache = await caches.open(CACHE);
  for (const path of wanted) {
    if (await cache.match(path)) continue;
    const file = await fetch(path, { credentials: "same-origin" });
    if (!file.ok) return;
    await cache.put(path, file);
  }
  await cache.put(SHELL, response);
  for (const request of await cache.keys()) {
    const path = new URL(request.url).pathname;
    if (path !== SHELL && !wanted.includes(path)) await cache.delete(request);
  }
}

self.addEventListener("install", (event) => {
  // The API goes to the network without waking this worker (the static routing API, where the browser has it):
  // the approval request of a short link starts at once.
  if (event.addRoutes) {
    event.waitUntil(event.addRoutes([{ condition: { urlPattern: { pathname: "/api/*" } }, source: "network" }]).catch(() => {}));
  }
  // The first shell is cached before this worker takes over; a failure just means no offline start yet.
  event.waitUntil(refreshShell().catch(() => {}).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys().then((names) => Promise.all(names.filter((n) => n !== CACHE).map((n) => caches.delete(n)))),
  );
});

// An app page (`/`, `/a/{id}`, `/auth/callback?…`): a path whose last segment names no file — except the pages
// of the full bundle (ringi-core `assets::FULL_BUNDLE_PATHS`, held equal to this list by a test there), which the
// worker answers with another HTML than the cached shell: those few, rarely opened pages come from the network.
const FULL_BUNDLE = /^\/(audit|settings)\/?$/;
const isAppPage = (url) =>
  !url.pathname.split("/").pop().includes(".") && !url.pathname.startsWith("/api/") && !FULL_BUNDLE.test(url.pathname);

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;

  if (request.mode === "navigate" && isAppPage(url)) {
    event.respondWith(
      (async () => {
        // Every app path answers with the same shell: the cached one at once (offline too), the current one
        // fetched beside it and kept with its files for the next open.
        const cached = await caches.match(SHELL);
        if (cached) {
          event.waitUntil(refreshShell().catch(() => {}));
          return cached;
        }
        const response = await fetch(request);
        if (response.ok) event.waitUntil(keepShell(response.clone()).catch(() => {}));
        return response;
      })(),
    );
    return;
  }

  if (HASHED.test(url.pathname) && !request.headers.has("range")) {
    event.respondWith(
      (async () => {
        const cache = await caches.open(CACHE);
        const cached = await cache.match(url.pathname);
        if (cached) return cached;
        const response = await fetch(request);
        if (response.ok) event.waitUntil(cache.put(url.pathname, response.clone()).catch(() => {}));
        return response;
      })(),
    );
  }
  // Everything else (the API above all) goes to the network as if there were no service worker.
});

// Web Push (design.md §9 "Push"): the worker's message is `{title, requester, deadline, url, lang}` (no token, no
// details beyond the request mail's). One notification per approval (`tag`: a reminder replaces the request).
self.addEventListener("push", (event) => {
  let m = {};
  try {
    m = event.data ? event.data.json() : {};
  } catch (_) {
    m = {};
  }
  const url = typeof m.url === "string" && m.url.startsWith(self.location.origin + "/a/") ? m.url : self.location.origin + "/";
  const ja = m.lang === "ja";
  const lines = [m.requester && (ja ? `依頼者: ${m.requester}` : `Requested by ${m.requester}`),
    m.deadline && (ja ? `期限: ${new Date(m.deadline).toLocaleString("ja-JP")}` : `Decide before ${new Date(m.deadline).toLocaleString("en")}`)];
  const shown = self.registration.showNotification(m.title || (ja ? "承認の依頼" : "Approval requested"), {
    body: lines.filter(Boolean).join("\n"),
    tag: new URL(url).pathname,
    data: { url },
    lang: ja ? "ja" : "en",
    icon: "/icons/icon.svg",
  });
  wait(event, shown);
});

// Tapping the notification opens its approval: a tab already there is focused, else an open tab of the app goes
// there, else a new one opens.
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  wait(event, openApproval((event.notification.data && event.notification.data.url) || "/"));
});

async function openApproval(url) {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const same = windows.find((c) => c.url === url);
  if (same) return same.focus().catch(() => same);
  const ours = windows.find((c) => new URL(c.url).origin === self.location.origin);
  if (ours) {
    const moved = await ours.navigate(url);
    return (moved || ours).focus().catch(() => moved);
  }
  return self.clients.openWindow(url);
}

// `waitUntil` for the browser's own events (a synthetic one, dispatched by a test, has none).
function wait(event, promise) {
  try {
    event.waitUntil(promise);
  } catch (_) {
    /* not dispatched by the browser */
  }
}

// Lighthouse runs for measure/lighthouse.py, signed in: run from the directory Lighthouse was installed into (the
// bench copies this file there so that `lighthouse` and its `puppeteer-core` resolve), with one JSON job on stdin
//   {chromium, args, runs, pages: [{key, url, headers}], setup_url, session, categories}
// and prints one JSON object: {lighthouse, browser, settings, pages: {key: [run, …]}}.
// Per run: a fresh browser (cold HTTP cache, nothing left from the previous run), one tab opened on the origin, the
// session put into that tab's sessionStorage (the SPA keeps it there: app/src/infra/auth.rs), then Lighthouse on the
// same tab with `disableStorageReset` so that the session survives its navigation. Lighthouse's default config:
// mobile form factor and screen, simulated throttling (Lantern).
import lighthouse from 'lighthouse';
import puppeteer from 'puppeteer-core';
import { readFileSync } from 'node:fs';

// On stdin: the job carries a bearer token, which must not show on a command line.
const job = JSON.parse(readFileSync(0, 'utf8'));
const version = JSON.parse(readFileSync(new URL('./node_modules/lighthouse/package.json', import.meta.url))).version;
const METRICS = ['first-contentful-paint', 'largest-contentful-paint', 'total-blocking-time',
  'cumulative-layout-shift', 'speed-index'];

async function once(url, headers) {
  const browser = await puppeteer.launch({ executablePath: job.chromium, headless: false, args: job.args,
    defaultViewport: null });
  try {
    const page = await browser.newPage();
    // Any document of the pages' origin will do (the bench: the worker's /healthz, no SPA, no redirect to sign in).
    await page.goto(job.setup_url, { waitUntil: 'load' });
    await page.evaluate((s) => sessionStorage.setItem('ringi.session', s), JSON.stringify(job.session));
    const result = await lighthouse(url, {
      logLevel: 'error', output: 'json', onlyCategories: job.categories, disableStorageReset: true,
      // Sent with every request of the page (Network.setExtraHTTPHeaders): the brotli variant's Accept-Encoding.
      ...(headers ? { extraHeaders: headers } : {}),
    }, undefined, page);
    const lhr = result.lhr;
    if (lhr.runtimeError) throw new Error(`${lhr.runtimeError.code}: ${lhr.runtimeError.message}`);
    const failing = [];
    for (const [cat, c] of Object.entries(lhr.categories)) {
      for (const ref of c.auditRefs) {
        const a = lhr.audits[ref.id];
        if (a.score === null || a.score >= 1 || ['notApplicable', 'manual', 'informative'].includes(a.scoreDisplayMode)) continue;
        failing.push({ id: ref.id, category: cat, title: a.title, score: a.score, weight: ref.weight,
          display: a.displayValue || '' });
      }
    }
    // What the LCP was (the approval's title, the inbox's list …): shows that the signed-in view rendered.
    const lcpDetails = lhr.audits['largest-contentful-paint-element']?.details?.items || [];
    const lcpItems = lcpDetails[0]?.items || [];
    // Where its time went (TTFB, load delay, load time, render delay), as Lighthouse splits it.
    const lcpPhases = Object.fromEntries((lcpDetails[1]?.items || []).map((p) => [p.phase, Math.round(p.timing)]));
    return {
      final_url: lhr.finalDisplayedUrl,
      // None when the element is gone from the page by the end of the run (boot.js's preview, which the app
      // replaces): Lighthouse then finds no trace element and leaves the audit out.
      lcp_element: lcpItems[0]?.node?.nodeLabel || lcpItems[0]?.node?.snippet || null,
      lcp_phases: lcpPhases,
      scores: Object.fromEntries(Object.entries(lhr.categories).map(([k, c]) => [k, c.score === null ? null : Math.round(c.score * 100)])),
      metrics: Object.fromEntries(METRICS.map((m) => [m, lhr.audits[m].numericValue])),
      failing,
      warnings: lhr.runWarnings,
      settings: { formFactor: lhr.configSettings.formFactor, throttlingMethod: lhr.configSettings.throttlingMethod,
        throttling: lhr.configSettings.throttling, screenEmulation: lhr.configSettings.screenEmulation },
      browser: lhr.environment.hostUserAgent,
    };
  } finally {
    await browser.close();
  }
}

const out = { lighthouse: version, pages: {} };
for (const { key, url, headers } of job.pages) {
  out.pages[key] = [];
  for (let i = 0; i < job.runs; i++) {
    // Lighthouse's trace is sometimes unusable on a loaded machine (NO_NAVSTART, NO_FCP …): retry that run twice.
    let run;
    for (let attempt = 1; ; attempt++) {
      try {
        run = await once(url, headers);
        break;
      } catch (e) {
        if (attempt === 3) throw e;
        process.stderr.write(`lighthouse ${key} run ${i + 1}: ${e.message}; again\n`);
      }
    }
    out.settings = run.settings;
    out.browser = run.browser;
    delete run.settings;
    delete run.browser;
    out.pages[key].push(run);
    process.stderr.write(`lighthouse ${key} run ${i + 1}: ${JSON.stringify(run.scores)}\n`);
  }
}
process.stdout.write(JSON.stringify(out));

// Puts the sign-in's module (sign-in/, the code exchange boot.js runs on /auth/callback) into a bundle:
//   node scripts/build/sign-in.mjs <dist> <the module's wasm as cargo linked it>
// Linked like the app (scripts/build/wasm-env.sh --spa: relocations kept, not stripped), so it goes the same way:
// wasm-split-cli (no split points: it writes the module without the linker's sections) → wasm-bindgen → wasm-opt
// with the parameters index.html gives Trunk's. Its files are named with a hash of them
// (`ringi-sign-in-H.js`, `ringi-sign-in-H_bg.wasm`), and index.html names them in
// <meta name="ringi-sign-in-js"/"ringi-sign-in-wasm" content="…" data-integrity="…">, which boot.js reads on the
// callback page only (public/sw.js keeps them with the rest). Compression is left to precompress.mjs.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sri } from "./minify.mjs";
import { run, wasmOpt } from "./wasm-tools.mjs";

const [dist, linked] = process.argv.slice(2);
if (!dist || !linked) throw new Error("usage: node scripts/build/sign-in.mjs <dist> <linked wasm>");

const work = mkdtempSync(join(tmpdir(), "ringi-sign-in-"));
try {
  run("wasm-split-cli", [linked, join(work, "split")]);
  const bound = join(work, "bound");
  run("wasm-bindgen", ["--target", "web", "--no-typescript", "--out-dir", bound, "--out-name", "ringi-sign-in",
    join(work, "split", "main.wasm")]);
  const optimised = join(work, "opt.wasm");
  wasmOpt(join(bound, "ringi-sign-in_bg.wasm"), optimised);
  const wasm = readFileSync(optimised);
  let glue = readFileSync(join(bound, "ringi-sign-in.js"), "utf8");
  const hash = createHash("sha256").update(wasm).update(glue).update(readFileSync(fileURLToPath(import.meta.url)))
    .digest("hex").slice(0, 16);
  const names = { js: `ringi-sign-in-${hash}.js`, wasm: `ringi-sign-in-${hash}_bg.wasm` };
  glue = glue.replaceAll("ringi-sign-in_bg.wasm", names.wasm);
  writeFileSync(join(dist, names.js), glue);
  writeFileSync(join(dist, names.wasm), wasm);

  const htmlPath = join(dist, "index.html");
  const html = readFileSync(htmlPath, "utf8");
  if (html.includes('<meta name="ringi-sign-in-js" content=')) throw new Error(`sign-in: ${htmlPath} names a sign-in module already`);
  const metas = `<meta name="ringi-sign-in-js" content="/${names.js}" data-integrity="${sri(glue)}">` +
    `<meta name="ringi-sign-in-wasm" content="/${names.wasm}" data-integrity="${sri(wasm)}">`;
  // Beside the app's (before boot.js): a short link opened signed out asks for the module as boot.js starts.
  const appMeta = /<meta name="ringi-wasm" [^>]*>/;
  if (!appMeta.test(html)) throw new Error(`sign-in: ${htmlPath} has no <meta name="ringi-wasm">`);
  writeFileSync(htmlPath, html.replace(appMeta, (m) => `${m}${metas}`));
  console.log(`sign-in: ${names.wasm} ${(wasm.length / 1024).toFixed(1)} KiB`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

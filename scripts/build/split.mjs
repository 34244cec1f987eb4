// Splits the SPA's wasm at the app's `#[wasm_split]` functions (docs/design.md §11 "Parts on demand") and puts the
// pieces in place of the one module Trunk built:
//   node scripts/build/split.mjs <dist> <the app's wasm as cargo linked it>
// Trunk builds, binds and optimises one module, and its wasm-bindgen call cannot keep the linker's exports a split
// needs; so this runs after it, on cargo's output (linked with --emit-relocs, not stripped: scripts/build/wasm-env.sh):
// wasm-split-cli (the main module, a module per split, chunks the splits share, and the JS that fetches them) →
// wasm-bindgen on the main module → wasm-opt on every module, with the parameters index.html gives Trunk's.
//
// The files are named with one hash of them all (`ringi-app-H.js`, `ringi-app-H_bg.wasm`, `ringi-split-H.js`,
// `ringi-<split>-H_bg.wasm`, `ringi-shared<n>-H_bg.wasm`): they name one another, and a new build names new ones.
// index.html gets them where it named Trunk's: the <meta> boot.js reads, the preloads with their integrity; the split
// JS a modulepreload (the app's JS imports it); every chunk a `<meta name="ringi-chunk" data-parts="…">` (boot.js
// preloads those of the page it opens, public/sw.js keeps them all). Compression is left to precompress.mjs.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { escape, sri } from "./minify.mjs";
import { run, wasmOpt } from "./wasm-tools.mjs";

const [dist, linked] = process.argv.slice(2);
if (!dist || !linked) throw new Error("usage: node scripts/build/split.mjs <dist> <linked wasm>");

const htmlPath = join(dist, "index.html");
let html = readFileSync(htmlPath, "utf8");
const named = (meta) => new RegExp(`<meta name="${meta}" content="/([^"]+)">`).exec(html)?.[1];
const trunkJs = named("ringi-js");
const trunkWasm = named("ringi-wasm");
if (!trunkJs || !trunkWasm) throw new Error(`split: ${htmlPath} names no ringi-js/ringi-wasm`);

// Replaces every occurrence, of which there must be one at least (a build whose output changed shape fails here,
// not in a browser).
function replaceAll(text, from, to, what) {
  if (!text.includes(from)) throw new Error(`split: ${what}: "${from}" not found`);
  return text.split(from).join(to);
}

const work = mkdtempSync(join(tmpdir(), "ringi-split-"));
try {
  const split = join(work, "split");
  const bound = join(work, "bound");
  run("wasm-split-cli", [linked, split]);
  run("wasm-bindgen", ["--target", "web", "--keep-lld-exports", "--no-demangle", "--no-typescript",
    "--out-dir", bound, "--out-name", "ringi-app", join(split, "main.wasm")]);
  const optimise = (path) => {
    wasmOpt(path, `${path}.opt`);
    return readFileSync(`${path}.opt`);
  };

  let glue = readFileSync(join(bound, "ringi-app.js"), "utf8");
  // The SPA's linker leaves out the exports of server_fn's stream adapters (scripts/build/wasm-link.sh), whose classes
  // wasm-bindgen still declares. Only Rust code that hands a stream to JS creates them, and a CSR app without server
  // functions has none: the glue never wraps a pointer in them (checked here).
  for (const name of ["IntoUnderlyingSource", "IntoUnderlyingSink", "IntoUnderlyingByteSource"]) {
    if (glue.includes(`${name}.__wrap`) || glue.includes(`new ${name}(`)) {
      throw new Error(`split: the app's JS creates ${name}: its exports are used`);
    }
  }
  let loader = readFileSync(join(split, "__wasm_split.js"), "utf8");
  // Which splits need each shared chunk: the generator writes them in a comment above the chunk's loader.
  const sharedBy = new Map(
    [...loader.matchAll(/\/\* ([^*]+) \*\/\s*const __chunk_(\d+) = makeLoad/g)].map((m) => [`chunk_${m[2]}.wasm`, m[1].split(/, */)]),
  );
  const chunks = readdirSync(split)
    .filter((name) => name.endsWith(".wasm") && name !== "main.wasm")
    .sort()
    .map((file) => {
      const own = /^split_(\w+)\.wasm$/.exec(file)?.[1];
      const shared = /^chunk_(\d+)\.wasm$/.exec(file)?.[1];
      if (!own && !shared) throw new Error(`split: unexpected module ${file}`);
      return { file, stem: own ? `ringi-${own.replace(/_/g, "-")}` : `ringi-shared${shared}`,
        parts: own ? [own] : sharedBy.get(file) || [], data: optimise(join(split, file)) };
    });
  const main = optimise(join(bound, "ringi-app_bg.wasm"));

  // Over what is renamed below and the renaming itself (this script), so that a name never stands for other bytes.
  const all = createHash("sha256");
  for (const data of [main, glue, loader, ...chunks.map((c) => c.data), readFileSync(fileURLToPath(import.meta.url))]) {
    all.update(data);
  }
  const hash = all.digest("hex").slice(0, 16);
  const js = `ringi-app-${hash}.js`;
  const wasm = `ringi-app-${hash}_bg.wasm`;
  const splitJs = `ringi-split-${hash}.js`;

  // The JS's imports of it, not the module name the wasm imports from (the import object's keys).
  glue = replaceAll(glue, `from "./__wasm_split.js"`, `from "./${splitJs}"`, "the app's JS");
  glue = glue.replaceAll("ringi-app_bg.wasm", wasm);
  loader = replaceAll(loader, `"./main.js"`, `"./${js}"`, "the split JS");
  for (const chunk of chunks) {
    chunk.name = `${chunk.stem}-${hash}_bg.wasm`;
    loader = replaceAll(loader, `"./${chunk.file}"`, `"./${chunk.name}"`, "the split JS");
  }

  // Trunk's module and JS (and what precompress made of them) give way to these.
  for (const old of [trunkJs, trunkWasm]) {
    for (const suffix of ["", ".br", ".gz"]) if (existsSync(join(dist, old + suffix))) unlinkSync(join(dist, old + suffix));
  }
  writeFileSync(join(dist, js), glue);
  writeFileSync(join(dist, wasm), main);
  writeFileSync(join(dist, splitJs), loader);
  for (const chunk of chunks) writeFileSync(join(dist, chunk.name), chunk.data);

  const preload = (old) =>
    new RegExp(`(<link rel="(?:modulepreload|preload)" href=")/${escape(old)}("[^>]*? integrity=")[^"]+("[^>]*>)`);
  const relink = (old, name, data, what, after = "") => {
    const link = preload(old);
    if (!link.test(html)) throw new Error(`split: no preload of ${what} (${old}) in ${htmlPath}`);
    html = html.replace(link, (_, a, b, c) => `${a}/${name}${b}${sri(data)}${c}${after}`);
  };
  relink(trunkJs, js, glue, "the app's JS",
    `<link rel="modulepreload" href="/${splitJs}" crossorigin="anonymous" integrity="${sri(loader)}">`);
  // No preload of the wasm: boot.js asks for it as it starts, where the app starts on the page. A short link opened
  // signed out leaves for the IdP, and the callback page runs the sign-in's module first: there the app's wasm would
  // only take a phone's bandwidth from what the sign-in waits for.
  const wasmPreload = preload(trunkWasm);
  if (!wasmPreload.test(html)) throw new Error(`split: no preload of the wasm (${trunkWasm}) in ${htmlPath}`);
  html = html.replace(wasmPreload, "");
  html = replaceAll(html, `content="/${trunkJs}"`, `content="/${js}"`, "ringi-js");
  const metas = chunks.map((c) => `<meta name="ringi-chunk" data-parts="${c.parts.join(" ")}" content="/${c.name}">`).join("");
  // With its integrity, which boot.js fetches it with.
  html = replaceAll(html, `content="/${trunkWasm}">`, `content="/${wasm}" data-integrity="${sri(main)}">${metas}`,
    "ringi-wasm");
  for (const old of [trunkJs, trunkWasm]) {
    if (html.includes(old)) throw new Error(`split: ${htmlPath} still names ${old}`);
  }
  writeFileSync(htmlPath, html);
  const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`split: ${wasm} ${kb(main.length)}; ${chunks.map((c) => `${c.name} ${kb(c.data.length)}`).join(", ")}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

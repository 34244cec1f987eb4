// Writes `name.br` (brotli, quality 11) and `name.gz` (gzip -9) beside every content-hashed wasm/JS/CSS file
// of the SPA build, for the worker to serve as they are (edge/src/assets.rs; which names count as hashed:
// ringi-core `assets::hashed_asset_type`). Brotli: Node's built-in zlib; gzip: the system's gzip (else Node's
// zlib). Nothing to install.
//
// Run by scripts/build/spa.sh after each bundle is built and split:
//   node scripts/build/precompress.mjs [dist]
// First it minifies the hashed JavaScript (scripts/build/minify.mjs), so that what is compressed is what is served.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";
import { minifyScripts } from "./minify.mjs";

const dist = process.argv[2] || process.env.TRUNK_STAGING_DIR || "dist";
minifyScripts(dist);
const hashed = /^.+-[0-9a-f]{8,16}(_bg\.wasm|\.js|\.css)$/;
let raw = 0, br = 0, gz = 0;
for (const name of readdirSync(dist)) {
  if (/\.(br|gz)$/.test(name)) {
    // Left over from an earlier build (Trunk keeps no stale files, but be safe).
    if (!readdirSync(dist).includes(name.replace(/\.(br|gz)$/, ""))) unlinkSync(join(dist, name));
    continue;
  }
  if (!hashed.test(name)) continue;
  const data = readFileSync(join(dist, name));
  const b = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
      [constants.BROTLI_PARAM_MODE]: name.endsWith(".wasm") ? constants.BROTLI_MODE_GENERIC : constants.BROTLI_MODE_TEXT,
    },
  });
  // GNU gzip -9 (Debian essential) packs the wasm ~1.4 % smaller than Node's bundled zlib at level 9.
  let g;
  try {
    g = execFileSync("gzip", ["-9", "-n", "-c"], { input: data, maxBuffer: 64 << 20 });
  } catch {
    g = gzipSync(data, { level: 9 });
  }
  writeFileSync(join(dist, `${name}.br`), b);
  writeFileSync(join(dist, `${name}.gz`), g);
  raw += data.length; br += b.length; gz += g.length;
  console.log(`precompress: ${name}: ${data.length} B → br ${b.length} B, gzip ${g.length} B`);
}
console.log(`precompress: total ${raw} B → br ${br} B, gzip ${gz} B`);

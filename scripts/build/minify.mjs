// Minifies the SPA's content-hashed JavaScript (the wasm-bindgen glue) and stylesheet with esbuild, in
// place, and rewrites the `integrity` attributes that name those files in index.html, so that the
// subresource-integrity checks (and the `<link rel="modulepreload">` Trunk injected) match the bytes served. The file names stay: they are
// Trunk's content hash of the unminified file, still unique to this content. Trunk's own minifier stays off
// (`data-no-minify` on boot.js; it handles neither top-level await nor the glue as well): esbuild is a pinned
// devDependency already.
//
// Called by scripts/build/precompress.mjs (the Trunk post-build hook) before it compresses, or by hand:
//   node scripts/build/minify.mjs [dist]
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { transformSync } from "esbuild";

const hashed = /^.+-[0-9a-f]{8,16}\.(js|css)$/;

export function minifyScripts(dist) {
  const htmlPath = join(dist, "index.html");
  let html = readFileSync(htmlPath, "utf8");
  for (const name of readdirSync(dist)) {
    const kind = hashed.exec(name)?.[1];
    if (!kind) continue;
    const source = readFileSync(join(dist, name), "utf8");
    const code = minified(source, kind);
    if (code.length >= source.length) continue;
    const before = sri(source);
    const after = sri(code);
    const attribute = new RegExp(`(["/]${name.replace(/[.]/g, "\\.")}"[^>]*?integrity=")${escape(before)}"`, "g");
    const uses = html.match(attribute)?.length ?? 0;
    if (html.includes(before) && uses !== countOf(html, before)) {
      throw new Error(`minify: ${name}: an integrity attribute for it is not where expected in index.html`);
    }
    html = html.replace(attribute, `$1${after}"`);
    writeFileSync(join(dist, name), code);
    console.log(`minify: ${name}: ${source.length} B → ${code.length} B (${uses} integrity attribute(s) updated)`);
  }
  writeFileSync(htmlPath, minifiedPage(html));
}

// `format`: the hashed JavaScript is the wasm-bindgen glue, a module; the page's inlined start-up script is a classic
// script, wrapped in a function so that none of its names becomes a global.
const minified = (source, kind, format = "esm") =>
  transformSync(source, {
    loader: kind,
    ...(kind === "js" ? { format } : {}),
    minify: true,
    // The browsers the SPA supports run the source as written: nothing to lower.
    target: "esnext",
    legalComments: "none",
    charset: "utf8",
  }).code;

// The page itself is on every first open's critical path (twice on a sign-in: the link's page, then the callback's),
// and its inlined boot.js is most of it: that script minified, and the page's comments left out (none is inside a
// script). The worker allows the inlined script by the hash of what it serves, so its bytes may change here.
export function minifiedPage(html) {
  const inline = /(<script>)([\s\S]*?)(<\/script>)/;
  const script = inline.exec(html);
  if (!script) throw new Error("minify: the page has no inlined start-up script");
  const page = html.replace(inline, () => `${script[1]}${minified(script[2], "js", "iife").trimEnd()}${script[3]}`);
  const [head, tail] = [page.slice(0, script.index), page.slice(script.index)];
  const end = tail.indexOf("</script>");
  const strip = (part) => part.replace(/<!--[\s\S]*?-->\s*/g, "");
  return strip(head) + tail.slice(0, end) + strip(tail.slice(end));
}

// The `integrity` value of a file's bytes (a string as UTF-8), and a file name as a literal inside a RegExp.
export const sri = (data) => `sha384-${createHash("sha384").update(data).digest("base64")}`;
export const escape = (s) => s.replace(/[+/.*?^${}()|[\]\\]/g, "\\$&");
const countOf = (haystack, needle) => haystack.split(needle).length - 1;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  minifyScripts(process.argv[2] || process.env.TRUNK_STAGING_DIR || "dist");
}

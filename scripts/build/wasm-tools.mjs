// What the wasm build steps (split.mjs, sign-in.mjs) share: running a tool, and wasm-opt with the parameters
// index.html gives Trunk's (`data-wasm-opt-params`), so every module of the SPA is optimised alike.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const optParams = /data-wasm-opt-params="([^"]*)"/.exec(readFileSync(join(root, "index.html"), "utf8"))?.[1];
if (optParams === undefined) throw new Error("wasm-tools: no data-wasm-opt-params in index.html");

export const run = (command, args) => execFileSync(command, args, { stdio: ["ignore", "ignore", "inherit"] });

// `input` optimised for size into `output`, without debug sections; `extra`: passes before the optimisation.
export function wasmOpt(input, output, extra = []) {
  run("wasm-opt", [...optParams.split(/\s+/).filter(Boolean), ...extra, "-Oz", "--strip-debug", input, "-o", output]);
}

"""docs/benchmarks.md from typed results: the summary rows (also printed on the terminal) and one template,
report.md.j2, for the whole document."""
from __future__ import annotations

import jinja2

from harness import DOC, HERE, SEED_PORT
from measure.lighthouse import INSTALL_HINT
from measure.spa import SPA_LABELS
from results import PLACEMENTS, Results

# The sections measured only on request: kept across runs without their switch, between these markers.
OPT_BEGIN = "<!-- opt-levels:begin (kept across runs without BENCH_OPT_LEVELS=1) -->"
OPT_END = "<!-- opt-levels:end -->"
TWIGGY_BEGIN = "<!-- twiggy:begin (kept across runs without BENCH_TWIGGY=1) -->"
TWIGGY_END = "<!-- twiggy:end -->"
LIGHTHOUSE_BEGIN = "<!-- lighthouse:begin (kept across runs where Lighthouse could not be installed) -->"
LIGHTHOUSE_END = "<!-- lighthouse:end -->"
OPT_PLACEHOLDER = "## 6. opt-level \"z\" vs \"s\"\n\nNot measured yet: run `BENCH_OPT_LEVELS=1 make bench`.\n"
TWIGGY_PLACEHOLDER = ("## 7. What the SPA wasm is made of (twiggy)\n\nNot measured yet: run `BENCH_TWIGGY=1 make bench` "
                      "(needs `cargo install twiggy --locked --root ~/.cache/ringi/cargo`).\n")

LIGHTHOUSE_PLACEHOLDER = ("## 9. Lighthouse (mobile preset, signed in)\n\nNot measured yet: `make bench` measures it "
                          f"when Lighthouse can be installed: {INSTALL_HINT}.\n")

ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), trim_blocks=True, lstrip_blocks=True,
                         keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
ENV.filters.update(f=format, bytes=lambda n: f"{n:,} B ({n / 1024:.1f} KiB)",
                   fjoin=lambda xs, spec, sep=", ": sep.join(format(x, spec) for x in xs))
ENV.tests["wasm_file"] = lambda name: name.endswith(".wasm")
ENV.globals["nan"] = float("nan")
TEMPLATE = ENV.get_template("report.md.j2")


def summary_rows(r: Results) -> list[tuple[str, str, str]]:
    """(measurement, value, note): the summary table of the document and of the terminal."""
    rows = []
    row = lambda what, value, note="": rows.append((what, value, note))  # noqa: E731
    if sbs := r.side_by_side:
        row("decision round trip, ringi (median / p99)", f"{sbs.ringi.median_ms:.1f} / {sbs.ringi.p99_ms:.1f} ms",
            f"n={sbs.n}")
        row("decision round trip, reference design (median / p99)",
            f"{sbs.other.median_ms:.1f} / {sbs.other.p99_ms:.1f} ms", f"n={sbs.n}")
        row("ratio ringi / reference (median, p99)", f"{sbs.ratio_median:.2f}×, {sbs.ratio_p99:.2f}×", "")
        row("workerd CPU per decision", f"{sbs.ringi_cpu_per_decision_ms['runtime']:.2f} ms",
            f"+ proxy workerd {sbs.ringi_cpu_per_decision_ms['proxy']:.2f} ms")
        row("reference server CPU per decision", f"{sbs.other_cpu_per_decision_ms['seed']:.2f} ms",
            "Python: PyJWT + boto3")
    if rt := r.request_types:
        for kind, d in rt.types.items():
            row(f"workerd CPU per request: {kind}", f"{d.cpu_ms['runtime']:.2f} ms",
                f"latency median {d.latency.median_ms:.2f} ms")
    if cs := r.cold_start:
        med = cs.median
        row("cold start: spawn `wrangler dev` → first /healthz 200", f"{med.spawn_to_healthz_s:.2f} s",
            f"median of {len(cs.runs)}")
        if med.workerd_start_to_healthz_s is not None:
            row("cold start: runtime workerd start → first /healthz 200", f"{med.workerd_start_to_healthz_s:.2f} s", "")
        row("first authenticated request after start", f"{med.first_inbox_ms:.1f} ms",
            f"warm: {med.warm_inbox_median_ms:.1f} ms")
    if sz := r.sizes:
        w, s = sz.worker["total"], sz.spa
        row("worker bundle (wasm + JS)", f"{w.raw / 1024:.1f} KiB raw, {w.gzip / 1024:.1f} KiB gzip", "")
        row("SPA transfer (all files, gzip -9)", f"{s.total.gzip / 1024:.1f} KiB",
            f"wasm {s.wasm.gzip / 1024:.1f} KiB gzip of {s.wasm.raw / 1024:.1f} KiB")
        row("SPA transfer (all files, brotli -q 11)", f"{s.total.br / 1024:.1f} KiB", f"wasm {s.wasm.br / 1024:.1f} KiB brotli")
    if tti := r.tti:
        row("SPA TTI /a/{id} signed out, 4× CPU + Slow 4G (median)", f"{tti['throttled'].median_tti_ms:.0f} ms",
            f"ends: {', '.join(tti['throttled'].ended_by)}; of {len(tti['throttled'].runs)}; unthrottled "
            f"{tti['unthrottled'].median_tti_ms:.0f} ms")
        row("SPA TTI /a/{id} signed in, 4× CPU + Slow 4G (median)", f"{tti['signed_in_throttled'].median_tti_ms:.0f} ms",
            f"ends: {', '.join(tti['signed_in_throttled'].ended_by)}; unthrottled "
            f"{tti['signed_in_unthrottled'].median_tti_ms:.0f} ms")
        if tti.get("signed_in_warm_throttled"):
            row("SPA TTI /a/{id} signed in, warm cache, 4× CPU + Slow 4G (median)",
                f"{tti['signed_in_warm_throttled'].median_tti_ms:.0f} ms",
                f"signed out warm: {tti['throttled_warm'].median_tti_ms:.0f} ms"
                + (f"; service worker blocked: {tti['signed_in_warm_throttled_no_sw'].median_tti_ms:.0f} ms"
                   if tti.get("signed_in_warm_throttled_no_sw") else ""))
    if pl := r.placements:
        for wan in pl.edge_region_ms:
            for kind in ("view", "decision approve", "quorum vote (not final)"):
                cells = [pl.modeled(kind, place, wan) for place in PLACEMENTS]
                row(f"modeled {kind}, edge↔region {wan} ms: " + " / ".join(PLACEMENT_SHORT) + " (median)",
                    " / ".join("—" if c is None else f"{c[0]:.0f}" for c in cells) + " ms", pl.round_trips.get(kind, ""))
    if ib := r.inbox:
        for size, d in ib.sizes.items():
            row(f"inbox, {int(size):,} pending (median / p99)", f"{d.latency.median_ms:.1f} / {d.latency.p99_ms:.1f} ms",
                f"workerd CPU {d.cpu_ms['runtime']:.1f} ms/request")
    if tp := r.throughput:
        row("JWT verifications/s (concurrency %d)" % r.params.concurrency, f"{tp.verify.req_per_s:.0f} /s",
            f"healthz {tp.healthz.req_per_s:.0f} /s")
        row("workerd CPU per verification (verify − healthz, median of paired rounds)", f"{tp.verify_cpu_ms:.2f} ms",
            "noisy: see §5")
    if lh := r.lighthouse:
        for page in lh.pages.values():
            row(f"Lighthouse {page.path} signed in: performance / accessibility / best practices (median)",
                " / ".join(f"{s:.0f}" for s in page.scores.values()),
                f"mobile, simulated throttling; LCP {page.metrics['largest-contentful-paint']:.0f} ms, "
                f"TBT {page.metrics['total-blocking-time']:.0f} ms; §9")
    return rows


def terminal(rows: list[tuple[str, str, str]]) -> str:
    width = max(len(x[0]) for x in rows) if rows else 10
    vwidth = max(len(x[1]) for x in rows) if rows else 10
    return "\n".join(f"{a:<{width}}  {b:<{vwidth}}  {c}" for a, b, c in rows)


def previous_section(begin: str, end: str) -> str | None:
    """A section of the current docs/benchmarks.md between its markers, kept when this run did not measure it."""
    if not DOC.exists():
        return None
    text = DOC.read_text()
    if begin in text and end in text:
        body = text.split(begin, 1)[1].split(end, 1)[0].strip("\n")
        return body if "Not measured yet" not in body else None
    return None


PLACEMENT_HEADING = "## 8. Latency model"
PLACEMENT_SHORT = ("worker+D1 near", "D1 in region", "smart", "ref warm", "ref cold")


def placement_text(doc: str) -> str:
    """The latency model's section of the document alone, for the terminal."""
    return PLACEMENT_HEADING + doc.split(PLACEMENT_HEADING, 1)[1] if PLACEMENT_HEADING in doc else ""


def report(r: Results) -> tuple[str, str]:
    """(summary table for the terminal, the markdown document)."""
    rows = summary_rows(r)
    doc = TEMPLATE.render(r=r, summary=rows, labels=SPA_LABELS, seed_port=SEED_PORT, placements=PLACEMENTS,
                          opt=(OPT_BEGIN, r.previous_opt_section or OPT_PLACEHOLDER, OPT_END),
                          twiggy=(TWIGGY_BEGIN, r.previous_twiggy_section or TWIGGY_PLACEHOLDER, TWIGGY_END),
                          lighthouse=(LIGHTHOUSE_BEGIN, r.previous_lighthouse_section or LIGHTHOUSE_PLACEHOLDER,
                                      LIGHTHOUSE_END))
    return terminal(rows), doc

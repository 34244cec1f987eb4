"""What each measurement of `make bench` returns: typed results, one dataclass per section, rendered into
docs/benchmarks.md by report.py and kept as .ringi/bench/results.json (dataclasses.asdict)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

# CPU per request or per decision, in ms, by process: "runtime" (the workerd running the worker), "proxy" (wrangler's
# proxy workerd), "node" (wrangler), or "seed" (the reference design's server).
Cpu = dict[str, float]


def pct(values, p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


@dataclass
class Latency:
    n: int
    median_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: list[float]) -> "Latency":
        ms = [v * 1000 for v in seconds]
        return cls(len(ms), statistics.median(ms), pct(ms, 99), statistics.fmean(ms), min(ms), max(ms))


@dataclass
class Params:
    """The counts of one run (`--quick`: small ones, a smoke run of the benchmark itself)."""
    inbox_sizes: list[int] = field(default_factory=lambda: [1000, 10000, 100000])  # pending approvals of one user
    decisions: int = 200
    warmup: int = 10
    storage_rounds: int = 50  # D1 vs DynamoDB: register → view → approve rounds per backend
    requests: int = 200
    rounds: int = 3
    cold_runs: int = 3
    tti_runs: int = 5
    concurrency: int = 8
    throughput_requests: int = 4000
    throughput_seconds: float = 20.0
    opt_decisions: int = 100
    placement_requests: int = 20  # per request type and injected delay
    lighthouse_runs: int = 3  # per page
    load_rate: float = 20.0  # registrations per second in the load section
    # DynamoDB's rate: moto's DynamoDB (one operation at a time, each transaction copying the tables) keeps up with
    # neither 20/s nor 5/s with 100 approvers on this machine; 5/s shows how ringi behaves on a store that stalls.
    load_rate_dynamodb: float = 5.0
    load_seconds: float = 60.0
    load_approvers: int = 100
    load_drain_seconds: float = 90.0  # after the registrations, at most this long for the approvers to finish
    soak_rate: float = 5.0
    soak_seconds: float = 600.0  # the soak's length (0: none)

    @classmethod
    def quick(cls) -> "Params":
        return cls(decisions=20, warmup=5, requests=30, rounds=2, cold_runs=1, inbox_sizes=[100, 1000], tti_runs=2,
                   throughput_requests=500, throughput_seconds=5.0, opt_decisions=20,
                   placement_requests=4, lighthouse_runs=1, storage_rounds=3, load_rate=5.0, load_rate_dynamodb=3.0, load_seconds=10.0,
                   load_approvers=20, load_drain_seconds=30.0, soak_rate=2.0, soak_seconds=30.0)


# ------------------------------------------------------------------------------------------------ sizes
@dataclass
class Size:
    raw: int
    gzip: int


@dataclass
class SpaFile(Size):
    br: int


@dataclass
class SpaSizes:
    files: dict[str, SpaFile]
    total: SpaFile
    wasm: SpaFile
    # The app's parts on demand (file (the splits that need it) → sizes): not in `total`.
    parts: dict[str, SpaFile] = field(default_factory=dict)


@dataclass
class BundleSizes:
    worker: dict[str, Size]  # index_bg.wasm, index.js, total
    spa: SpaSizes


# ------------------------------------------------------------------------------------------------ decisions
@dataclass
class SideBySide:
    """Decisions through ringi and through "the other side" (the reference design, or a second worker)."""
    n: int
    warmup: int
    executions_succeeded: int
    executions_started: int
    ringi: Latency
    other: Latency
    ringi_register: Latency
    other_register: Latency
    ringi_cpu_per_decision_ms: Cpu
    ringi_cpu_per_register_ms: Cpu
    other_cpu_per_decision_ms: Cpu | None = None

    @property
    def ratio_median(self) -> float:
        return self.ringi.median_ms / self.other.median_ms

    @property
    def ratio_p99(self) -> float:
        return self.ringi.p99_ms / self.other.p99_ms


# ------------------------------------------------------------------------------------------------ worker
@dataclass
class RequestType:
    latency: Latency
    cpu_ms_rounds: list[Cpu]

    @property
    def cpu_ms(self) -> Cpu:
        """The median over rounds, per process."""
        return {k: statistics.median(r[k] for r in self.cpu_ms_rounds) for k in self.cpu_ms_rounds[0]}


@dataclass
class RequestTypes:
    types: dict[str, RequestType]
    inbox_ids: list[str]


@dataclass
class ColdRun:
    spawn_to_healthz_s: float
    first_inbox_ms: float
    warm_inbox_median_ms: float
    warm_healthz_median_ms: float
    workerd_start_to_healthz_s: float | None = None  # when the runtime workerd was found


@dataclass
class ColdStart:
    runs: list[ColdRun]

    @property
    def median(self) -> ColdRun:
        def med(key):
            values = [getattr(r, key) for r in self.runs if getattr(r, key) is not None]
            return statistics.median(values) if values else None
        return ColdRun(**{k: med(k) for k in ColdRun.__dataclass_fields__})


@dataclass
class Endpoint:
    """One endpoint under concurrent load, over alternating rounds."""
    requests: int
    seconds: float
    req_per_s_rounds: list[float]
    cpu_ms_per_request: Cpu
    runtime_cpu_ms_rounds: list[float]
    client_cpu_ms_per_request: float

    @property
    def req_per_s(self) -> float:
        return self.requests / self.seconds


@dataclass
class Throughput:
    healthz: Endpoint
    verify: Endpoint

    @property
    def verify_cpu_ms_rounds(self) -> list[float]:
        """Paired rounds: each verify round against the healthz round just before it."""
        return [x - y for x, y in zip(self.verify.runtime_cpu_ms_rounds, self.healthz.runtime_cpu_ms_rounds)]

    @property
    def verify_cpu_ms(self) -> float:
        return statistics.median(self.verify_cpu_ms_rounds)

    @property
    def verifications_per_cpu_second(self) -> float:
        return 1000 / self.verify.cpu_ms_per_request["runtime"]


@dataclass
class InboxSize:
    load_s: float
    rows: dict[str, int]  # approvals, approval_principals
    latency: Latency
    cpu_ms: Cpu
    python_sqlite_ms: float
    python_plan: list[str]
    d1_plan: list[str] | None = None  # at the largest size only


@dataclass
class InboxScale:
    sql: str
    sizes: dict[int, InboxSize] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ SPA
@dataclass
class Step:
    """One step of a page load: medians over runs, ms from navigation start; bytes as received."""
    label: str
    start: float | None
    end: float | None
    bytes: float | None


@dataclass
class SpaRun:
    tti_ms: float
    ended_by: str
    end_ms: float
    shell_ms: float | None
    fcp_ms: float | None
    html: dict
    requests: list[dict]
    bytes_before_end: int
    serial_waves: int
    wasm_instantiate: dict | None
    resources: list[dict]
    # When boot.js showed the prefetched approval (signed in, before the wasm).
    # When the app showed the approval's title (signed in; its decision form, the end, follows).
    title_ms: float | None = None
    # When Approve could first be pressed: boot.js's decision form, or the app's.
    usable_ms: float | None = None
    # A load across documents (the new tab's IdP round trip): each document's request, ms from the click.
    documents: list[dict] = field(default_factory=list)


@dataclass
class SpaLoad:
    runs: list[SpaRun]
    steps: list[Step]

    @property
    def median_tti_ms(self) -> float:
        return statistics.median(r.tti_ms for r in self.runs)

    @property
    def min_tti_ms(self) -> float:
        return min(r.tti_ms for r in self.runs)

    @property
    def max_tti_ms(self) -> float:
        return max(r.tti_ms for r in self.runs)

    @property
    def median_readable_ms(self) -> float | None:
        """Signed in: when the approval was first readable on screen (its title, rendered by the app). None when
        signed out."""
        xs = [min(x for x in (r.title_ms, r.tti_ms) if x)
              for r in self.runs if r.ended_by == "approval rendered"]
        return statistics.median(xs) if xs else None

    @property
    def median_usable_ms(self) -> float | None:
        """Signed in: when a decision could first be made (the app's Approve). None when signed out."""
        xs = [min(r.usable_ms, r.tti_ms) if r.usable_ms else r.tti_ms
              for r in self.runs if r.ended_by == "approval rendered"]
        return statistics.median(xs) if xs else None

    @property
    def median_fcp_ms(self) -> float | None:
        fcps = [r.fcp_ms for r in self.runs if r.fcp_ms]
        return statistics.median(fcps) if fcps else None

    @property
    def ended_by(self) -> list[str]:
        return sorted({r.ended_by for r in self.runs})


# ------------------------------------------------------------------------------------------------ latency model
PLACEMENTS = ("worker + D1 near the approver", "worker near the approver, D1 in region",
              "Smart Placement (worker + D1 in region)", "reference, warm Lambda", "reference, cold Lambda")
# The reference design's answers to an approver: its decision handler (no quorum: one approver decides).
REFERENCE_DECISIONS = ("decision approve", "decision reject")


@dataclass
class Placements:
    """Request types with each remote round trip delayed by a stated RTT (measured through the real code path), and
    the hop between caller and serving side added as a constant. `measured`: injected delays → type → latency."""
    n: int
    approver_edge_ms: int
    edge_region_ms: list[int]
    in_region_ms: int
    round_trips: dict[str, str]
    measured: dict[str, dict[str, Latency]]
    reference_decision: Latency
    reference_save: Latency
    lambda_init_ms: list[float]

    @property
    def lambda_init_median_ms(self) -> float:
        return statistics.median(self.lambda_init_ms)

    def _at(self, d1: int, aws: int) -> dict[str, Latency]:
        return self.measured[f"d1={d1},aws={aws}"]

    def modeled(self, kind: str, placement: str, wan: int) -> tuple[float, float] | None:
        """(median, p99) in ms of one request type at one placement, with edge↔region RTT `wan`; None: the
        reference design has no such request. A registration's caller is the workflow, in the region: the worker that
        serves it runs near the region in either placement, and only D1's place differs."""
        region, near = self.in_region_ms, self.approver_edge_ms
        to_region = near + wan  # the approver reaching a server in the region
        if kind == "register" and placement in PLACEMENTS[:3]:
            # The worker runs near the region (its caller); D1 is near the approvers (far) or in the region.
            d = self._at(wan, wan) if placement == PLACEMENTS[0] else self._at(region, region)
            return d[kind].median_ms + region, d[kind].p99_ms + region
        if placement == PLACEMENTS[0]:
            d, hop = self._at(near, wan)[kind], near
        elif placement == PLACEMENTS[1]:
            d, hop = self._at(wan, wan)[kind], near
        elif placement == PLACEMENTS[2]:
            d, hop = self._at(region, region)[kind], to_region
        else:
            cold = self.lambda_init_median_ms if placement == PLACEMENTS[4] else 0.0
            if kind in REFERENCE_DECISIONS:
                d, hop = self.reference_decision, to_region + cold
            elif kind == "register":
                d, hop = self.reference_save, region + cold
            elif kind in ("view", "inbox"):
                # No read API in the reference design: stated, one in-region read behind the WAN hop.
                return (to_region + region + cold,) * 2
            else:
                return None
        return d.median_ms + hop, d.p99_ms + hop

    def loopback(self, kind: str) -> Latency:
        return self.measured["d1=0,aws=0"][kind]


# ------------------------------------------------------------------------------------------------ on request
@dataclass
class OptLevels:
    build_times: dict[str, dict[str, float]]  # level → worker/spa → seconds
    sizes: dict[str, BundleSizes]
    decision: SideBySide  # "ringi" = opt-level z, "other" = opt-level s
    tti: dict[str, SpaLoad]


@dataclass
class Twiggy:
    version: str
    times: dict[str, float]
    named_bytes: int
    shipped_bytes: int
    top: list[dict]
    crates: list[tuple[str, int]]
    total: int


@dataclass
class LighthousePage:
    label: str
    path: str
    redirected_to: list[str]  # where Lighthouse ended up when not on `path` (a redirect to sign in would show here)
    scores: dict[str, float]  # category → median score 0–100
    metrics: dict[str, float]  # Lighthouse audit id → median numericValue (ms; CLS unitless)
    runs: list[dict]  # each run's scores and metrics
    failing: list[dict]  # audits scored below 1 in any run: id, category, title, weight, runs (count), scores
    warnings: list[str]
    lcp_elements: list[str] = field(default_factory=list)  # the LCP element's HTML start, as Lighthouse saw it


@dataclass
class Lighthouse:
    version: str
    browser: str  # Chromium's user agent as Lighthouse saw it
    settings: dict  # form factor, throttling method and values, screen emulation (Lighthouse's defaults)
    runs: int
    seconds: float
    pages: dict[str, LighthousePage]
    setup_seconds: float = 0.0  # the install check (and install, when it was not there)


@dataclass
class Baseline:
    """The commit the first-load targets were set against, built and measured in this run (measure/baseline.py)."""
    rev: str
    subject: str  # short hash, commit date, subject
    build_times: dict[str, float]  # worker/spa → seconds (empty when an earlier run's build was reused)
    sizes: BundleSizes
    tti: dict[str, SpaLoad]  # keys of measure/spa.py's SPA_CONDITIONS: the cold loads
    lighthouse: Lighthouse | None = None


# ------------------------------------------------------------------------------------------------ the run
@dataclass
class Results:
    date: str
    machine: dict
    versions: dict
    params: Params
    command: str
    sizes: BundleSizes | None = None
    side_by_side: SideBySide | None = None
    request_types: RequestTypes | None = None
    throughput: Throughput | None = None
    tti: dict[str, SpaLoad] = field(default_factory=dict)
    cold_start: ColdStart | None = None
    inbox: InboxScale | None = None
    opt_levels: OptLevels | None = None
    placements: Placements | None = None
    twiggy: Twiggy | None = None
    lighthouse: Lighthouse | None = None
    lighthouse_missing: str | None = None  # why the Lighthouse section was not measured in a full run
    baseline: Baseline | None = None
    storage: dict | None = None  # D1 vs DynamoDB (measure/storage.py)
    load: dict | None = None  # sustained load and the soak (measure/load.py): {"runs": [LoadRun…], "soak": LoadRun}
    duration_s: float = 0.0
    loadavg_at_end: tuple = ()
    # The sections measured only on request, as the previous docs/benchmarks.md had them.
    previous_opt_section: str | None = None
    previous_twiggy_section: str | None = None
    previous_lighthouse_section: str | None = None
    previous_storage_section: str | None = None
    previous_load_section: str | None = None

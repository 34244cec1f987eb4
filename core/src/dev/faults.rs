//! The dev/bench-only fault switch (`D1_FAULTS`) that makes chosen D1 calls fail the way D1 fails.

use crate::dev::switch::DevSwitch;

/// `D1_FAULTS`: off in production; `header` honours `x-ringi-d1-fault` per request; anything else is a
/// [`FaultSpec`] applied to every request and cron run of that worker.
pub type D1Faults = DevSwitch<FaultSpec>;

impl D1Faults {
    pub fn parse(v: &str) -> Result<Self, String> {
        Self::parse_with(v, FaultSpec::parse)
    }
}

/// Which D1 calls of one request (or cron run) fail. Calls are numbered from 1 in the order the code
/// makes them; a call's retries keep its number.
///
/// `call=N` (the N-th call), `from=N` (every call from the N-th on: storage gone mid-request),
/// `what=LABEL` (calls of that store method, e.g. `claim`, `finish`), `pct=P` with `seed=S` (each call is
/// chosen with probability P %, reproducibly). A chosen call fails on every try. Modifiers: `once` (only
/// the first try of a chosen call fails, so the retry succeeds), `after` (the statement runs, then the failure is reported: a write
/// whose answer was lost). Comma-separated, e.g. `call=3,after`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultSpec {
    pub call: Option<u32>,
    pub from: Option<u32>,
    pub what: Option<String>,
    pub percent: Option<u32>,
    pub seed: Option<u64>,
    pub once: bool,
    pub after: bool,
}

/// What the fault switch does to one try of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    None,
    /// Fail without running the statement.
    Before,
    /// Run the statement, then report a failure.
    After,
}

impl FaultSpec {
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut f = Self::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let num = |v: &str| v.parse::<u32>().map_err(|_| format!("{k} needs a number, got {v:?}"));
            match k {
                "call" => f.call = Some(num(v)?),
                "from" => f.from = Some(num(v)?),
                "what" if !v.is_empty() => f.what = Some(v.to_owned()),
                "pct" => f.percent = Some(num(v)?.min(100)),
                "seed" => f.seed = Some(v.parse().map_err(|_| format!("seed needs a number, got {v:?}"))?),
                "once" => f.once = true,
                "after" => f.after = true,
                _ => return Err(format!("unknown D1 fault setting {part:?}")),
            }
        }
        if f.call.is_none() && f.from.is_none() && f.what.is_none() && f.percent.is_none() {
            return Err("a D1 fault spec needs call=, from=, what= or pct=".into());
        }
        Ok(f)
    }

    /// Decides try `attempt` (1-based) of call number `call` labelled `what`; `rand01` is the number the
    /// request's seeded generator drew for this call (the same for all its tries; used only with `pct`).
    pub fn decide(&self, call: u32, what: &str, attempt: u32, rand01: f64) -> Injection {
        let chosen = self.call == Some(call)
            || self.from.is_some_and(|n| call >= n)
            || self.what.as_deref() == Some(what)
            || self.percent.is_some_and(|p| rand01 * 100.0 < f64::from(p));
        if !chosen || (self.once && attempt > 1) {
            Injection::None
        } else if self.after {
            Injection::After
        } else {
            Injection::Before
        }
    }
}

/// A small deterministic generator for `pct` faults (xorshift64*), seeded per request.
#[derive(Debug, Clone)]
pub struct FaultRng(u64);

impl FaultRng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_unit(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The message an injected failure carries: shaped like D1's own, so it takes the same path.
pub fn injected_message(call: u32, what: &str) -> String {
    format!("D1_ERROR: Network connection lost. (injected by D1_FAULTS: call {call}, {what})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_specs() {
        assert_eq!(D1Faults::parse("").unwrap(), D1Faults::Off);
        assert_eq!(D1Faults::parse("header").unwrap(), D1Faults::Header);
        assert!(D1Faults::parse("bogus=1").is_err());
        assert!(FaultSpec::parse("once").is_err(), "a modifier alone chooses nothing");
        let f = FaultSpec::parse("call=3").unwrap();
        assert_eq!(f.decide(3, "claim", 1, 0.5), Injection::Before);
        assert_eq!(f.decide(3, "claim", 3, 0.5), Injection::Before, "every try of the chosen call");
        assert_eq!(f.decide(2, "load", 1, 0.5), Injection::None);
        let f = FaultSpec::parse("call=3,once,after").unwrap();
        assert_eq!(f.decide(3, "claim", 1, 0.5), Injection::After);
        assert_eq!(f.decide(3, "claim", 2, 0.5), Injection::None);
        let f = FaultSpec::parse("from=2").unwrap();
        assert_eq!((f.decide(1, "a", 1, 0.0), f.decide(7, "b", 1, 0.0)), (Injection::None, Injection::Before));
        let f = FaultSpec::parse("what=finish").unwrap();
        assert_eq!((f.decide(1, "finish", 1, 0.0), f.decide(1, "load", 1, 0.0)), (Injection::Before, Injection::None));
        let f = FaultSpec::parse("pct=10,seed=7").unwrap();
        let mut rng = FaultRng::new(f.seed.unwrap());
        let hits = (0..10_000).filter(|i| f.decide(*i, "x", 1, rng.next_unit()) != Injection::None).count();
        assert!((800..1200).contains(&hits), "{hits}");
        let (mut a, mut b) = (FaultRng::new(7), FaultRng::new(7));
        assert_eq!(a.next_unit(), b.next_unit(), "seeded: reproducible");
    }
}

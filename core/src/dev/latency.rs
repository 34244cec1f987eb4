//! Where a request's time goes once the worker is far from its data: the sequential remote round trips it
//! makes ([`RoundTrips`]), and the dev/bench-only switch that makes each of them cost a stated RTT
//! (`INJECT_LATENCY`, [`LatencyModel`]) so that a benchmark on one machine can model a placement.

use std::fmt;

use crate::dev::switch::DevSwitch;

/// The remote round trips of one request or cron run: D1 round trips (a batch is one; made one after the
/// other), Step Functions calls (each try, one after the other) and SES calls (one per recipient: those of
/// one mail go in parallel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundTrips {
    pub d1: u32,
    pub sfn: u32,
    pub ses: u32,
    /// DynamoDB calls (`STORAGE=dynamodb`; each try, one after the other).
    pub ddb: u32,
}

impl fmt::Display for RoundTrips {
    /// The form of the dev-only `x-ringi-round-trips` header: `d1=2;sfn=1;ses=0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "d1={};sfn={};ses={}", self.d1, self.sfn, self.ses)?;
        // Only with the DynamoDB backend: the D1 backend's header stays as it was.
        if self.ddb > 0 {
            write!(f, ";ddb={}", self.ddb)?;
        }
        Ok(())
    }
}

/// A remote dependency whose round trips are counted and may be delayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remote {
    D1,
    StepFunctions,
    Ses,
    DynamoDb,
}

/// Delays injected before each round trip, in milliseconds: D1's, and AWS's (Step Functions and SES).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delays {
    pub d1_ms: u32,
    pub aws_ms: u32,
}

/// Longest injectable delay: a model of a far region, not a way to stall a worker.
const MAX_DELAY_MS: u32 = 2_000;

impl Delays {
    /// `d1=80,aws=80` (either may be left out: 0).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut d = Self::default();
        for part in spec.split([',', ';']).map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| format!("{part:?}: expected key=ms"))?;
            let ms = value
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|ms| *ms <= MAX_DELAY_MS)
                .ok_or_else(|| format!("{part:?}: milliseconds 0-{MAX_DELAY_MS}"))?;
            match key.trim() {
                "d1" => d.d1_ms = ms,
                "aws" => d.aws_ms = ms,
                other => return Err(format!("{other:?}: expected d1 or aws")),
            }
        }
        Ok(d)
    }

    pub fn before(&self, remote: Remote) -> u32 {
        match remote {
            Remote::D1 => self.d1_ms,
            Remote::StepFunctions | Remote::Ses | Remote::DynamoDb => self.aws_ms,
        }
    }
}

/// `INJECT_LATENCY`: off in production; `header` honours `x-ringi-latency` per request; anything else is
/// the [`Delays`] of every request and cron run of that worker.
pub type LatencyModel = DevSwitch<Delays>;

impl LatencyModel {
    pub fn parse(v: &str) -> Result<Self, String> {
        Self::parse_with(v, Delays::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_parse() {
        assert_eq!(Delays::parse("d1=80,aws=150").unwrap(), Delays { d1_ms: 80, aws_ms: 150 });
        assert_eq!(Delays::parse("d1=3").unwrap(), Delays { d1_ms: 3, aws_ms: 0 });
        assert_eq!(Delays::parse("d1=3; aws=3").unwrap().before(Remote::Ses), 3);
        for bad in ["d1", "d1=x", "d1=-1", "d1=2001", "kv=3"] {
            assert!(Delays::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(LatencyModel::parse("header").unwrap(), LatencyModel::Header);
        assert_eq!(LatencyModel::parse("off").unwrap(), LatencyModel::Off);
        assert!(LatencyModel::parse("aws=10").unwrap().enabled());
    }

    #[test]
    fn round_trips_header_form() {
        assert_eq!(RoundTrips { d1: 2, sfn: 1, ses: 0, ddb: 0 }.to_string(), "d1=2;sfn=1;ses=0");
        assert_eq!(RoundTrips { d1: 0, sfn: 1, ses: 0, ddb: 3 }.to_string(), "d1=0;sfn=1;ses=0;ddb=3");
    }
}

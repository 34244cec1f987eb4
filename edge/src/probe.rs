//! Per request (or cron run): the remote round trips it makes (D1, Step Functions, SES), and — in dev/bench
//! only — the D1 faults to inject and the delay that models a far placement before each round trip.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use ringi_core::dev::faults::{FaultRng, FaultSpec, Injection};
use ringi_core::dev::latency::{Delays, Remote, RoundTrips};
use worker::Delay;

use crate::platform::random_unit;

pub struct Probe {
    d1_calls: Cell<u32>,
    d1_tries: Cell<u32>,
    sfn: Cell<u32>,
    ses: Cell<u32>,
    ddb: Cell<u32>,
    faults: Option<FaultSpec>,
    rng: RefCell<FaultRng>,
    delays: Delays,
    /// Events were written (`Some`), and the approvals they belong to where the backend names them: what is
    /// sealed into the hash chains after the response (`crate::store::seal_written`).
    written: RefCell<Option<BTreeSet<String>>>,
}

impl Probe {
    pub fn new(faults: Option<FaultSpec>, delays: Delays) -> Rc<Self> {
        thread_local! {
            static REQUESTS: Cell<u64> = const { Cell::new(0) };
        }
        // A seeded spec gives each request of the isolate its own, reproducible sequence.
        let n = REQUESTS.with(|r| {
            r.set(r.get() + 1);
            r.get()
        });
        let seed = match faults.as_ref().and_then(|f| f.seed) {
            Some(s) => s.wrapping_add(n.wrapping_mul(0x9E37_79B9)),
            None => (random_unit() * 1e15) as u64,
        };
        Rc::new(Self {
            d1_calls: Cell::new(0),
            d1_tries: Cell::new(0),
            sfn: Cell::new(0),
            ses: Cell::new(0),
            ddb: Cell::new(0),
            faults,
            rng: RefCell::new(FaultRng::new(seed)),
            delays,
            written: RefCell::new(None),
        })
    }

    /// The round trips so far; `d1` counts calls (a call's retries keep its number, as fault specs do).
    pub fn round_trips(&self) -> RoundTrips {
        RoundTrips { d1: self.d1_calls.get(), sfn: self.sfn.get(), ses: self.ses.get(), ddb: self.ddb.get() }
    }

    pub fn d1_tries(&self) -> u32 {
        self.d1_tries.get()
    }

    /// Notes that events of `approvals` (or of approvals the backend does not name) were written.
    pub fn wrote_events(&self, approvals: impl IntoIterator<Item = String>) {
        self.written.borrow_mut().get_or_insert_with(BTreeSet::new).extend(approvals);
    }

    /// What [`Self::wrote_events`] noted since the last take, if anything.
    pub fn take_written_events(&self) -> Option<Vec<String>> {
        self.written.borrow_mut().take().map(|ids| ids.into_iter().collect())
    }

    /// Numbers the next D1 call (from 1).
    pub fn start_d1_call(&self) -> u32 {
        self.d1_calls.set(self.d1_calls.get() + 1);
        self.d1_calls.get()
    }

    /// Counts one round trip to `remote` and waits the modeled delay first, if any.
    pub async fn before_round_trip(&self, remote: Remote) {
        let counter = match remote {
            Remote::D1 => &self.d1_tries,
            Remote::StepFunctions => &self.sfn,
            Remote::Ses => &self.ses,
            Remote::DynamoDb => &self.ddb,
        };
        counter.set(counter.get() + 1);
        let ms = self.delays.before(remote);
        if ms > 0 {
            Delay::from(Duration::from_millis(u64::from(ms))).await;
        }
    }

    /// The generator's number for one call (drawn once per call, so `pct` chooses calls, not tries).
    pub fn draw(&self) -> f64 {
        if self.faults.is_some() {
            self.rng.borrow_mut().next_unit()
        } else {
            0.0
        }
    }

    pub fn inject(&self, call: u32, what: &str, attempt: u32, rand01: f64) -> Injection {
        match &self.faults {
            None => Injection::None,
            Some(f) => f.decide(call, what, attempt, rand01),
        }
    }
}

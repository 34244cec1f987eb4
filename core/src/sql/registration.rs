//! The registration's rate window in SQL (`crate::domain::rate`): one counter per credential and window,
//! counted first in the registration's batch; every insert of the batch carries the rate condition, so
//! nothing is written once the credential is over its rate, and a registration that wrote nothing gives its
//! count back.

use super::{SqlArg, SqlCond};

/// Counts one registration of `credential` in the window starting at `window_start`; returns the count.
pub fn count(credential: &str, window_start: i64) -> SqlCond {
    SqlCond {
        sql: "INSERT INTO registration_rate (credential, window_start, count) VALUES (?1, ?2, 1)
             ON CONFLICT (credential, window_start) DO UPDATE SET count = count + 1 RETURNING count"
            .into(),
        args: vec![SqlArg::from(credential), SqlArg::Int(window_start)],
    }
}

/// The condition that the window's count (this registration's included) is within `per_minute`, with its
/// parameters numbered from `?first` on (they follow the statement's own).
pub fn within_rate(first: usize, credential: &str, window_start: i64, per_minute: u32) -> SqlCond {
    SqlCond {
        sql: format!(
            "(SELECT count FROM registration_rate WHERE credential = ?{first} AND window_start = ?{}) <= ?{}",
            first + 1,
            first + 2
        ),
        args: vec![SqlArg::from(credential), SqlArg::Int(window_start), SqlArg::Int(i64::from(per_minute))],
    }
}

/// A registration that wrote nothing does not count against the rate (as if it had not been made). Runs
/// right after the approval's insert, whose changed rows `changes()` reports.
pub fn uncount_if_nothing_written(credential: &str, window_start: i64, per_minute: u32) -> SqlCond {
    SqlCond {
        sql: "UPDATE registration_rate SET count = count - 1
             WHERE credential = ?1 AND window_start = ?2 AND changes() = 0 AND count <= ?3"
            .into(),
        args: vec![SqlArg::from(credential), SqlArg::Int(window_start), SqlArg::Int(i64::from(per_minute))],
    }
}

//! The caller's inbox: filters, page size and the opaque pagination cursor.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};

use crate::base::error::ApiError;

pub const PAGE_SIZE: usize = 25;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxFilter {
    /// Open approvals, soonest expiry first.
    Pending,
    /// Closed approvals (approved, rejected, expired), latest first.
    Decided,
}

impl InboxFilter {
    /// The `status` query value (what the SPA asks for).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Decided => "decided",
        }
    }

    pub fn parse(s: Option<&str>) -> Result<Self, ApiError> {
        match s {
            None => Ok(Self::Pending),
            Some(s) => [Self::Pending, Self::Decided]
                .into_iter()
                .find(|f| f.as_str() == s)
                .ok_or_else(|| ApiError::invalid("status", "must be pending or decided")),
        }
    }
}

/// Position after the last item of a page: its sort key and ID (IDs break ties).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub sort_at: i64,
    pub id: String,
}

impl Cursor {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}", self.sort_at, self.id))
    }

    pub fn decode(s: &str) -> Result<Self, ApiError> {
        let bad = || ApiError::invalid("cursor", "is not a cursor returned by this API");
        let raw = URL_SAFE_NO_PAD.decode(s).map_err(|_| bad())?;
        let text = String::from_utf8(raw).map_err(|_| bad())?;
        let (at, id) = text.split_once(':').ok_or_else(bad)?;
        crate::base::ids::ApprovalId::parse(id).map_err(|_| bad())?;
        Ok(Self { sort_at: at.parse().map_err(|_| bad())?, id: id.to_owned() })
    }
}

impl Cursor {
    /// Where a first page starts: before every item in the filter's order.
    pub fn start(filter: InboxFilter) -> Self {
        match filter {
            InboxFilter::Pending => Self { sort_at: i64::MIN / 2, id: String::new() },
            InboxFilter::Decided => Self { sort_at: i64::MAX / 2, id: "~".into() },
        }
    }
}

/// The inbox's one order, on every backend: pending by `sort_at` (expiry) soonest first, decided newest first,
/// IDs breaking ties the same way. `true` if the item (`sort_at`, `id`) comes strictly after `cursor` (the
/// last item shown), so that pages neither skip nor repeat an item.
pub fn comes_after(filter: InboxFilter, sort_at: i64, id: &str, cursor: &Cursor) -> bool {
    let (item, last) = ((sort_at, id), (cursor.sort_at, cursor.id.as_str()));
    match filter {
        InboxFilter::Pending => item > last,
        InboxFilter::Decided => item < last,
    }
}

/// One page of `items` (each with its `sort_at` and ID) in the inbox order after `cursor`, `limit` at most: how
/// a backend that reads the caller's items whole pages them (D1's SQL keeps the same order and cursor).
pub fn page<T>(filter: InboxFilter, mut items: Vec<(i64, String, T)>, cursor: Option<&Cursor>, limit: usize) -> Vec<T> {
    items.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    if filter == InboxFilter::Decided {
        items.reverse();
    }
    let start = Cursor::start(filter);
    let cursor = cursor.unwrap_or(&start);
    items
        .into_iter()
        .filter(|(at, id, _)| comes_after(filter, *at, id, cursor))
        .map(|(_, _, t)| t)
        .take(limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trip_and_garbage() {
        let c = Cursor { sort_at: 1_800_000_000_000, id: "abcdefghijklmnopqrstuv".into() };
        assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        for bad in ["", "!!", "MTIz", &URL_SAFE_NO_PAD.encode("x:abcdefghijklmnop"), &URL_SAFE_NO_PAD.encode("1:short")]
        {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pages_neither_skip_nor_repeat_in_either_order() {
        let items = |n: i64| (0..n).map(|i| (i / 3, format!("id{i:02}"), i)).collect::<Vec<_>>();
        for filter in [InboxFilter::Pending, InboxFilter::Decided] {
            let (mut seen, mut cursor): (Vec<i64>, _) = (Vec::new(), None);
            loop {
                let got = page(filter, items(10), cursor.as_ref(), 4);
                let Some(&last) = got.last() else { break };
                seen.extend(&got);
                cursor = Some(Cursor { sort_at: last / 3, id: format!("id{last:02}") });
            }
            let mut want: Vec<i64> = (0..10).collect();
            if filter == InboxFilter::Decided {
                want.reverse();
            }
            assert_eq!(seen, want, "{filter:?}");
        }
    }

    #[test]
    fn filters() {
        assert_eq!(InboxFilter::parse(None).unwrap(), InboxFilter::Pending);
        assert_eq!(InboxFilter::parse(Some("decided")).unwrap(), InboxFilter::Decided);
        assert!(InboxFilter::parse(Some("all")).is_err());
        for f in [InboxFilter::Pending, InboxFilter::Decided] {
            assert_eq!(InboxFilter::parse(Some(f.as_str())).unwrap(), f);
        }
    }
}

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

/// The inbox SQL: `?1..?k` are the caller's principal keys, then bound, cursor (`sort_at`, id) and limit.
///
/// One ordered index range per principal, each stopped after `limit` rows, merged with UNION (an approval
/// reached through two principals has the same `sort_at` on both rows, so UNION removes the duplicate).
/// The work is O(principals × limit), however many approvals the caller has pending.
pub fn inbox_sql(principals: usize, pending: bool) -> String {
    let (open, cmp, order) = if pending { (1, ">", "ASC") } else { (0, "<", "DESC") };
    let k = principals;
    let (bound, c_at, c_id, limit) = (k + 1, k + 2, k + 3, k + 4);
    let bound_cmp = if pending { ">" } else { "<=" };
    let ranges = (1..=k)
        .map(|i| {
            format!(
                "SELECT * FROM (SELECT approval_id, sort_at FROM approval_principals
                   WHERE pkey = ?{i} AND open = {open} AND sort_at {bound_cmp} ?{bound}
                     AND (sort_at {cmp} ?{c_at} OR (sort_at = ?{c_at} AND approval_id {cmp} ?{c_id}))
                   ORDER BY sort_at {order}, approval_id {order} LIMIT ?{limit})"
            )
        })
        .collect::<Vec<_>>()
        .join("\n UNION ");
    let approvals = crate::domain::vote::APPROVALS_SO_FAR_SQL;
    // '' while one of the caller's seats holds a slot, else where the caller's slot went (delegation.rs).
    let keys = (1..=k).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    let delegated = format!(
        "(SELECT MIN(COALESCE(p.delegated_to, '')) FROM approval_principals p
           WHERE p.approval_id = a.id AND p.pkey IN ({keys}))"
    );
    format!(
        "WITH mine AS ({ranges})
         SELECT a.id, a.status, a.confirmed, a.title, a.summary, a.quorum, a.approver_count, a.context_json,
                a.created_at, a.expires_at, a.decided_at, mine.sort_at, a.escalated_at,
                a.requested_by_json, a.allow_self_approval, a.decided_on_expiry,
                {approvals} AS approvals, {delegated} AS delegated_to
         FROM mine JOIN approvals a ON a.id = mine.approval_id
         ORDER BY mine.sort_at {order}, a.id {order} LIMIT ?{limit}"
    )
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
    fn filters() {
        assert_eq!(InboxFilter::parse(None).unwrap(), InboxFilter::Pending);
        assert_eq!(InboxFilter::parse(Some("decided")).unwrap(), InboxFilter::Decided);
        assert!(InboxFilter::parse(Some("all")).is_err());
        for f in [InboxFilter::Pending, InboxFilter::Decided] {
            assert_eq!(InboxFilter::parse(Some(f.as_str())).unwrap(), f);
        }
    }
}

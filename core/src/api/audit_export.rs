//! The operators' export of the event log (`GET /api/v1/audit`): the query (time range, page size, the
//! opaque cursor), the page it answers, and the CSV form of a page.
//!
//! Pages run in `(at, seq)` order along the `approval_events_at` index; the cursor is the last event's
//! position, so a page never repeats or skips an event however many arrive meanwhile.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::error::ApiError;
use crate::base::time::parse_rfc3339;
use crate::domain::audit::{Actor, Event};

/// Events a page holds unless `limit` says fewer.
pub const PAGE_DEFAULT: usize = 100;
/// The largest page (`limit`): one bounded D1 read per request.
pub const PAGE_MAX: usize = 1000;
/// The longest time range one query may span.
pub const RANGE_MAX_MS: i64 = 93 * 86_400_000;
/// The range without `from`: this long before `to`.
pub const RANGE_DEFAULT_MS: i64 = 30 * 86_400_000;

/// Position after the last event of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    pub at: i64,
    pub seq: i64,
}

impl AuditCursor {
    /// Opaque to clients: a version tag keeps the door open for another order later.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("e1:{}:{}", self.at, self.seq))
    }

    pub fn decode(s: &str) -> Result<Self, ApiError> {
        let bad = || ApiError::invalid("cursor", "is not a cursor returned by this API");
        let raw = URL_SAFE_NO_PAD.decode(s).map_err(|_| bad())?;
        let text = String::from_utf8(raw).map_err(|_| bad())?;
        let mut parts = text.split(':');
        let (Some("e1"), Some(at), Some(seq), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let num = |p: &str| p.parse::<i64>().ok().filter(|v| *v >= 0).ok_or_else(bad);
        Ok(Self { at: num(at)?, seq: num(seq)? })
    }
}

/// What the caller wants back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    /// `Accept: text/csv`.
    Csv,
}

impl ExportFormat {
    /// CSV only when the client asks for it by name; anything else (`*/*`, JSON, none) is JSON.
    pub fn from_accept(accept: Option<&str>) -> Self {
        let wants_csv = accept.is_some_and(|a| {
            a.split(',').any(|m| m.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/csv")))
        });
        if wants_csv {
            Self::Csv
        } else {
            Self::Json
        }
    }
}

/// One validated export request: events with `from <= at < to`, after `cursor`, `limit` at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    pub from: i64,
    pub to: i64,
    pub cursor: Option<AuditCursor>,
    pub limit: usize,
}

impl AuditQuery {
    /// From the query string (`param` looks a name up); `now` bounds the default range.
    pub fn parse(param: impl Fn(&str) -> Option<String>, now: i64) -> Result<Self, ApiError> {
        let time = |name: &str| param(name).filter(|v| !v.is_empty()).map(|v| parse_rfc3339(name, &v)).transpose();
        let to = time("to")?.unwrap_or(now + 1);
        let from = time("from")?.unwrap_or(to - RANGE_DEFAULT_MS);
        if from >= to {
            return Err(ApiError::invalid("to", "must be after from"));
        }
        if to - from > RANGE_MAX_MS {
            return Err(ApiError::invalid(
                "from",
                format!("the range may span {} days at most", RANGE_MAX_MS / 86_400_000),
            ));
        }
        let cursor = param("cursor").filter(|c| !c.is_empty()).map(|c| AuditCursor::decode(&c)).transpose()?;
        let limit = match param("limit") {
            None => PAGE_DEFAULT,
            Some(l) => l
                .parse::<usize>()
                .ok()
                .filter(|l| (1..=PAGE_MAX).contains(l))
                .ok_or_else(|| ApiError::invalid("limit", format!("must be 1-{PAGE_MAX}")))?,
        };
        Ok(Self { from, to, cursor, limit })
    }
}

/// `GET /api/v1/audit` (JSON): one page of events, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    pub items: Vec<Event>,
    pub next_cursor: Option<String>,
}

crate::from_json_by_serde!(AuditPage);

/// The response header that carries the next cursor of a CSV page (a CSV body has no room for it).
pub const NEXT_CURSOR_HEADER: &str = "ringi-next-cursor";

/// The CSV columns, in order: the event, then its place in its approval's hash chain (`domain::audit_chain`:
/// empty while it is unchained).
pub const CSV_HEADER: [&str; 10] =
    ["at", "approval_id", "kind", "actor_type", "actor", "actor_display", "detail", "chain_n", "prev_digest", "digest"];

/// A page as CSV (RFC 4180: CRLF line ends, a header row, quoted where needed), safe to open in a
/// spreadsheet.
pub fn to_csv(events: &[Event]) -> String {
    let mut out = csv_row(CSV_HEADER.iter().map(|h| h.to_string()));
    for e in events {
        let (actor_type, actor, display) = match &e.actor {
            Actor::System => ("system", String::new(), String::new()),
            Actor::Registrant { id } => ("registrant", id.clone(), String::new()),
            Actor::User { sub, display } => ("user", sub.clone(), display.clone()),
        };
        let detail = if e.detail.is_empty() { String::new() } else { Value::Object(e.detail.clone()).to_string() };
        let (n, prev, digest) = e
            .chain
            .as_ref()
            .map_or_else(Default::default, |l| (l.n.to_string(), l.prev_digest.clone(), l.digest.clone()));
        out.push_str(&csv_row(
            [
                e.at.clone(),
                e.approval_id.clone(),
                e.kind.as_str().to_owned(),
                actor_type.to_owned(),
                actor,
                display,
                detail,
                n,
                prev,
                digest,
            ]
            .into_iter(),
        ));
    }
    out
}

fn csv_row(cells: impl Iterator<Item = String>) -> String {
    let mut row = cells.map(|c| csv_cell(&c)).collect::<Vec<_>>().join(",");
    row.push_str("\r\n");
    row
}

/// One cell: a value a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR at the start) is
/// prefixed with `'`; a cell with a quote, comma or line break is quoted, its quotes doubled.
pub fn csv_cell(value: &str) -> String {
    let defused = match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_owned(),
    };
    if defused.contains(['"', ',', '\r', '\n']) {
        format!("\"{}\"", defused.replace('"', "\"\""))
    } else {
        defused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::audit::EventKind;
    use serde_json::json;

    fn params<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    const NOW: i64 = 1_764_590_400_000; // 2025-12-01T12:00:00Z

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let c = AuditCursor { at: NOW, seq: 42 };
        assert_eq!(AuditCursor::decode(&c.encode()), Ok(c));
        assert!(!c.encode().contains(':'), "opaque: {}", c.encode());
        for bad in [
            "",
            "!!",
            &URL_SAFE_NO_PAD.encode("e1:1"),
            &URL_SAFE_NO_PAD.encode("e2:1:2"),
            &URL_SAFE_NO_PAD.encode("e1:1:2:3"),
            &URL_SAFE_NO_PAD.encode("e1:-1:2"),
            &URL_SAFE_NO_PAD.encode("e1:x:2"),
        ] {
            let err = AuditCursor::decode(bad).unwrap_err();
            assert!(matches!(&err, ApiError::Invalid { field, .. } if field == "cursor"), "{bad}: {err:?}");
        }
    }

    #[test]
    fn queries_are_bounded_in_range_and_size() {
        let q = AuditQuery::parse(params(&[]), NOW).unwrap();
        assert_eq!((q.to - q.from, q.limit, q.cursor), (RANGE_DEFAULT_MS, PAGE_DEFAULT, None));
        let q = AuditQuery::parse(
            params(&[("from", "2025-12-01T00:00:00Z"), ("to", "2025-12-02T00:00:00Z"), ("limit", "5")]),
            NOW,
        )
        .unwrap();
        assert_eq!((q.to - q.from, q.limit), (86_400_000, 5));
        let field = |pairs: &[(&str, &str)]| match AuditQuery::parse(params(pairs), NOW) {
            Err(ApiError::Invalid { field, .. }) => field,
            other => panic!("{pairs:?}: {other:?}"),
        };
        assert_eq!(field(&[("from", "yesterday")]), "from");
        assert_eq!(field(&[("to", "2025-13-01T00:00:00Z")]), "to");
        assert_eq!(field(&[("from", "2025-12-02T00:00:00Z"), ("to", "2025-12-01T00:00:00Z")]), "to");
        assert_eq!(field(&[("from", "2025-01-01T00:00:00Z"), ("to", "2025-12-01T00:00:00Z")]), "from");
        assert_eq!(field(&[("cursor", "nope")]), "cursor");
        assert_eq!(field(&[("limit", "0")]), "limit");
        assert_eq!(field(&[("limit", "1001")]), "limit");
    }

    #[test]
    fn accept_picks_csv_only_by_name() {
        assert_eq!(ExportFormat::from_accept(Some("text/csv")), ExportFormat::Csv);
        assert_eq!(ExportFormat::from_accept(Some("application/json, Text/CSV;q=0.9")), ExportFormat::Csv);
        assert_eq!(ExportFormat::from_accept(Some("*/*")), ExportFormat::Json);
        assert_eq!(ExportFormat::from_accept(Some("text/csvx")), ExportFormat::Json);
        assert_eq!(ExportFormat::from_accept(None), ExportFormat::Json);
    }

    #[test]
    fn csv_cells_are_quoted_and_defused() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        for f in ["+1", "-1", "@SUM(A1)", "\tx"] {
            assert!(csv_cell(f).starts_with('\''), "{f:?} → {}", csv_cell(f));
        }
        assert_eq!(csv_cell("\rx"), "\"'\rx\"");
        assert_eq!(csv_cell(""), "");
    }

    #[test]
    fn csv_pages_have_a_header_and_one_crlf_row_per_event() {
        let detail = json!({"verdict": "approve", "comment": "=cmd|' /C calc'!A0"});
        let events = [
            Event {
                approval_id: "abcdefghijklmnopqrstuv".into(),
                at: "2025-12-01T12:00:00.000Z".into(),
                kind: EventKind::Decided,
                actor: Actor::User { sub: "u-1".into(), display: "=evil, \"x\"".into() },
                detail: detail.as_object().unwrap().clone(),
                chain: None,
            },
            Event {
                approval_id: "abcdefghijklmnopqrstuv".into(),
                at: "2025-12-01T12:00:01.000Z".into(),
                kind: EventKind::Expired,
                actor: Actor::System,
                detail: Default::default(),
                chain: Some(crate::domain::audit_chain::Link { n: 2, prev_digest: "ab".into(), digest: "cd".into() }),
            },
        ];
        let csv = to_csv(&events);
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(lines.len(), 4, "{csv:?}");
        assert_eq!(lines[0], "at,approval_id,kind,actor_type,actor,actor_display,detail,chain_n,prev_digest,digest");
        assert!(lines[1]
            .starts_with("2025-12-01T12:00:00.000Z,abcdefghijklmnopqrstuv,decided,user,u-1,\"'=evil, \"\"x\"\"\","));
        assert!(
            lines[1].ends_with("\"{\"\"comment\"\":\"\"=cmd|' /C calc'!A0\"\",\"\"verdict\"\":\"\"approve\"\"}\",,,")
        );
        assert_eq!(lines[2], "2025-12-01T12:00:01.000Z,abcdefghijklmnopqrstuv,expired,system,,,,2,ab,cd");
        assert_eq!(lines[3], "");
    }
}

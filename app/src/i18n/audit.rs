//! The event log's strings (the approval page's timeline, the operators' audit page), in English and
//! Japanese. Every `EventKind` has a label; an event's `detail` is shown generically (known keys and values
//! translated, anything else as sent), so that new kinds of detail need no change here.

use ringi_core::domain::audit::{Actor, EventKind};
use serde_json::Value;

// The full bundle's pages read the rest (`admin` feature); both bundles carry every text.
#[cfg_attr(not(feature = "admin"), allow(dead_code))]
pub struct AuditTexts {
    pub timeline_heading: &'static str,
    pub timeline_truncated: &'static str,
    /// Who an event of ringi itself is by.
    pub system: &'static str,
    /// Prefix of a registering machine credential.
    pub registrant: &'static str,
    pub kinds: [&'static str; 15],
    /// Labels of the detail keys this build knows, as `(key, label)`.
    pub keys: &'static [(&'static str, &'static str)],
    /// Values this build translates, as `(value, label)` (verdicts, reasons, error classes).
    pub values: &'static [(&'static str, &'static str)],
    pub yes: &'static str,
    pub no: &'static str,
    // the audit page
    pub nav: &'static str,
    pub page_title: &'static str,
    pub intro: &'static str,
    pub from: &'static str,
    pub to: &'static str,
    pub show: &'static str,
    pub download_csv: &'static str,
    pub downloading: &'static str,
    pub downloaded: &'static str,
    pub empty: &'static str,
    pub col_approval: &'static str,
    pub forbidden_title: &'static str,
    pub forbidden_body: &'static str,
    pub range_invalid: &'static str,
    pub shown: fn(usize, bool) -> String,
}

impl AuditTexts {
    pub fn kind(&self, kind: EventKind) -> &'static str {
        let i = EventKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.kinds[i]
    }

    /// Who an event is by, as people read it.
    pub fn actor(&self, actor: &Actor) -> String {
        match actor {
            Actor::System => self.system.to_owned(),
            Actor::Registrant { id } => format!("{} {id}", self.registrant),
            Actor::User { display, .. } => display.clone(),
        }
    }

    fn key(&self, key: &str) -> String {
        self.keys.iter().find(|(k, _)| *k == key).map_or_else(|| key.to_owned(), |(_, l)| (*l).to_owned())
    }

    fn value(&self, v: &Value) -> String {
        match v {
            Value::String(s) => {
                self.values.iter().find(|(k, _)| k == s).map_or_else(|| s.clone(), |(_, l)| (*l).to_owned())
            }
            Value::Bool(b) => (if *b { self.yes } else { self.no }).to_owned(),
            Value::Null => "—".to_owned(),
            Value::Number(n) => n.to_string(),
            // A principal (`{"email": …}`) or a list of them: their values.
            Value::Object(m) => m.values().map(|v| self.value(v)).collect::<Vec<_>>().join(", "),
            Value::Array(a) => a.iter().map(|v| self.value(v)).collect::<Vec<_>>().join(", "),
        }
    }

    /// An event's detail as `label: value` pairs, in the detail's order.
    pub fn detail(&self, detail: &serde_json::Map<String, Value>) -> Vec<(String, String)> {
        detail.iter().map(|(k, v)| (self.key(k), self.value(v))).collect()
    }
}

pub const EN: AuditTexts = AuditTexts {
    timeline_heading: "Activity",
    timeline_truncated: "Only the first events are shown here; operators can export the full log.",
    system: "ringi",
    registrant: "Workflow",
    kinds: [
        "Requested",
        "Mailed",
        "Reminder mailed",
        "Opened",
        "Voted",
        "Decided",
        "Workflow not reached",
        "Delegated",
        "Approvers changed",
        "Routed to a stand-in",
        "Escalated",
        "Expired",
        "Purged",
        "Posted to chat",
        "Sent to a device",
    ],
    keys: &[
        ("verdict", "Decision"),
        ("status", "Status"),
        ("confirmed", "Confirmed by the workflow"),
        ("error", "Error"),
        ("code", "Code"),
        ("maybeDelivered", "May have arrived"),
        ("recipients", "Recipients"),
        ("accepted", "Accepted"),
        ("failed", "Failed"),
        ("mail", "Mail"),
        ("reason", "Reason"),
        ("approvers", "Approvers"),
        ("quorum", "Quorum"),
        ("notified", "Notified"),
        ("device", "Device"),
        ("dropped", "Subscription removed"),
        ("to", "To"),
        ("from", "From"),
        ("added", "Added"),
        ("removed", "Removed"),
        ("comment", "Comment"),
        ("channel", "Channel"),
        ("via", "Via"),
        ("delivered", "Delivered"),
        ("channels", "Chat channels"),
    ],
    values: &[
        ("approve", "Approve"),
        ("reject", "Reject"),
        ("approved", "Approved"),
        ("rejected", "Rejected"),
        ("expired", "Expired"),
        ("decided_unconfirmed", "Decided, not confirmed"),
        ("deadline", "Deadline passed"),
        ("task_closed", "The workflow's task was closed"),
        ("unavailable", "Step Functions unavailable"),
        ("refused", "Refused by Step Functions"),
        ("request", "Request"),
        ("reminder", "Reminder"),
        ("any", "Any one"),
        ("all", "All"),
        ("slack", "Slack"),
        ("teams", "Microsoft Teams"),
        ("webhook", "Webhook"),
    ],
    yes: "yes",
    no: "no",
    nav: "Audit log",
    page_title: "Audit log",
    intro: "Every recorded event of every approval, oldest first. Times are shown in your time zone.",
    from: "From",
    to: "To",
    show: "Show",
    download_csv: "Download CSV",
    downloading: "Preparing the download…",
    downloaded: "The CSV was downloaded.",
    empty: "No events in this range.",
    col_approval: "Approval",
    forbidden_title: "Operators only",
    forbidden_body: "The audit log is shown to members of the operators' group only.",
    range_invalid: "Choose a range of at most 93 days, with the start before the end.",
    shown: |n, more| if more { format!("{n} events shown, more available") } else { format!("{n} events") },
};

pub const JA: AuditTexts = AuditTexts {
    timeline_heading: "アクティビティ",
    timeline_truncated: "ここには最初のイベントのみ表示しています。全件は運用者がエクスポートできます。",
    system: "ringi",
    registrant: "ワークフロー",
    kinds: [
        "申請",
        "メール送信",
        "リマインダー送信",
        "閲覧",
        "投票",
        "決定",
        "ワークフローに未到達",
        "委任",
        "承認者の変更",
        "代理者へ回付",
        "エスカレーション",
        "期限切れ",
        "削除",
        "チャットに通知",
        "端末に通知",
    ],
    keys: &[
        ("verdict", "判断"),
        ("status", "状態"),
        ("confirmed", "ワークフローが確認"),
        ("error", "エラー"),
        ("code", "コード"),
        ("maybeDelivered", "到達した可能性"),
        ("recipients", "宛先数"),
        ("accepted", "受理"),
        ("failed", "失敗"),
        ("mail", "メール"),
        ("reason", "理由"),
        ("approvers", "承認者数"),
        ("quorum", "必要承認数"),
        ("notified", "通知先数"),
        ("device", "端末"),
        ("dropped", "通知登録を削除"),
        ("to", "宛先"),
        ("from", "元"),
        ("added", "追加"),
        ("removed", "削除"),
        ("comment", "コメント"),
        ("channel", "チャンネル"),
        ("via", "送信方法"),
        ("delivered", "配信済み"),
        ("channels", "チャットチャンネル数"),
    ],
    values: &[
        ("approve", "承認"),
        ("reject", "却下"),
        ("approved", "承認済み"),
        ("rejected", "却下済み"),
        ("expired", "期限切れ"),
        ("decided_unconfirmed", "決定（未確認）"),
        ("deadline", "期限超過"),
        ("task_closed", "ワークフローのタスクが終了済み"),
        ("unavailable", "Step Functions に接続できません"),
        ("refused", "Step Functions が拒否"),
        ("request", "依頼"),
        ("reminder", "リマインダー"),
        ("any", "いずれか1名"),
        ("all", "全員"),
        ("slack", "Slack"),
        ("teams", "Microsoft Teams"),
        ("webhook", "Webhook"),
    ],
    yes: "はい",
    no: "いいえ",
    nav: "監査ログ",
    page_title: "監査ログ",
    intro: "すべての承認のすべての記録イベントを古い順に表示します。時刻はお使いのタイムゾーンで表示されます。",
    from: "開始日",
    to: "終了日",
    show: "表示",
    download_csv: "CSV をダウンロード",
    downloading: "ダウンロードを準備しています…",
    downloaded: "CSV をダウンロードしました。",
    empty: "この期間のイベントはありません。",
    col_approval: "承認",
    forbidden_title: "運用者専用",
    forbidden_body: "監査ログは運用者グループのメンバーにのみ表示されます。",
    range_invalid: "開始日を終了日より前にし、期間は93日以内にしてください。",
    shown: |n, more| if more { format!("{n} 件表示（続きあり）") } else { format!("{n} 件") },
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_has_a_label_in_both_languages() {
        for t in [&EN, &JA] {
            let labels: std::collections::HashSet<&str> = EventKind::ALL.iter().map(|k| t.kind(*k)).collect();
            assert_eq!(labels.len(), EventKind::ALL.len(), "one distinct label per kind");
        }
        assert_eq!(EN.kind(EventKind::Viewed), "Opened");
        assert_eq!(JA.kind(EventKind::Purged), "削除");
    }

    #[test]
    fn details_read_generically() {
        let d = json!({"verdict": "approve", "confirmed": false, "to": {"email": "b@example.com"}, "new": 3});
        let rows = EN.detail(d.as_object().unwrap());
        assert!(rows.contains(&("Decision".into(), "Approve".into())));
        assert!(rows.contains(&("Confirmed by the workflow".into(), "no".into())));
        assert!(rows.contains(&("To".into(), "b@example.com".into())));
        assert!(rows.contains(&("new".into(), "3".into())), "an unknown key as sent: {rows:?}");
        assert_eq!(JA.actor(&Actor::Registrant { id: "api-key:ab".into() }), "ワークフロー api-key:ab");
    }
}

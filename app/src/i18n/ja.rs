//! Japanese UI strings.

use super::texts::{num, Texts};

pub(super) const JA: Texts = Texts {
    skip_to_content: "本文へスキップ",
    home_label: "（受信箱）",
    loading: "読み込み中…",
    config_error_title: "ringi を起動できませんでした",
    config_error_body: "アプリの設定を読み込めませんでした。接続を確認して、もう一度お試しください。",
    retry: "再試行",
    retrying: "再試行中…",
    not_found_title: "ページが見つかりません",
    not_found_body: "このアドレスには何もありません。承認リンクは /a/ に ID が続く形式です。",
    back_to_inbox: "受信箱に戻る",
    version_label: "バージョン",
    other_language: "English",
    switch_language: "表示言語:",
    sign_in: "サインイン",
    sign_out: "サインアウト",
    signed_in_as: "サインイン中",
    redirecting: "サインイン画面に移動しています…",
    signing_in: "サインインしています…",
    sign_in_failed_title: "サインインを完了できませんでした",
    sign_in_failed_body: "サインインを完了できませんでした。サインイン画面を別のタブで開いた場合や、時間がかかりすぎた場合に起こります。もう一度サインインしてください。",
    sign_in_refused_body: "サインインはできましたが、ringi がそのサインインを受け付けませんでした。もう一度お試しください。繰り返す場合は管理者に連絡してください。",
    welcome_title: "どこからでも承認",
    welcome_body: "AWS のワークフローから届いた承認依頼を確認して決定できます。サインインすると、あなた宛ての依頼が表示されます。",
    signed_out_notice: "サインアウトしました。",
    inbox_title: "受信箱",
    inbox_tabs_label: "表示する依頼",
    tab_pending: "未決定",
    tab_decided: "決定済み",
    refresh: "更新",
    refreshing: "更新中…",
    load_more: "さらに表示",
    loading_more: "読み込み中…",
    empty_pending_title: "対応待ちの依頼はありません",
    empty_pending_body: "ワークフローがあなたの承認を求めると、ここに表示され、リンク付きのメールが届きます。",
    empty_decided_title: "決定済みの依頼はまだありません",
    empty_decided_body: "承認・却下した依頼や期限切れの依頼がここに表示されます。",
    inbox_error_title: "受信箱を読み込めませんでした",
    count_pending: |n, more| match (n, more) {
        (0, _) => "未決定の依頼はありません".into(),
        (n, false) => format!("未決定の依頼 {n} 件"),
        (n, true) => format!("未決定の依頼 {n} 件を表示中（続きがあります）"),
    },
    count_decided: |n, more| match (n, more) {
        (0, _) => "決定済みの依頼はありません".into(),
        (n, false) => format!("決定済みの依頼 {n} 件"),
        (n, true) => format!("決定済みの依頼 {n} 件を表示中（続きがあります）"),
    },
    expires: |rel| format!("期限: {rel}"),
    expired_when: |rel| format!("期限切れ: {rel}"),
    decided_when: |rel| format!("決定: {rel}"),
    requested_by: "依頼者",
    registered_by: "登録元",
    execution: "実行",
    step: "ステップ",
    requester: "申請者",
    self_approval_notice: "この依頼はあなたが申請したものなので、あなた自身は承認も却下もできません（職務分掌）。他の承認者が判断します。",
    self_approval_mark: "自分の申請：他の承認者が判断します",
    on_expiry_notice: |approve| {
        if approve {
            "期限までに誰も判断しない場合、ringi が自動的に承認します。"
        } else {
            "期限までに誰も判断しない場合、ringi が自動的に却下します。"
        }
    },
    auto_decided_notice: |approved| {
        if approved {
            "期限までに誰も判断しなかったため、登録時の指定どおり ringi が自動的に承認しました。"
        } else {
            "期限までに誰も判断しなかったため、登録時の指定どおり ringi が自動的に却下しました。"
        }
    },
    auto_decided_mark: "期限切れで自動決定",
    progress: |k, n| format!("承認 {k} / {n}"),
    status_pending: "未決定",
    status_approved: "承認済み",
    status_rejected: "却下",
    status_expired: "期限切れ",
    status_unconfirmed: |approve| if approve { "承認（未確認）" } else { "却下（未確認）" },
    unconfirmed_notice: |approve, by| {
        format!(
            "{by} さんの決定（{}）はワークフローに送信されましたが、タスクが終了する前に Step Functions \
             からの確認がありませんでした。ワークフローはおそらくこの決定で再開しています。確実に知るには実行履歴を確認してください。\
             この依頼はもう決定できません。",
            if approve { "承認" } else { "却下" }
        )
    },
    result_unconfirmed: |approve| {
        format!(
            "あなたの決定（{}）は送信されましたが、タスクが終了する前に Step Functions からの確認がありませんでした。\
             ワークフローはおそらくこの決定で再開しています。確実に知るには実行履歴を確認してください。",
            if approve { "承認" } else { "却下" }
        )
    },
    approval_title: "承認依頼",
    created_label: "依頼日時",
    expires_label: "期限",
    decided_label: "決定日時",
    approvals_label: "承認数",
    summary_heading: "概要",
    details_heading: "詳細",
    items: |n| format!("{n} 項目"),
    empty_value: "（空）",
    form_heading: "あなたの判断",
    required: "必須",
    choose: "選択してください…",
    comment_label: "コメント",
    comment_help: "任意。ワークフローに渡され、履歴に残ります。",
    max_chars: |n| format!("{n} 文字以内。"),
    range: |min, max| match (min, max) {
        (Some(a), Some(b)) => format!("{} 以上 {} 以下。", num(a), num(b)),
        (Some(a), None) => format!("{} 以上。", num(a)),
        (None, Some(b)) => format!("{} 以下。", num(b)),
        (None, None) => String::new(),
    },
    approve: "承認する",
    reject: "却下する",
    decide_hint: "確認画面が表示されます。確定するまで何も決定されません。",
    confirm_approve_title: "この依頼を承認しますか？",
    confirm_reject_title: "この依頼を却下しますか？",
    confirm_approve_body: "あなたの承認でワークフローが再開されます。この操作は取り消せません。",
    confirm_reject_body: "却下されたことがワークフローに通知されます。この操作は取り消せません。",
    confirm_approve: "承認を確定",
    confirm_reject: "却下を確定",
    cancel: "キャンセル",
    sending: "送信中…",
    result_approved: "承認しました。ワークフローが再開されます。",
    result_rejected: "却下しました。ワークフローに通知されました。",
    result_recorded: |k, n| {
        format!("あなたの承認を記録しました（承認 {k} / {n}）。必要な人数が承認するまで、この依頼は未決定のままです。")
    },
    expired_notice: |when| {
        format!("この依頼は期限切れです（{when}）。承認・却下はできません。ワークフローはタイムアウトとして処理しました。")
    },
    decided_notice_approved: "この依頼は承認されました。",
    decided_notice_rejected: "この依頼は却下されました。",
    you_approved: |when| format!("あなたはこの依頼を承認しました（{when}）。"),
    you_rejected: |when| format!("あなたはこの依頼を却下しました（{when}）。"),
    waiting_for_others: |k, n| format!("他の承認者を待っています（現在 承認 {k} / {n}）。"),
    audit_heading: "履歴",
    audit_empty: "まだ決定の記録はありません。",
    audit_approved: "承認",
    audit_rejected: "却下",
    feedback_label: "回答",
    draft_restored: "再度サインインし、入力内容を復元しました。内容を確認して、もう一度選んでください。",
    step_up_notice: "この申請の決裁には直近のサインインが必要です。前回のサインインから時間が経っている場合は、\
                     先にもう一度サインインしていただきます。入力内容は保持されます。",
    yes: "はい",
    no: "いいえ",
    err_already_decided: "この依頼は他の人がすでに決定しました。現在の状態を下に表示しています。",
    err_expired: "決定が届く前に、この依頼は期限切れになりました。ワークフローには何も送られていません。",
    err_in_progress: "この依頼への別の決定を処理中です。少し待ってから確認してください。",
    err_already_voted: "あなたはこの依頼にすでに別の決定を記録しています。",
    err_already_satisfied: "あなたが該当する承認者の枠はすでに承認済みです。他の承認者の判断が必要です。",
    err_conflict: "この依頼の状態が変わりました。現在の状態を下に表示しています。",
    err_not_found_title: "依頼が見つかりません",
    err_not_found_body: "この承認依頼は存在しないか、あなた宛てではありません。正しいアカウントでサインインしているか確認してください。",
    err_unavailable: "ringi に接続できないか、そのストレージまたはワークフローのサービスが利用できません。何も決定されていません。入力内容はそのままです。もう一度お試しください。",
    err_load_failed: "依頼を読み込めませんでした。接続を確認して、もう一度お試しください。",
    err_fix_fields: "印の付いた項目を修正してください。",
    err_server: "サーバーで問題が発生しました。何も決定されていません。しばらくしてから再度お試しいただくか、管理者に連絡してください。",
    field_required: "この項目は必須です。",
    field_too_long: |n| format!("{n} 文字以内で入力してください。"),
    field_not_option: "選択肢から選んでください。",
    field_not_number: "数値を入力してください。",
    field_out_of_range: |min, max| match (min, max) {
        (Some(a), Some(b)) => format!("{} 以上 {} 以下の数値を入力してください。", num(a), num(b)),
        (Some(a), None) => format!("{} 以上の数値を入力してください。", num(a)),
        (None, Some(b)) => format!("{} 以下の数値を入力してください。", num(b)),
        (None, None) => "数値を入力してください。".into(),
    },
    field_invalid: "この値を確認してください。",
    server_refused: |_| "サーバーがこの値を受け付けませんでした。内容を確認してください。".into(),
    audit: &super::audit::JA,
    schedule_heading: "リマインダーとエスカレーション",
    next_reminder_label: "次のリマインダー",
    no_more_reminders: "予定されたリマインダーはありません",
    reminders_label: "リマインダー",
    reminder_sent: |when| format!("{when}に送信済み"),
    reminder_skipped: "送信なし（未判断の承認者がいません）",
    reminder_due: "予定",
    escalation_label: "エスカレーション",
    escalation_planned: |when, to| format!("{when}に{to}へ"),
    escalated_notice: |when, to| format!("{when}にエスカレーションされました。{to}もこの依頼を判断できます。"),
    escalation_note_label: "メモ",
    escalated_badge: "エスカレーション済み",
    group_principal: |g| format!("グループ {g}"),
    delegation: &super::delegation::JA,
};

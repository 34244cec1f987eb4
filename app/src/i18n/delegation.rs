//! Strings of delegation, out-of-office and the settings page, in English and Japanese (one struct, so that
//! a missing translation is a compile error).

use ringi_core::base::error::ErrorCode;

// The full bundle's pages read the rest (`admin` feature); both bundles carry every text.
#[cfg_attr(not(feature = "admin"), allow(dead_code))]
pub struct DelegationTexts {
    pub delegate: &'static str,
    pub dialog_title: &'static str,
    pub dialog_body: &'static str,
    pub to_kind_label: &'static str,
    pub kind_email: &'static str,
    pub kind_sub: &'static str,
    pub kind_group: &'static str,
    pub to_label: &'static str,
    pub to_help: &'static str,
    pub note_label: &'static str,
    pub note_help: &'static str,
    pub confirm: &'static str,
    pub to_required: &'static str,
    /// "You delegated this approval to {who}."
    pub delegated_notice: fn(&str) -> String,
    /// "You decide this for {who}, who delegated it to you."
    pub on_behalf_notice: fn(&str) -> String,
    /// The hand-over history: (from, to, note?).
    pub chain_heading: &'static str,
    pub chain_item: fn(&str, &str) -> String,
    pub routed_item: fn(&str, &str) -> String,
    /// Inbox badge: "Delegated to {who}".
    pub inbox_delegated: fn(&str) -> String,
    /// "You are out of office until {when}. Delegate this approval?"
    pub ooo_hint: fn(&str) -> String,
    /// The hint's button, which fills in the stand-in: "Delegate to {who}…" (beside the plain "Delegate…").
    pub ooo_delegate_to: fn(&str) -> String,
    pub done: fn(&str) -> String,
    // errors by code
    pub err_delegated: &'static str,
    pub err_loop: &'static str,
    pub err_too_deep: &'static str,
    pub err_is_approver: &'static str,
    pub err_is_requester: &'static str,
    /// `self_approval`: the caller asked for it themselves.
    pub err_self_approval: &'static str,
    /// `group_seat`: the caller's only seat is a group's, which one member cannot hand on.
    pub err_group_seat: &'static str,
    /// `not_supported_by_backend`: this installation keeps approvals in DynamoDB, which has no delegation.
    pub err_not_supported: &'static str,
    pub err_other: &'static str,
    // settings page
    pub settings_link: &'static str,
    pub settings_title: &'static str,
    pub ooo_heading: &'static str,
    pub ooo_intro: &'static str,
    pub ooo_delegate_label: &'static str,
    pub ooo_from_label: &'static str,
    pub ooo_until_label: &'static str,
    pub ooo_note_label: &'static str,
    pub ooo_save: &'static str,
    pub ooo_clear: &'static str,
    pub ooo_saved: &'static str,
    pub ooo_cleared: &'static str,
    pub ooo_none: &'static str,
    /// "New approvals go to {who} until {when}." (active?)
    pub ooo_current: fn(&str, &str, bool) -> String,
    pub ooo_until_required: &'static str,
}

impl DelegationTexts {
    /// Why a delegation was refused, by its code.
    pub fn refusal(&self, code: Option<ErrorCode>) -> &'static str {
        match code {
            Some(ErrorCode::Delegated) => self.err_delegated,
            Some(ErrorCode::DelegationLoop) => self.err_loop,
            Some(ErrorCode::DelegationTooDeep) => self.err_too_deep,
            Some(ErrorCode::DelegateIsApprover) => self.err_is_approver,
            Some(ErrorCode::DelegateIsRequester) => self.err_is_requester,
            Some(ErrorCode::SelfApproval) => self.err_self_approval,
            Some(ErrorCode::GroupSeat) => self.err_group_seat,
            Some(ErrorCode::NotSupportedByBackend) => self.err_not_supported,
            _ => self.err_other,
        }
    }
}

pub(super) const EN: DelegationTexts = DelegationTexts {
    delegate: "Delegate…",
    dialog_title: "Delegate this approval",
    dialog_body: "The person you choose decides in your place; you can no longer decide it yourself.",
    to_kind_label: "Delegate to",
    kind_email: "Email",
    kind_sub: "User ID",
    kind_group: "Group",
    to_label: "Who",
    to_help: "An email address, a user ID (sub) or a group name.",
    note_label: "Note for the delegate",
    note_help: "Optional. Mailed to them and kept in the history. At most 1000 characters.",
    confirm: "Delegate",
    to_required: "Say who should decide.",
    delegated_notice: |who| format!("You delegated this approval to {who}. They decide it now."),
    on_behalf_notice: |who| format!("You decide this approval on behalf of {who}, who delegated it to you."),
    chain_heading: "Delegations",
    chain_item: |from, to| format!("{from} → {to}"),
    routed_item: |from, to| format!("{from} → {to} (out of office)"),
    inbox_delegated: |who| format!("Delegated to {who}"),
    ooo_hint: |when| format!("You are out of office until {when}. Delegate this approval?"),
    ooo_delegate_to: |who| format!("Delegate to {who}…"),
    done: |who| format!("Delegated to {who}."),
    err_delegated: "You already delegated this approval.",
    err_loop: "That person already had this approval in its chain of delegations (or it is you).",
    err_too_deep: "This approval was delegated as often as allowed (3 times). Decide it, or ask an operator.",
    err_is_approver: "That person is already an approver of this request: one person counts once.",
    err_is_requester: "The requester of this approval cannot decide it.",
    err_self_approval: "You requested this approval: you cannot hand it to someone else either.",
    err_group_seat: "This approval is assigned to a group you belong to, not to you alone. Ask an operator to reassign it.",
    err_not_supported: "Delegation is not available here: this ringi keeps approvals in DynamoDB.",
    err_other: "The approval could not be delegated.",
    settings_link: "Settings",
    settings_title: "Settings",
    ooo_heading: "Out of office",
    ooo_intro: "While you are away, new approvals naming you are sent to someone else. Approvals you already have stay with you; their pages offer to delegate them.",
    ooo_delegate_label: "Send my approvals to (email)",
    ooo_from_label: "From",
    ooo_until_label: "Until",
    ooo_note_label: "Note",
    ooo_save: "Save",
    ooo_clear: "I am back",
    ooo_saved: "Saved.",
    ooo_cleared: "Out of office is off.",
    ooo_none: "You are not out of office.",
    ooo_current: |who, when, active| {
        if active {
            format!("New approvals go to {who} until {when}.")
        } else {
            format!("From the start date, new approvals go to {who} until {when}.")
        }
    },
    ooo_until_required: "Choose the last day.",
};

pub(super) const JA: DelegationTexts = DelegationTexts {
    delegate: "委任…",
    dialog_title: "この承認を委任",
    dialog_body: "選んだ人があなたの代わりに判断します。あなた自身はこの依頼を判断できなくなります。",
    to_kind_label: "委任先の種類",
    kind_email: "メール",
    kind_sub: "ユーザー ID",
    kind_group: "グループ",
    to_label: "委任先",
    to_help: "メールアドレス、ユーザー ID（sub）またはグループ名。",
    note_label: "委任先へのメモ",
    note_help: "任意。委任先にメールで届き、履歴に残ります。1000 文字まで。",
    confirm: "委任する",
    to_required: "委任先を入力してください。",
    delegated_notice: |who| format!("この承認を {who} さんに委任しました。判断は委任先が行います。"),
    on_behalf_notice: |who| format!("{who} さんから委任され、代わりに判断します。"),
    chain_heading: "委任",
    chain_item: |from, to| format!("{from} → {to}"),
    routed_item: |from, to| format!("{from} → {to}（不在）"),
    inbox_delegated: |who| format!("{who} さんに委任済み"),
    ooo_hint: |when| format!("{when} まで不在に設定されています。この承認を委任しますか？"),
    ooo_delegate_to: |who| format!("{who} さんに委任…"),
    done: |who| format!("{who} さんに委任しました。"),
    err_delegated: "この承認はすでに委任しています。",
    err_loop: "その人はすでにこの承認の委任の流れに含まれています（またはあなた自身です）。",
    err_too_deep: "この承認は上限（3 回）まで委任されています。判断するか、運用担当者に依頼してください。",
    err_is_approver: "その人はすでにこの依頼の承認者です（1 人は 1 票）。",
    err_is_requester: "依頼者本人はこの承認を判断できません。",
    err_self_approval: "あなたが依頼した承認のため、他の人に委任することもできません。",
    err_group_seat: "この承認はあなた個人ではなく、あなたが所属するグループに割り当てられています。再割り当ては運用担当者に依頼してください。",
    err_not_supported: "この ringi は承認を DynamoDB に保存しているため、委任は利用できません。",
    err_other: "委任できませんでした。",
    settings_link: "設定",
    settings_title: "設定",
    ooo_heading: "不在設定",
    ooo_intro: "不在の間、あなた宛ての新しい承認依頼は別の人に送られます。すでに届いている依頼はそのままです（依頼の画面から委任できます）。",
    ooo_delegate_label: "承認の送り先（メール）",
    ooo_from_label: "開始日",
    ooo_until_label: "終了日",
    ooo_note_label: "メモ",
    ooo_save: "保存",
    ooo_clear: "戻りました",
    ooo_saved: "保存しました。",
    ooo_cleared: "不在設定を解除しました。",
    ooo_none: "不在設定はありません。",
    ooo_current: |who, when, active| {
        if active {
            format!("{when} まで、新しい承認依頼は {who} さんに送られます。")
        } else {
            format!("開始日から {when} まで、新しい承認依頼は {who} さんに送られます。")
        }
    },
    ooo_until_required: "終了日を選んでください。",
};

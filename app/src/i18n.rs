//! UI strings in English and Japanese. One struct per language keeps a missing translation a compile
//! error rather than a runtime fallback.

use crate::config::Locale;

pub struct Texts {
    pub skip_to_content: &'static str,
    pub home_label: &'static str,
    pub tagline: &'static str,
    pub loading: &'static str,
    pub config_error_title: &'static str,
    pub config_error_body: &'static str,
    pub retry: &'static str,
    pub retrying: &'static str,
    pub inbox_title: &'static str,
    pub inbox_loaded: &'static str,
    pub sign_in: &'static str,
    pub approval_title: &'static str,
    pub approval_id_label: &'static str,
    pub approval_sign_in: &'static str,
    pub not_found_title: &'static str,
    pub not_found_body: &'static str,
    pub back_to_inbox: &'static str,
    pub version_label: &'static str,
}

const EN: Texts = Texts {
    skip_to_content: "Skip to main content",
    home_label: "ringi, go to the inbox",
    tagline: "Approvals",
    loading: "Loading…",
    config_error_title: "ringi could not start",
    config_error_body: "The app configuration could not be loaded. Check your connection and try again.",
    retry: "Try again",
    retrying: "Trying again…",
    inbox_title: "Inbox",
    inbox_loaded: "The app is loaded. Sign in to see the approval requests waiting for you.",
    sign_in: "Sign in",
    approval_title: "Approval request",
    approval_id_label: "Request ID",
    approval_sign_in: "Sign in to review this request. Nothing is decided until you press a button.",
    not_found_title: "Page not found",
    not_found_body: "There is nothing at this address. Approval links look like /a/ followed by an ID.",
    back_to_inbox: "Back to the inbox",
    version_label: "Version",
};

const JA: Texts = Texts {
    skip_to_content: "本文へスキップ",
    home_label: "ringi（受信箱へ）",
    tagline: "承認",
    loading: "読み込み中…",
    config_error_title: "ringi を起動できませんでした",
    config_error_body: "アプリの設定を読み込めませんでした。接続を確認して、もう一度お試しください。",
    retry: "再試行",
    retrying: "再試行中…",
    inbox_title: "受信箱",
    inbox_loaded: "アプリを読み込みました。サインインすると、あなた宛ての承認依頼が表示されます。",
    sign_in: "サインイン",
    approval_title: "承認依頼",
    approval_id_label: "依頼 ID",
    approval_sign_in: "この依頼を確認するにはサインインしてください。ボタンを押すまで何も決定されません。",
    not_found_title: "ページが見つかりません",
    not_found_body: "このアドレスには何もありません。承認リンクは /a/ に ID が続く形式です。",
    back_to_inbox: "受信箱に戻る",
    version_label: "バージョン",
};

pub fn texts(locale: Locale) -> &'static Texts {
    match locale {
        Locale::En => &EN,
        Locale::Ja => &JA,
    }
}

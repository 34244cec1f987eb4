//! Strings of the settings page's "Notifications on this device" (full bundle only: the approval page never shows
//! them), in English and Japanese; one struct, so that a missing translation is a compile error.

use ringi_core::base::locale::Locale;

pub struct PushTexts {
    pub heading: &'static str,
    pub intro: &'static str,
    pub unsupported: &'static str,
    pub not_configured: &'static str,
    pub blocked: &'static str,
    pub off: &'static str,
    pub on: &'static str,
    pub turn_on: &'static str,
    pub turn_off: &'static str,
    pub failed: &'static str,
}

pub const EN: PushTexts = PushTexts {
    heading: "Notifications on this device",
    intro: "Get a notification on this phone or computer when an approval asks for your decision. Tapping it \
            opens the request; your decision still needs you signed in.",
    unsupported: "This browser cannot show notifications from ringi (on an iPhone, add ringi to the home screen \
                  first).",
    not_configured: "Notifications are not set up on this installation of ringi.",
    blocked: "Notifications are blocked for this site. Allow them in the browser's site settings, then come back.",
    off: "Off on this device.",
    on: "On: this device is told of approvals that name you.",
    turn_on: "Turn on notifications",
    turn_off: "Turn off",
    failed: "Notifications could not be turned on:",
};

pub const JA: PushTexts = PushTexts {
    heading: "この端末への通知",
    intro: "あなたの判断を求める承認依頼が届いたとき、このスマートフォンやパソコンに通知します。通知をタップすると依頼が開きます\
            （判断にはサインインが必要です）。",
    unsupported: "このブラウザーでは ringi の通知を表示できません（iPhone では先に ringi をホーム画面に追加してください）。",
    not_configured: "この ringi では通知が設定されていません。",
    blocked: "このサイトの通知はブロックされています。ブラウザーのサイト設定で許可してから戻ってください。",
    off: "この端末ではオフです。",
    on: "オン: あなた宛ての承認依頼をこの端末に通知します。",
    turn_on: "通知をオンにする",
    turn_off: "オフにする",
    failed: "通知をオンにできませんでした:",
};

pub fn push_texts(locale: Locale) -> &'static PushTexts {
    match locale {
        Locale::En => &EN,
        Locale::Ja => &JA,
    }
}

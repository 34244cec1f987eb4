//! UI strings in English and Japanese. One struct per language keeps a missing translation a compile
//! error rather than a runtime fallback; texts with numbers in them are functions.

use ringi_core::base::locale::Locale;

pub mod audit;
pub mod delegation;
mod en;
mod ja;
#[cfg(feature = "admin")]
pub mod push;
mod texts;

pub use texts::{num, Texts};

pub fn texts(locale: Locale) -> &'static Texts {
    match locale {
        Locale::En => &en::EN,
        Locale::Ja => &ja::JA,
    }
}

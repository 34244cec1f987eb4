//! The languages ringi speaks: an approval's `locale` (its mails), the SPA's language.

use crate::base::by_name::serde_by_name;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Locale {
    #[default]
    En,
    Ja,
}
serde_by_name!(Locale, as_str, parse, "en or ja");

impl Locale {
    pub const ALL: [Self; 2] = [Self::En, Self::Ja];

    /// The wire and storage form, also the value for `lang` attributes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Ja => "ja",
        }
    }

    /// Exactly `en` or `ja` (registrations, stored rows).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// A BCP 47 tag by its primary subtag (`ja-JP` → Japanese); `None` for other languages.
    pub fn from_tag(tag: &str) -> Option<Self> {
        let primary = tag.split(['-', '_']).next().unwrap_or_default().to_ascii_lowercase();
        Self::parse(&primary)
    }
}

impl std::fmt::Display for Locale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_and_tags() {
        assert_eq!(serde_json::to_string(&Locale::Ja).unwrap(), "\"ja\"");
        assert_eq!(serde_json::from_str::<Locale>("\"en\"").unwrap(), Locale::En);
        assert!(serde_json::from_str::<Locale>("\"fr\"").is_err());
        assert_eq!(Locale::parse("ja"), Some(Locale::Ja));
        assert_eq!(Locale::parse("ja-JP"), None, "stored values are exact");
        assert_eq!(Locale::from_tag("ja-JP"), Some(Locale::Ja));
        assert_eq!(Locale::from_tag("EN_us"), Some(Locale::En));
        assert_eq!(Locale::from_tag("EN-us"), Some(Locale::En));
        assert_eq!(Locale::from_tag("ja"), Some(Locale::Ja));
        assert_eq!(Locale::from_tag("fr"), None);
        assert_eq!(Locale::from_tag(""), None);
    }
}

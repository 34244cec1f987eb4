//! Enums that cross the wire as one of their names (`"pending"`, `"approve"`), written and read through the enum's
//! own `as_str`/`parse`: the names live in one place, and reading one is a string match. serde's derive would
//! repeat the names and read them through its enum machinery (which also accepts forms the wire never carries,
//! such as `{"pending": null}`), at 1–2 KB of wasm per enum in the SPA.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Unexpected, Visitor};

/// `impl Serialize + Deserialize` (and [`FromJson`](crate::base::json::FromJson)) for `$t` by `$t::$as_str` and
/// `$t::$parse` (`fn(&str) -> Option<$t>`); `$what` is what a wrong value is told it should have been.
macro_rules! serde_by_name {
    ($t:ty, $as_str:ident, $parse:ident, $what:literal) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.$as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::base::by_name::read(d, <$t>::$parse, $what)
            }
        }

        impl $crate::base::json::FromJson for $t {
            fn from_json(v: &serde_json::Value) -> Result<Self, $crate::base::json::ReadError> {
                $crate::base::json::name(v, <$t>::$parse, $what)
            }
        }
    };
}
pub(crate) use serde_by_name;

/// A name, as `parse` reads it.
pub fn read<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: fn(&str) -> Option<T>,
    what: &'static str,
) -> Result<T, D::Error> {
    d.deserialize_str(Name { parse, what, _of: PhantomData })
}

struct Name<T> {
    parse: fn(&str) -> Option<T>,
    what: &'static str,
    _of: PhantomData<T>,
}

impl<T> Visitor<'_> for Name<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.what)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).ok_or_else(|| E::invalid_value(Unexpected::Str(v), &self))
    }
}

#[cfg(test)]
mod tests {
    use crate::base::locale::Locale;
    use crate::base::status::{ApprovalStatus, Verdict};

    #[test]
    fn names_are_written_and_read_as_strings() {
        assert_eq!(serde_json::to_string(&ApprovalStatus::DecidedUnconfirmed).unwrap(), r#""decided_unconfirmed""#);
        assert_eq!(serde_json::from_str::<Verdict>(r#""reject""#).unwrap(), Verdict::Reject);
        assert_eq!(serde_json::from_str::<Vec<Locale>>(r#"["ja","en"]"#).unwrap(), [Locale::Ja, Locale::En]);
    }

    #[test]
    fn an_unknown_name_or_another_type_says_what_was_expected() {
        let e = serde_json::from_str::<Verdict>(r#""maybe""#).unwrap_err().to_string();
        assert!(e.contains("invalid value: string \"maybe\", expected approve or reject"), "{e}");
        assert!(serde_json::from_str::<Verdict>(r#"{"approve":null}"#).is_err());
        assert!(serde_json::from_str::<ApprovalStatus>("1").is_err());
    }
}

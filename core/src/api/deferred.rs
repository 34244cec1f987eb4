//! A part of a response that its reader decodes where it shows it, not with the rest.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::base::json::{FromJson, ReadError};

/// `T` on the wire, kept as its JSON text and decoded on [`Deferred::decode`]. The code that decodes `T` is
/// then compiled where `decode` is called: the SPA's approval page reads its timeline this way, so the module
/// the page downloads first carries no reader for events, which it shows only in a part loaded later.
/// The writer (the worker) serializes `T` once, into the text that is copied to the response as it is.
#[derive(Debug, Clone)]
pub struct Deferred<T> {
    json: Box<RawValue>,
    _of: PhantomData<fn() -> T>,
}

impl<T: Serialize> Deferred<T> {
    /// `value` as it goes on the wire.
    pub fn new(value: &T) -> Self {
        // A wire type always serializes to JSON (no maps with non-string keys, no non-finite floats).
        let json = serde_json::value::to_raw_value(value).unwrap_or_else(|_| null());
        Self { json, _of: PhantomData }
    }
}

fn null() -> Box<RawValue> {
    // Written, not parsed: `RawValue::from_string` would link serde_json's parser into the SPA for this.
    serde_json::value::to_raw_value(&()).expect("() is JSON null")
}

impl<T: DeserializeOwned> Deferred<T> {
    /// The value; an error when the JSON is not a `T`.
    pub fn decode(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.json.get())
    }
}

/// The value's JSON text, as it is: decoded by [`Deferred::decode`].
impl<T> FromJson for Deferred<T> {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        Ok(Self { json: serde_json::value::to_raw_value(v)?, _of: PhantomData })
    }
}

impl<T: Serialize + Default> Default for Deferred<T> {
    fn default() -> Self {
        Self::new(&T::default())
    }
}

/// The same text: both sides come from one writer, which writes no insignificant white space.
impl<T> PartialEq for Deferred<T> {
    fn eq(&self, other: &Self) -> bool {
        self.json.get() == other.json.get()
    }
}

impl<T> Serialize for Deferred<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl<'de, T> Deserialize<'de> for Deferred<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(|json| Self { json, _of: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Default, Serialize, Deserialize)]
    struct Item {
        n: i64,
        #[serde(rename = "a")]
        later_in_name_order: i64,
    }

    #[test]
    fn reads_back_what_was_written_in_field_order() {
        let items = vec![Item { n: 1, later_in_name_order: 2 }, Item { n: 3, later_in_name_order: 4 }];
        let written = serde_json::to_string(&Deferred::new(&items)).unwrap();
        assert_eq!(written, serde_json::to_string(&items).unwrap());
        assert_eq!(written, r#"[{"n":1,"a":2},{"n":3,"a":4}]"#);
        let read: Deferred<Vec<Item>> = serde_json::from_str(&written).unwrap();
        assert_eq!(read.decode().unwrap(), items);
    }

    #[test]
    fn json_of_another_shape_is_read_and_fails_only_when_decoded() {
        let read: Deferred<Vec<Item>> = serde_json::from_str(r#"[{"n":"one"}]"#).unwrap();
        assert!(read.decode().is_err());
    }

    #[test]
    fn the_default_is_the_default_value() {
        let d: Deferred<Vec<Item>> = Deferred::default();
        assert_eq!(serde_json::to_string(&d).unwrap(), "[]");
        assert_eq!(d, Deferred::new(&Vec::new()));
    }
}

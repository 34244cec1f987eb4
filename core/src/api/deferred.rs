//! A part of a response that its reader decodes where it shows it, not with the rest.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// `T` on the wire, read as plain JSON and decoded on [`Deferred::decode`]. The code that decodes `T` is then
/// compiled where `decode` is called: the SPA's approval page reads its timeline this way, so the module
/// the page downloads first carries no reader for events, which it shows only in a part loaded later.
/// The writer (the worker) builds it from `T`: the same JSON value as `T`, its objects' keys in name order.
#[derive(Debug, Clone)]
pub struct Deferred<T> {
    json: Value,
    _of: PhantomData<fn() -> T>,
}

impl<T: Serialize> Deferred<T> {
    /// `value` as it goes on the wire.
    pub fn new(value: &T) -> Self {
        // A wire type always serializes to JSON (no maps with non-string keys, no non-finite floats).
        Self { json: serde_json::to_value(value).unwrap_or(Value::Null), _of: PhantomData }
    }
}

impl<T: DeserializeOwned> Deferred<T> {
    /// The value; an error when the JSON is not a `T`.
    pub fn decode(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.json)
    }
}

impl<T: Serialize + Default> Default for Deferred<T> {
    fn default() -> Self {
        Self::new(&T::default())
    }
}

impl<T> PartialEq for Deferred<T> {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

impl<T> Serialize for Deferred<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl<'de, T> Deserialize<'de> for Deferred<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|json| Self { json, _of: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Default, Serialize, Deserialize)]
    struct Item {
        n: i64,
    }

    #[test]
    fn reads_back_what_was_written() {
        let written = serde_json::to_string(&Deferred::new(&vec![Item { n: 1 }, Item { n: 2 }])).unwrap();
        assert_eq!(written, r#"[{"n":1},{"n":2}]"#);
        let read: Deferred<Vec<Item>> = serde_json::from_str(&written).unwrap();
        assert_eq!(read.decode().unwrap(), vec![Item { n: 1 }, Item { n: 2 }]);
    }

    #[test]
    fn json_of_another_shape_is_read_and_fails_only_when_decoded() {
        let read: Deferred<Vec<Item>> = serde_json::from_str(r#"[{"n":"one"}]"#).unwrap();
        assert!(read.decode().is_err());
    }
}

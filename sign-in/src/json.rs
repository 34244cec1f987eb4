//! JSON text read with the browser's own `JSON.parse` into a [`Value`], for [`FromJson`] readers: the modules an
//! emailed link downloads first (the app's main module, this crate's session record) then carry no JSON parser of
//! their own, where serde_json's is ≈ 20 KB of wasm. Native builds (the tests) read with serde_json.
//!
//! `JSON.parse` gives every number as a double: a whole number is kept as an integer, as serde_json reads one
//! (`json_number`, the app's one rule for a double as JSON).

use ringi_core::base::json::{FromJson, ReadError};
use serde_json::Value;

/// JSON text read as `T`.
pub fn from_str<T: FromJson>(text: &str) -> Result<T, ReadError> {
    T::from_json(&parse(text).ok_or_else(|| ReadError::new("not JSON"))?)
}

/// JSON text as a value; `None` when it is not JSON.
#[cfg(target_arch = "wasm32")]
pub fn parse(text: &str) -> Option<Value> {
    js_sys::JSON::parse(text).ok().map(|v| value(&v))
}

#[cfg(not(target_arch = "wasm32"))]
pub fn parse(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

#[cfg(target_arch = "wasm32")]
fn value(v: &wasm_bindgen::JsValue) -> Value {
    use js_sys::{Array, Object, Reflect};
    use wasm_bindgen::JsCast;

    if let Some(b) = v.as_bool() {
        Value::Bool(b)
    } else if let Some(n) = v.as_f64() {
        // A whole number as an integer, as serde_json reads one (and as the app writes one).
        ringi_core::domain::form::json_number(n).map_or(Value::Null, Value::Number)
    } else if let Some(s) = v.as_string() {
        Value::String(s)
    } else if let Some(items) = v.dyn_ref::<Array>() {
        Value::Array(items.iter().map(|item| value(&item)).collect())
    } else if let Some(object) = v.dyn_ref::<Object>() {
        let keys = Object::keys(object);
        let members = keys.iter().filter_map(|key| {
            let member = Reflect::get(object, &key).ok()?;
            Some((key.as_string()?, value(&member)))
        });
        Value::Object(members.collect())
    } else {
        Value::Null
    }
}

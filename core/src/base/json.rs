//! Reading the wire types the SPA's approval page decodes from a parsed [`Value`], member by member.
//!
//! serde's derive reads each struct through a visitor of its own, with its field matcher, missing- and
//! duplicate-field errors and a sequence form, all compiled anew for every struct and member type: about 40 KB of
//! the wasm an emailed link downloads first, for the approval and the few types around it. A [`FromJson`] reader
//! asks for each member by name with one generic function per member type, shared by every struct. serde's
//! attributes stay the definition of the format (the worker writes with them); each reader's test holds it to
//! serde's reading of the same JSON with every member removed, null or of another type ([`agrees`]).
//! Types read only in parts loaded on demand read through serde ([`from_json_by_serde!`]). The text becomes a
//! `Value` by serde_json here ([`from_str`]) or, in the browser, by its own `JSON.parse` (`ringi_sign_in::json`).

use std::cell::RefCell;
use std::fmt;

use serde_json::{Map, Value};

/// Why a value is not the type read: where (members from the outside in) and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    at: String,
    problem: String,
}

impl ReadError {
    pub fn new(problem: impl Into<String>) -> Self {
        Self { at: String::new(), problem: problem.into() }
    }

    fn expected(what: &str) -> Self {
        Self::new(format!("expected {what}"))
    }

    /// The same error, one member further out.
    #[inline(never)]
    fn within(mut self, member: &str) -> Self {
        self.at = if self.at.is_empty() { member.to_owned() } else { format!("{member}.{}", self.at) };
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.at, self.problem)
        }
    }
}

impl std::error::Error for ReadError {}

impl From<serde_json::Error> for ReadError {
    fn from(e: serde_json::Error) -> Self {
        Self::new(e.to_string())
    }
}

/// A type read from a JSON value as serde's `Deserialize` would read it.
pub trait FromJson: Sized {
    fn from_json(v: &Value) -> Result<Self, ReadError>;

    /// What an absent member reads as: nothing, which is an error, except for an `Option` (as serde reads one).
    fn absent() -> Option<Self> {
        None
    }
}

/// JSON text read into `T`.
pub fn from_str<T: FromJson>(text: &str) -> Result<T, ReadError> {
    T::from_json(&serde_json::from_str::<Value>(text)?)
}

/// The members of a JSON object, read by name. A member that cannot be read is noted and stands in as its
/// [`Placeholder`] until [`Members::done`] reports it: a struct's reader then fails in one place, after all its
/// members, rather than returning at each one (where the members read so far would be dropped, code that grows
/// with the square of the number of members).
pub struct Members<'a> {
    map: &'a Map<String, Value>,
    failed: RefCell<Option<ReadError>>,
}

impl<'a> Members<'a> {
    pub fn of(v: &'a Value) -> Result<Self, ReadError> {
        let map = v.as_object().ok_or_else(|| ReadError::expected("an object"))?;
        Ok(Self { map, failed: RefCell::new(None) })
    }

    // Not inlined, here and in `get`/`or_default`: a struct's reader is then a call per member, and each member
    // type's reading is compiled once for every struct.
    #[inline(never)]
    fn member(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name)
    }

    /// A member without `#[serde(default)]`.
    #[inline(never)]
    pub fn get<T: FromJson + Placeholder>(&self, name: &str) -> T {
        let read = match self.member(name) {
            Some(v) => T::from_json(v).map_err(|e| e.within(name)),
            None => T::absent().ok_or_else(|| missing(name)),
        };
        self.noted(read)
    }

    /// A member with `#[serde(default)]`.
    #[inline(never)]
    pub fn or_default<T: FromJson + Default>(&self, name: &str) -> T {
        match self.member(name) {
            Some(v) => self.noted(T::from_json(v).map_err(|e| e.within(name))),
            None => T::default(),
        }
    }

    fn noted<T: Placeholder>(&self, read: Result<T, ReadError>) -> T {
        read.unwrap_or_else(|e| {
            self.note(e);
            T::placeholder()
        })
    }

    #[inline(never)]
    fn note(&self, e: ReadError) {
        self.failed.borrow_mut().get_or_insert(e);
    }

    /// `value`, read from these members, or why one of them could not be read.
    pub fn done<T>(&self, value: T) -> Result<T, ReadError> {
        match self.failed.take() {
            None => Ok(value),
            Some(e) => Err(e),
        }
    }

    /// The one member of an object that must have exactly one (an enum's variant, as serde writes one).
    pub fn only(&self) -> Option<(&'a str, &'a Value)> {
        let mut members = self.map.iter();
        match (members.next(), members.next()) {
            (Some((name, v)), None) => Some((name, v)),
            _ => None,
        }
    }
}

/// What a member that could not be read holds until its struct's reader reports the error: never seen.
pub trait Placeholder {
    fn placeholder() -> Self;
}

impl<T: Default> Placeholder for T {
    fn placeholder() -> Self {
        T::default()
    }
}

#[inline(never)]
fn missing(name: &str) -> ReadError {
    ReadError::new(format!("missing field `{name}`"))
}

/// A name read by `parse` (the enums of [`crate::base::by_name`]).
pub fn name<T>(v: &Value, parse: fn(&str) -> Option<T>, what: &'static str) -> Result<T, ReadError> {
    let name = v.as_str().ok_or_else(|| ReadError::expected("a string"))?;
    parse(name).ok_or_else(|| ReadError::new(format!("unknown `{name}`, expected {what}")))
}

impl FromJson for String {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        v.as_str().map(str::to_owned).ok_or_else(|| ReadError::expected("a string"))
    }
}

impl FromJson for bool {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        v.as_bool().ok_or_else(|| ReadError::expected("a boolean"))
    }
}

impl FromJson for u32 {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| ReadError::expected("an integer (u32)"))
    }
}

impl FromJson for usize {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        v.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| ReadError::expected("an integer"))
    }
}

impl FromJson for f64 {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        v.as_f64().ok_or_else(|| ReadError::expected("a number"))
    }
}

impl FromJson for Value {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        Ok(v.clone())
    }
}

impl FromJson for Map<String, Value> {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        v.as_object().cloned().ok_or_else(|| ReadError::expected("an object"))
    }
}

impl<T: FromJson> FromJson for Option<T> {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        if v.is_null() {
            Ok(None)
        } else {
            T::from_json(v).map(Some)
        }
    }

    fn absent() -> Option<Self> {
        Some(None)
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let items = v.as_array().ok_or_else(|| ReadError::expected("an array"))?;
        items.iter().enumerate().map(|(i, item)| T::from_json(item).map_err(|e| e.within(&i.to_string()))).collect()
    }
}

/// `impl FromJson` through the type's serde `Deserialize`: for types read only in parts loaded on demand, where
/// serde's code is downloaded with the part that needs it.
#[macro_export]
macro_rules! from_json_by_serde {
    ($($t:ty),+ $(,)?) => {
        $(impl $crate::base::json::FromJson for $t {
            fn from_json(v: &serde_json::Value) -> Result<Self, $crate::base::json::ReadError> {
                <$t as serde::Deserialize>::deserialize(v).map_err(Into::into)
            }
        })+
    };
}

/// Holds a reader to serde's: `sample` (valid), and every variant of it with one member anywhere in it removed,
/// null, or of another type, read by both, must give the same value or both fail. Not tried: an array in place
/// of an object, which serde's derive reads as the struct's members in order, a form no writer produces. For tests
/// (of every crate with a reader).
pub fn agrees<T>(sample: Value)
where
    T: FromJson + serde::de::DeserializeOwned + PartialEq + fmt::Debug,
{
    let by_serde = |v: &Value| serde_json::from_str::<T>(&v.to_string());
    let serde_reads = by_serde(&sample);
    assert!(serde_reads.is_ok(), "the sample is not a valid {}: {serde_reads:?}", std::any::type_name::<T>());
    let mut variants = vec![sample.clone()];
    mutations(&sample, &mut |v| variants.push(v));
    for v in variants {
        let ours = T::from_json(&v);
        let serde = by_serde(&v);
        assert_eq!(ours.as_ref().ok(), serde.as_ref().ok(), "{v}\nours: {ours:?}\nserde: {serde:?}");
    }
}

fn mutations(v: &Value, out: &mut dyn FnMut(Value)) {
    let others = [Value::Null, Value::from(7), Value::from(-1), Value::from(1.5), Value::from("x"), Value::from(true)];
    let others = others.into_iter().chain([serde_json::json!([]), serde_json::json!({}), serde_json::json!(["x"])]);
    let others: Vec<Value> = others.collect();
    match v {
        Value::Object(map) => {
            for (name, member) in map {
                let mut without = map.clone();
                without.remove(name);
                out(Value::Object(without));
                let kept = |o: &&Value| *o != member && !(member.is_object() && o.is_array());
                for other in others.iter().filter(kept) {
                    let mut with = map.clone();
                    with.insert(name.clone(), other.clone());
                    out(Value::Object(with));
                }
                mutations(member, &mut |m| {
                    let mut with = map.clone();
                    with.insert(name.clone(), m);
                    out(Value::Object(with));
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                mutations(item, &mut |m| {
                    let mut with = items.clone();
                    with[i] = m;
                    out(Value::Array(with));
                });
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn members_are_read_by_name_with_the_path_of_what_is_wrong() {
        let v = json!({"a": {"b": [1, "x"]}});
        let read = |name: &str| {
            let m = Members::of(&v)?;
            let a: Map<String, Value> = m.get(name);
            m.done(a)
        };
        assert!(read("a").is_ok());
        assert_eq!(read("z").unwrap_err().to_string(), "missing field `z`");
        let inner = |v: &Value| {
            let m = Members::of(v)?;
            let b: Vec<u32> = m.get("b");
            m.done(b)
        };
        assert_eq!(inner(&v["a"]).unwrap_err().to_string(), "b.1: expected an integer (u32)");
        let m = Members::of(&v).unwrap();
        let (z, zz): (Option<String>, bool) = (m.get("z"), m.or_default("zz"));
        assert_eq!(m.done((z, zz)).unwrap(), (None, false));
        let m = Members::of(&v).unwrap();
        let (first, _): (String, u32) = (m.get("a"), m.get("y"));
        assert_eq!(m.done(first).unwrap_err().to_string(), "a: expected a string", "the first member that failed");
    }

    #[test]
    fn numbers_follow_serde() {
        for v in [json!(1), json!(0), json!(-1), json!(1.0), json!(1.5), json!(u64::MAX), json!("1")] {
            assert_eq!(u32::from_json(&v).ok(), serde_json::from_value::<u32>(v.clone()).ok(), "{v}");
            assert_eq!(usize::from_json(&v).ok(), serde_json::from_value::<usize>(v.clone()).ok(), "{v}");
            assert_eq!(f64::from_json(&v).ok(), serde_json::from_value::<f64>(v.clone()).ok(), "{v}");
        }
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        assert!(from_str::<String>("{").is_err());
        assert_eq!(from_str::<Vec<String>>(r#"["a"]"#).unwrap(), ["a"]);
    }
}

//! `docs/openapi.yaml` against the code: its operations are exactly [`Route::ALL`], every other method on a
//! documented path is a 405 naming the documented ones, and its `ErrorCode` enum is exactly
//! [`ErrorCode::ALL`]. Read as data, so neither side's formatting matters.

use std::collections::{BTreeMap, BTreeSet};

use ringi_core::api::route::{Route, Unrouted};
use ringi_core::base::error::ErrorCode;
use serde_yaml::Value;

const HTTP_METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

fn spec() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).expect("docs/openapi.yaml")).expect("valid YAML")
}

/// Path template → its documented methods (upper case).
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let spec = spec();
    let paths = spec["paths"].as_mapping().expect("paths");
    paths
        .iter()
        .map(|(path, item)| {
            let methods = item.as_mapping().expect("path item").keys().filter_map(Value::as_str);
            let methods = methods.filter(|m| HTTP_METHODS.contains(m)).map(str::to_uppercase).collect();
            (path.as_str().expect("path").to_owned(), methods)
        })
        .collect()
}

/// A concrete path for a template (`{id}` → a valid approval ID).
fn concrete(template: &str) -> String {
    template.replace("{id}", "abcdefghijklmnopqrstuv")
}

#[test]
fn spec_operations_are_exactly_the_route_table() {
    let code: BTreeSet<(String, String)> =
        Route::ALL.iter().map(|r| (r.method.to_owned(), r.path.to_owned())).collect();
    let spec: BTreeSet<(String, String)> =
        documented().into_iter().flat_map(|(p, ms)| ms.into_iter().map(move |m| (m, p.clone()))).collect();
    assert_eq!(code, spec, "Route::ALL and docs/openapi.yaml differ");
    for r in Route::ALL {
        assert!(Route::parse(r.method, &concrete(r.path)).is_ok(), "{} {} does not route", r.method, r.path);
    }
}

#[test]
fn other_methods_on_documented_paths_are_405_naming_the_documented_ones() {
    for (path, methods) in documented() {
        for other in HTTP_METHODS.iter().map(|m| m.to_uppercase()).filter(|m| !methods.contains(m)) {
            let Err(Unrouted::Method { allow }) = Route::parse(&other, &concrete(&path)) else {
                panic!("{other} {path} is not a 405");
            };
            let allow: BTreeSet<String> = allow.split(", ").map(str::to_owned).collect();
            assert_eq!(allow, methods, "Allow of {path}");
        }
    }
}

#[test]
fn every_error_code_is_documented() {
    let spec = spec();
    let documented: BTreeSet<&str> = spec["components"]["schemas"]["ErrorCode"]["enum"]
        .as_sequence()
        .expect("ErrorCode enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let code: BTreeSet<&str> = ErrorCode::ALL.iter().map(ErrorCode::code).collect();
    assert_eq!(code, documented);
}

//! A JSON object as a definition list (an approval's details, a decision's feedback); nested objects and
//! arrays collapse into `<details>`, deeper than six levels they are shown as JSON text.

use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::i18n::Texts;

/// Levels of boxes before the rest is shown as JSON text.
const MAX_DEPTH: usize = 6;
/// Nested objects and arrays up to this size start open (first level only).
const OPEN_MAX: usize = 4;

pub fn object_view(map: &Map<String, Value>, t: &'static Texts, depth: usize) -> AnyView {
    let rows: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    rows_view(&rows, t, depth)
}

/// Labelled values in the given order (feedback is shown under the form's labels, in the form's order).
pub fn rows_view(rows: &[(String, Value)], t: &'static Texts, depth: usize) -> AnyView {
    let rows = rows
        .iter()
        .map(|(k, v)| {
            view! {
                <div class="kv__row">
                    <dt>{k.clone()}</dt>
                    <dd>{value_view(v, t, depth)}</dd>
                </div>
            }
        })
        .collect_view();
    view! { <dl class="kv">{rows}</dl> }.into_any()
}

fn value_view(v: &Value, t: &'static Texts, depth: usize) -> AnyView {
    if depth >= MAX_DEPTH && (v.is_object() || v.is_array()) {
        // Written as a request body is (`Value`'s own `Display` is another copy of the writer in the wasm).
        let json = serde_json::to_string(v).unwrap_or_default();
        return view! { <code class="kv__json">{json}</code> }.into_any();
    }
    match v {
        Value::Object(m) if !m.is_empty() => view! {
            <details class="tree" open=depth == 0 && m.len() <= OPEN_MAX>
                <summary>{(t.items)(m.len())}</summary>
                {object_view(m, t, depth + 1)}
            </details>
        }
        .into_any(),
        Value::Array(a) if !a.is_empty() => {
            let entries = a.iter().map(|item| view! { <li>{value_view(item, t, depth + 1)}</li> }).collect_view();
            view! {
                <details class="tree" open=depth == 0 && a.len() <= OPEN_MAX>
                    <summary>{(t.items)(a.len())}</summary>
                    <ol class="tree__list">{entries}</ol>
                </details>
            }
            .into_any()
        }
        Value::Object(_) | Value::Array(_) | Value::Null => {
            view! { <span class="kv__empty">{t.empty_value}</span> }.into_any()
        }
        Value::String(s) if s.is_empty() => view! { <span class="kv__empty">{t.empty_value}</span> }.into_any(),
        Value::String(s) => view! { <span class="kv__text">{s.clone()}</span> }.into_any(),
        Value::Bool(b) => view! { <span>{if *b { t.yes } else { t.no }}</span> }.into_any(),
        Value::Number(n) => view! { <span class="kv__number">{n.to_string()}</span> }.into_any(),
    }
}

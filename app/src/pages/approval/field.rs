//! One feedback field: its label, control, help (limits included) and error, wired for assistive
//! technology (`aria-describedby` help and error, `aria-invalid`, `aria-required`).

use leptos::prelude::*;
use ringi_core::domain::form::{text_limit, FieldKind, FormField};

use super::feedback::{FieldProblem, FieldState, RADIO_MAX};
use crate::context::{tr, use_app};
use crate::i18n::{num, Texts};

pub fn problem_text(t: &Texts, p: &FieldProblem) -> String {
    match p {
        FieldProblem::Issue(issue) => t.issue(issue),
        FieldProblem::Server(message) => (t.server_refused)(message),
    }
}

/// The limits a field states in its help text.
#[derive(Clone, Copy)]
enum Limit {
    Chars(usize),
    Range(Option<f64>, Option<f64>),
}

impl Limit {
    fn of(kind: &FieldKind) -> Option<Self> {
        match kind {
            FieldKind::Text { max_length } | FieldKind::Textarea { max_length } => {
                Some(Limit::Chars(text_limit(*max_length)))
            }
            FieldKind::Number { min, max } if min.is_some() || max.is_some() => Some(Limit::Range(*min, *max)),
            _ => None,
        }
    }

    fn text(self, t: &Texts) -> String {
        match self {
            Limit::Chars(n) => (t.max_chars)(n),
            Limit::Range(a, b) => (t.range)(a, b),
        }
    }
}

fn is_radio(kind: &FieldKind) -> bool {
    matches!(kind, FieldKind::Choice { options } if options.len() <= RADIO_MAX)
}

#[component]
pub fn Field(state: FieldState) -> impl IntoView {
    let ctx = use_app();
    let f = state.field.clone();
    let id = state.dom_id();
    let problem = state.problem;
    let limit = Limit::of(&f.kind);
    let help = f.help.clone();
    let help_text = move || {
        let limit = limit.map(|l| l.text(ctx.texts()));
        [help.clone(), limit].into_iter().flatten().collect::<Vec<_>>().join(" ")
    };
    let required = f.required;
    let label_text = move || {
        view! {
            {f.label.clone()}
            {move || required.then(|| view! { <span class="field__required">{tr(|t| t.required)}</span> })}
        }
    };
    let label = if is_radio(&state.field.kind) {
        // A radio group is labelled by this text (aria-labelledby); each radio has its own <label>.
        view! { <p class="field__label" id=format!("{id}-label")>{label_text()}</p> }.into_any()
    } else {
        view! { <label class="field__label" for=id.clone() id=format!("{id}-label")>{label_text()}</label> }.into_any()
    };
    let is_check = matches!(state.field.kind, FieldKind::Boolean);
    let control = control(&state);
    view! {
        <div
            class="field"
            class:field--invalid=move || problem.with(Option::is_some)
            class:field--check=is_check
            data-testid=format!("field-{}", state.field.name)
        >
            {if is_check { view! { {control}{label} }.into_any() } else { view! { {label}{control} }.into_any() }}
            <p id=format!("{id}-help") class="field__help">{help_text}</p>
            <p id=format!("{id}-error") class="field__error">
                {move || problem.get().map(|p| problem_text(ctx.texts(), &p))}
            </p>
        </div>
    }
}

/// The control for the field's kind.
fn control(state: &FieldState) -> AnyView {
    let FieldState { field: FormField { name, kind, required, .. }, text, checked, problem } = state.clone();
    let id = state.dom_id();
    let describedby = format!("{id}-help {id}-error");
    let invalid = move || problem.with(Option::is_some).then_some("true");
    let required = required.then_some("true");
    let on_text = move |ev: leptos::ev::Event| {
        text.set(event_target_value(&ev));
        problem.set(None);
    };
    // One <input> for text and numbers (`number`: its bounds); the attributes a kind lacks are left out.
    let input = |number: Option<(Option<f64>, Option<f64>)>, maxlength: Option<usize>| {
        let (min, max) = number.unwrap_or_default();
        let is_number = number.is_some();
        view! {
            <input
                id=id.clone()
                name=name.clone()
                type=if is_number { "number" } else { "text" }
                class=if is_number { "input input--number" } else { "input" }
                autocomplete=(!is_number).then_some("off")
                maxlength=maxlength.map(|n| n.to_string())
                inputmode=is_number.then_some("decimal")
                step=is_number.then_some("any")
                min=min.map(num)
                max=max.map(num)
                aria-required=required
                aria-invalid=invalid
                aria-describedby=describedby.clone()
                prop:value=move || text.get()
                on:input=on_text
            />
        }
        .into_any()
    };
    match kind {
        FieldKind::Text { max_length } => input(None, Some(text_limit(max_length))),
        FieldKind::Number { min, max } => input(Some((min, max)), None),
        FieldKind::Textarea { max_length } => view! {
            <textarea
                id=id
                name=name
                class="input input--area"
                rows="4"
                maxlength=text_limit(max_length).to_string()
                aria-required=required
                aria-invalid=invalid
                aria-describedby=describedby
                prop:value=move || text.get()
                on:input=on_text
            ></textarea>
        }
        .into_any(),
        FieldKind::Boolean => view! {
            <input
                id=id
                name=name
                type="checkbox"
                class="checkbox"
                aria-invalid=invalid
                aria-describedby=describedby
                prop:checked=move || checked.get()
                on:change=move |ev| {
                    checked.set(event_target_checked(&ev));
                    problem.set(None);
                }
            />
        }
        .into_any(),
        FieldKind::Choice { options } if options.len() <= RADIO_MAX => {
            let radios = options.into_iter().enumerate().map(|(i, opt)| radio(&id, i, opt, state)).collect_view();
            view! {
                <div
                    class="radios"
                    role="radiogroup"
                    aria-labelledby=format!("{id}-label")
                    aria-required=required
                    aria-invalid=invalid
                    aria-describedby=describedby
                >
                    {radios}
                </div>
            }
            .into_any()
        }
        FieldKind::Choice { options } => {
            let options = options
                .into_iter()
                .map(|opt| {
                    let (selected, value) = (opt.clone(), opt.clone());
                    view! {
                        <option value=value prop:selected=move || text.with(|t| *t == selected)>
                            {opt}
                        </option>
                    }
                })
                .collect_view();
            view! {
                <select
                    id=id
                    name=name
                    class="input input--select"
                    aria-required=required
                    aria-invalid=invalid
                    aria-describedby=describedby
                    on:change=on_text
                >
                    <option value="" prop:selected=move || text.with(String::is_empty)>
                        {tr(|t| t.choose)}
                    </option>
                    {options}
                </select>
            }
            .into_any()
        }
    }
}

/// One option of a radio group (`{id}-{i}`; the group shares the name `{id}`).
fn radio(id: &str, i: usize, opt: String, state: &FieldState) -> impl IntoView {
    let (text, problem) = (state.text, state.problem);
    let rid = format!("{id}-{i}");
    let label_for = rid.clone();
    let (value, is_on, attr) = (opt.clone(), opt.clone(), opt.clone());
    view! {
        <label class="radio" for=label_for>
            <input
                id=rid
                type="radio"
                name=id.to_owned()
                value=attr
                prop:checked=move || text.with(|t| *t == is_on)
                on:change=move |_| {
                    text.set(value.clone());
                    problem.set(None);
                }
            />
            <span>{opt}</span>
        </label>
    }
}

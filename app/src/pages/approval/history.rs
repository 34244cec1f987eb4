//! The audit trail: every recorded decision with its comment and feedback.

use leptos::prelude::*;
use ringi_core::base::status::Verdict;
use ringi_core::domain::vote::AuditEntry;
use serde_json::{Map, Value};

use super::state::use_approval;
use crate::components::rows_view;
use crate::context::{tr, use_app, AppContext};
use crate::infra::time;

#[component]
pub fn History() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    move || {
        let decisions = state.listed(|v| &v.decisions)?;
        let (labels, status) = state.view.with(|v| {
            let v = v.as_ref()?;
            // Feedback is shown under the form's labels, in the form's order.
            let labels: Vec<(String, String)> = v.form.iter().map(|f| (f.name.clone(), f.label.clone())).collect();
            Some((labels, v.status))
        })?;
        if decisions.is_empty() && !status.is_final() {
            return None;
        }
        let entries = if decisions.is_empty() {
            view! { <p class="muted">{tr(|t| t.audit_empty)}</p> }.into_any()
        } else {
            let entries = decisions.into_iter().map(|d| audit_entry(ctx, d, &labels)).collect_view();
            view! { <ol class="audit">{entries}</ol> }.into_any()
        };
        Some(view! {
            <section class="card" aria-labelledby="history-title" data-testid="history">
                <h2 id="history-title" class="card__title">{tr(|t| t.audit_heading)}</h2>
                {entries}
            </section>
        })
    }
}

/// Feedback rows: the form's fields first (by label, in order), then anything else under its name.
fn feedback_rows(feedback: &Map<String, Value>, labels: &[(String, String)]) -> Vec<(String, Value)> {
    let mut rows: Vec<(String, Value)> =
        labels.iter().filter_map(|(name, label)| feedback.get(name).map(|v| (label.clone(), v.clone()))).collect();
    rows.extend(
        feedback
            .iter()
            .filter(|(k, _)| !labels.iter().any(|(name, _)| name == *k))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    rows
}

fn audit_entry(ctx: AppContext, d: AuditEntry, labels: &[(String, String)]) -> impl IntoView {
    let approve = d.verdict() == Some(Verdict::Approve);
    let at = d.at.clone();
    let when = move || time::absolute_str(&at, ctx.locale.get());
    let verb = move || if approve { ctx.texts().audit_approved } else { ctx.texts().audit_rejected };
    let feedback = d.feedback.filter(|f| !f.is_empty()).map(|f| {
        let rows = feedback_rows(&f, labels);
        view! {
            <div class="audit__feedback">
                <p class="audit__label">{tr(|t| t.feedback_label)}</p>
                {move || rows_view(&rows, ctx.texts(), 1)}
            </div>
        }
    });
    view! {
        <li
            class="audit__entry"
            class:audit__entry--approve=approve
            class:audit__entry--reject=!approve
            data-testid="audit-entry"
        >
            <p class="audit__line">
                <span class="audit__mark" aria-hidden="true">
                    {if approve { "✓" } else { "✕" }}
                </span>
                <strong class="audit__who">{d.by}</strong>
                " "
                <span class="audit__verb">{verb}</span>
                " · "
                <time datetime=d.at>{when}</time>
            </p>
            {d.comment.filter(|c| !c.is_empty()).map(|c| view! { <p class="audit__comment">{c}</p> })}
            {feedback}
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::feedback_rows;
    use serde_json::json;

    #[test]
    fn feedback_follows_the_form() {
        let feedback = json!({"extra": 1, "risk": "low", "ticket": "CHG-1"});
        let labels = vec![("ticket".to_owned(), "Change ticket".to_owned()), ("risk".to_owned(), "Risk".to_owned())];
        let rows = feedback_rows(feedback.as_object().unwrap(), &labels);
        let names: Vec<&str> = rows.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["Change ticket", "Risk", "extra"]);
    }
}

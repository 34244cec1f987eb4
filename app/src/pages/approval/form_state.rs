//! The answers being typed on the approval page: the feedback fields, the comment, their problems, and the
//! draft kept in sessionStorage while the user signs in again.

use leptos::prelude::*;
use ringi_core::api::decision::COMMENT_MAX_CHARS;
use ringi_core::api::wire::ApprovalView;
use ringi_core::domain::form::DecisionField;
use ringi_core::domain::form::{FieldKind, Issue};
use serde_json::{Map, Value};

use super::feedback::{self, Draft, FieldProblem, FieldState, RADIO_MAX};
use crate::context::focus_id;
use crate::infra::storage;

/// The sessionStorage key of an approval's draft is this prefix and its ID.
const DRAFT_KEY_PREFIX: &str = "ringi.draft.";

fn draft_key(id: &str) -> String {
    format!("{DRAFT_KEY_PREFIX}{id}")
}

#[derive(Clone, Copy)]
pub struct FormState {
    pub fields: RwSignal<Vec<FieldState>>,
    pub comment: RwSignal<String>,
    pub comment_problem: RwSignal<Option<FieldProblem>>,
    /// The answers came back from a draft after signing in again.
    pub restored: RwSignal<bool>,
    adopted: StoredValue<bool>,
}

impl FormState {
    pub fn new() -> Self {
        FormState {
            fields: RwSignal::new(Vec::new()),
            comment: RwSignal::new(String::new()),
            comment_problem: RwSignal::new(None),
            restored: RwSignal::new(false),
            adopted: StoredValue::new(false),
        }
    }

    /// Takes the form of the first view loaded (later reloads keep what is typed), refilled from a draft
    /// kept while signing in again.
    pub fn adopt(self, id: &str, view: &ApprovalView) {
        if self.adopted.get_value() {
            return;
        }
        self.adopted.set_value(true);
        let states: Vec<FieldState> = view.form.iter().cloned().map(FieldState::new).collect();
        if let Some(draft) = storage::session_get_json::<Draft>(&draft_key(id)) {
            storage::session_remove(&draft_key(id));
            feedback::restore(&states, &draft);
            self.comment.set(draft.comment);
            self.restored.set(true);
        }
        self.fields.set(states);
    }

    /// Keeps what was typed (if anything) for the page the user comes back to after signing in again.
    pub fn stash(self, id: &str) {
        let draft = self.fields.with_untracked(|f| feedback::draft_of(f, &self.comment.get_untracked()));
        if !draft.is_empty() {
            storage::session_set_json(&draft_key(id), &draft);
        }
    }

    /// The decision went through: no draft to come back to.
    pub fn forget_draft(self, id: &str) {
        storage::session_remove(&draft_key(id));
        self.restored.set(false);
    }

    /// Checks every field and the comment, marking the problems; the feedback object when all are fine.
    pub fn check(self) -> Option<Map<String, Value>> {
        let feedback = feedback::collect(&self.fields.get_untracked()).ok()?;
        let too_long = self.comment.with_untracked(|c| c.chars().count() > COMMENT_MAX_CHARS);
        self.comment_problem.set(too_long.then_some(FieldProblem::Issue(Issue::TooLong(COMMENT_MAX_CHARS))));
        (!too_long).then_some(feedback)
    }

    /// Some field or the comment is marked (tracked): "please correct the marked fields" stands while so.
    pub fn marked(self) -> bool {
        self.fields.with(|list| list.iter().any(|s| s.problem.with(Option::is_some)))
            || self.comment_problem.with(Option::is_some)
    }

    /// A 400 naming `feedback.X` or `comment`: shows the message next to that field. `false` when the field is
    /// not on the page.
    pub fn place(self, field: &str, message: &str) -> bool {
        let problem = Some(FieldProblem::Server(message.to_owned()));
        match DecisionField::parse(field) {
            Some(DecisionField::Comment) => {
                self.comment_problem.set(problem);
                true
            }
            Some(DecisionField::Feedback(name)) => self.fields.with_untracked(|list| {
                list.iter().find(|s| s.field.name == name).map(|s| s.problem.set(problem)).is_some()
            }),
            None => false,
        }
    }

    pub fn focus_first_problem(self) {
        let first = self.fields.with_untracked(|list| {
            list.iter().find(|s| s.problem.get_untracked().is_some()).map(|s| match s.field.kind {
                // A radio group: its first radio.
                FieldKind::Choice { ref options } if options.len() <= RADIO_MAX => format!("{}-0", s.dom_id()),
                _ => s.dom_id(),
            })
        });
        match first {
            Some(id) => focus_id(&id),
            None if self.comment_problem.get_untracked().is_some() => focus_id("comment"),
            None => {}
        }
    }
}

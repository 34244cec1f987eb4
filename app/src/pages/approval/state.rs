//! The approval page's state, one `Copy` struct in context: the approval (a resource), the answers being
//! typed, and the decision (an action). Opening the page never decides anything (mail scanners open links
//! too): only the confirm button of the dialog dispatches a decision.

use leptos::html;
use leptos::prelude::*;
use ringi_core::api::decision::DecisionRequest;
use ringi_core::api::deferred::Deferred;
use ringi_core::api::wire::{ApprovalView, DecisionResponse};
use ringi_core::base::error::ErrorDetail;
use ringi_core::base::sign_in::SignInRequirement;
use ringi_core::base::status::{ApprovalStatus, Verdict};

use super::form_state::FormState;
use crate::context::{focus_id, use_app};
use crate::infra::api::{self, ApiError};
use crate::infra::{auth, time};

/// What the page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Loading,
    Ready,
    NotFound,
    Failed,
    /// The token was refused or ran out: sign in again (the answers are kept).
    SignIn,
}

impl Phase {
    /// `have_view`: an earlier load succeeded (a failed reload keeps that page).
    pub fn of(loaded: Option<&Result<ApprovalView, ApiError>>, have_view: bool) -> Self {
        match loaded {
            None => Phase::Loading,
            Some(Ok(_)) => Phase::Ready,
            Some(Err(ApiError::Unauthorized)) => Phase::SignIn,
            Some(Err(ApiError::NotFound)) => Phase::NotFound,
            Some(Err(_)) if have_view => Phase::Ready,
            Some(Err(_)) => Phase::Failed,
        }
    }
}

/// What became of the last decision attempt.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Done {
        verdict: Verdict,
        response: DecisionResponse,
    },
    /// 409: explained by its code, and the view is reloaded.
    Conflict(ErrorDetail),
    NotFound,
    /// Network / 503: nothing decided, the form is kept, Retry sends the same decision again.
    Retry(Verdict, String),
    /// 400 without a field on the page, 413, 5xx.
    Failed(String),
    /// A 400 named fields of the form: the messages stand next to them.
    FixFields,
    /// 401: the page signs in again, keeping the answers.
    SignIn,
    /// 401 `step_up_required`: the page signs in again as the approval asks, keeping the answers.
    StepUp(SignInRequirement),
}

impl Outcome {
    /// `place` puts a 400's message next to the field it names; `false` when that field is not on the page.
    pub fn of(
        verdict: Verdict,
        result: Result<DecisionResponse, ApiError>,
        place: impl Fn(&str, &str) -> bool,
    ) -> Self {
        match result {
            Ok(response) => Outcome::Done { verdict, response },
            Err(ApiError::Unauthorized) => Outcome::SignIn,
            Err(ApiError::StepUp(needed)) => Outcome::StepUp(needed),
            Err(ApiError::NotFound) => Outcome::NotFound,
            Err(ApiError::Conflict(e)) => Outcome::Conflict(e),
            Err(ApiError::Invalid { field: Some(field), message }) if place(&field, &message) => Outcome::FixFields,
            Err(ApiError::Invalid { message, .. }) => Outcome::Failed(message),
            Err(ApiError::Unavailable(message)) => Outcome::Retry(verdict, message),
            Err(e @ ApiError::Server { .. }) => Outcome::Failed(e.to_string()),
        }
    }

    /// Announced in the outcome area, which takes focus; field problems take it to the first bad field.
    pub fn announced(&self) -> bool {
        !matches!(self, Outcome::FixFields | Outcome::SignIn | Outcome::StepUp(_))
    }
}

#[derive(Clone, Copy)]
pub struct ApprovalState {
    pub approval: LocalResource<Result<ApprovalView, ApiError>>,
    /// The last view loaded (kept when a reload fails).
    pub view: Memo<Option<ApprovalView>>,
    pub status: Memo<Option<ApprovalStatus>>,
    pub can_decide: Memo<bool>,
    /// The approval is loading again (after a decision, or a retry).
    pub reloading: RwSignal<bool>,
    pub form: FormState,
    pub decide: Action<(Verdict, DecisionRequest), Outcome>,
    /// The last decision attempt's outcome; `None` while the next is on its way.
    pub outcome: MappedSignal<Option<Outcome>>,
    pub sending: Memo<bool>,
    /// The verdict the confirmation dialog asks about.
    pub confirming: RwSignal<Option<Verdict>>,
    pub dialog: NodeRef<html::Dialog>,
    signing_in: RwSignal<bool>,
    /// What the sign-in the page is leaving for must show (a step-up), if anything.
    pub step_up: RwSignal<Option<SignInRequirement>>,
    id: StoredValue<String>,
}

impl ApprovalState {
    pub fn new(id: String) -> Self {
        let now = use_app().now;
        let id = StoredValue::new(id);
        let form = FormState::new();
        let approval = LocalResource::new(move || {
            let id = id.get_value();
            async move {
                // The first call takes the response of the request app/boot.js started (api::approval).
                let result = api::approval(&id).await;
                match &result {
                    Ok(view) => form.adopt(&id, view),
                    Err(ApiError::Unauthorized) => form.stash(&id),
                    Err(_) => {}
                }
                result
            }
        });
        let view = Memo::new(move |prev: Option<&Option<ApprovalView>>| {
            approval.with(|r| match r {
                Some(Ok(v)) => Some(v.clone()),
                _ => prev.cloned().flatten(),
            })
        });
        // What the user should see: past its expiry a pending request is over, even before the server has
        // marked it; a claim in flight is still pending (an expiry that does not parse never passes).
        let status = Memo::new(move |_| {
            view.with(|v| {
                let v = v.as_ref()?;
                let expires = time::parse(&v.expires_at).map_or(i64::MAX, |ms| ms as i64);
                Some(v.status.effective(expires, now.get() as i64))
            })
        });
        let signing_in = RwSignal::new(false);
        let step_up = RwSignal::new(None);
        let decide = Action::new_local(move |(verdict, request): &(Verdict, DecisionRequest)| {
            let (verdict, request, id) = (*verdict, request.clone(), id.get_value());
            async move {
                let result = api::decide(&id, &request).await;
                let outcome = Outcome::of(verdict, result, |field, message| form.place(field, message));
                match &outcome {
                    Outcome::Done { .. } => {
                        form.forget_draft(&id);
                        approval.refetch();
                    }
                    Outcome::Conflict(_) => approval.refetch(),
                    Outcome::SignIn => {
                        form.stash(&id);
                        signing_in.set(true);
                    }
                    Outcome::StepUp(needed) => {
                        form.stash(&id);
                        step_up.set(Some(needed.clone()));
                        signing_in.set(true);
                    }
                    Outcome::FixFields => form.focus_first_problem(),
                    _ => {}
                }
                if outcome.announced() {
                    focus_id("decision-outcome");
                }
                outcome
            }
        });
        let outcome = decide.value();
        let can_decide = Memo::new(move |_| {
            status.get() == Some(ApprovalStatus::Pending)
                && view.with(|v| v.as_ref().is_some_and(|v| v.can_decide))
                && !outcome.with(|o| matches!(o, Some(Outcome::Done { .. })))
        });
        ApprovalState {
            approval,
            view,
            status,
            can_decide,
            reloading: RwSignal::new(false),
            form,
            decide,
            outcome,
            sending: decide.pending(),
            confirming: RwSignal::new(None),
            dialog: NodeRef::new(),
            signing_in,
            step_up,
            id,
        }
    }

    /// A list the approval carries as plain JSON ([`Deferred`]), decoded where it is shown (tracked); `None` until
    /// the approval is loaded. A list that is not what this build reads shows as empty, not as a failed page.
    pub fn listed<T: serde::de::DeserializeOwned>(
        self,
        list: fn(&ApprovalView) -> &Deferred<Vec<T>>,
    ) -> Option<Vec<T>> {
        self.view.with(|v| v.as_ref().map(|v| list(v).decode().unwrap_or_default()))
    }

    pub fn phase(self) -> Phase {
        if self.signing_in.get() {
            return Phase::SignIn;
        }
        let have_view = self.view.with(Option::is_some);
        self.approval.with(|r| Phase::of(r.as_ref(), have_view))
    }

    /// The approval's ID.
    pub fn id(self) -> String {
        self.id.get_value()
    }

    /// Why the approval could not be loaded, as one line.
    pub fn load_error(self) -> String {
        self.approval.with(|r| r.as_ref().and_then(|r| r.as_ref().err()).map(ToString::to_string)).unwrap_or_default()
    }

    /// Approve / Reject: check the form first, then ask for confirmation in a modal dialog.
    pub fn ask(self, verdict: Verdict) {
        self.decide.clear();
        if self.form.check().is_none() {
            self.form.focus_first_problem();
            return;
        }
        // The token may run out while the user reads, or be an older sign-in than the approval takes: sign in
        // again first (as the approval asks), keeping the answers.
        let needed =
            self.view.with_untracked(|v| v.as_ref().filter(|v| v.step_up).and_then(|v| v.require_sign_in.clone()));
        if auth::bearer().is_none() || needed.is_some() {
            self.form.stash(&self.id.get_value());
            self.step_up.set(needed);
            self.signing_in.set(true);
            return;
        }
        self.confirming.set(Some(verdict));
        if let Some(dialog) = self.dialog.get_untracked() {
            let _ = dialog.show_modal();
        }
    }

    pub fn close_dialog(self) {
        if let Some(dialog) = self.dialog.get_untracked() {
            dialog.close();
        }
    }

    /// The dialog's confirm button.
    pub fn confirm(self) {
        let verdict = self.confirming.get_untracked();
        self.close_dialog();
        if let Some(verdict) = verdict {
            self.send(verdict);
        }
    }

    /// Sends the decision (confirmed, or Retry after a failure that decided nothing).
    pub fn send(self, verdict: Verdict) {
        if self.sending.get_untracked() {
            return;
        }
        self.decide.clear();
        let Some(feedback) = self.form.check() else {
            self.form.focus_first_problem();
            return;
        };
        let comment = self.form.comment.get_untracked();
        let request = DecisionRequest {
            decision: verdict,
            comment: (!comment.trim().is_empty()).then_some(comment),
            feedback: (!feedback.is_empty()).then_some(feedback),
        };
        self.decide.dispatch_local((verdict, request));
    }
}

pub fn use_approval() -> ApprovalState {
    expect_context::<ApprovalState>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringi_core::domain::vote::Progress;

    fn response(status: ApprovalStatus) -> DecisionResponse {
        DecisionResponse { id: "a".into(), status, verdict: None, progress: Progress { approvals: 1, required: 1 } }
    }

    #[test]
    fn outcomes_of_a_decision() {
        let nowhere = |_: &str, _: &str| false;
        let ok = Outcome::of(Verdict::Approve, Ok(response(ApprovalStatus::Approved)), nowhere);
        assert!(matches!(ok, Outcome::Done { verdict: Verdict::Approve, .. }));
        let conflict =
            ErrorDetail { code: "already_decided".into(), message: "m".into(), field: None, require_sign_in: None };
        assert_eq!(
            Outcome::of(Verdict::Reject, Err(ApiError::Conflict(conflict.clone())), nowhere),
            Outcome::Conflict(conflict)
        );
        assert_eq!(
            Outcome::of(Verdict::Reject, Err(ApiError::Unavailable("down".into())), nowhere),
            Outcome::Retry(Verdict::Reject, "down".into())
        );
        let server = ApiError::Server { status: 502, message: "upstream".into() };
        assert_eq!(Outcome::of(Verdict::Approve, Err(server), nowhere), Outcome::Failed("HTTP 502: upstream".into()));
        assert_eq!(Outcome::of(Verdict::Approve, Err(ApiError::Unauthorized), nowhere), Outcome::SignIn);
        let fresh = SignInRequirement { max_age_seconds: Some(300), ..Default::default() };
        let step_up = Outcome::of(Verdict::Approve, Err(ApiError::StepUp(fresh.clone())), nowhere);
        assert_eq!(step_up, Outcome::StepUp(fresh));
        assert!(!step_up.announced());
        assert!(!Outcome::SignIn.announced() && !Outcome::FixFields.announced() && Outcome::NotFound.announced());
    }

    #[test]
    fn a_field_error_lands_next_to_its_field_when_it_is_on_the_page() {
        let invalid = |field: &str| ApiError::Invalid { field: Some(field.into()), message: "bad".into() };
        let on_page = |field: &str, message: &str| field == "feedback.risk" && message == "bad";
        assert_eq!(Outcome::of(Verdict::Approve, Err(invalid("feedback.risk")), on_page), Outcome::FixFields);
        assert_eq!(
            Outcome::of(Verdict::Approve, Err(invalid("feedback.gone")), on_page),
            Outcome::Failed("bad".into())
        );
        let no_field = ApiError::Invalid { field: None, message: "too large".into() };
        assert_eq!(Outcome::of(Verdict::Approve, Err(no_field), on_page), Outcome::Failed("too large".into()));
    }

    #[test]
    fn phases() {
        let view: ApprovalView = serde_json::from_value(serde_json::json!({
            "id": "a", "status": "pending", "title": "t", "summary": "", "details": {}, "form": [],
            "approvers": [], "quorum": "any",
            "createdAt": "2026-01-01T00:00:00Z", "expiresAt": "2026-01-02T00:00:00Z",
            "progress": {"approvals": 0, "required": 1}, "decisions": [], "context": {}
        }))
        .unwrap();
        assert_eq!(Phase::of(None, false), Phase::Loading);
        assert_eq!(Phase::of(Some(&Ok(view)), false), Phase::Ready);
        let down = Err(ApiError::Unavailable("down".into()));
        assert_eq!(Phase::of(Some(&down), false), Phase::Failed);
        assert_eq!(Phase::of(Some(&down), true), Phase::Ready, "a failed reload keeps the page");
        assert_eq!(Phase::of(Some(&Err(ApiError::NotFound)), true), Phase::NotFound);
        assert_eq!(Phase::of(Some(&Err(ApiError::Unauthorized)), true), Phase::SignIn);
    }
}

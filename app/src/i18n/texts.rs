//! The shape of one language's texts: every string the UI shows, and the functions for texts with numbers.

use ringi_core::domain::form::{json_number, Issue};

use super::audit;
use super::delegation;

pub struct Texts {
    // shell
    pub skip_to_content: &'static str,
    pub home_label: &'static str,
    pub loading: &'static str,
    pub config_error_title: &'static str,
    pub config_error_body: &'static str,
    pub retry: &'static str,
    pub retrying: &'static str,
    pub part_error_title: &'static str,
    pub part_error_body: &'static str,
    pub not_found_title: &'static str,
    pub not_found_body: &'static str,
    pub back_to_inbox: &'static str,
    pub version_label: &'static str,
    /// The name of the *other* language, in that language (the switch's visible text).
    pub other_language: &'static str,
    /// Hidden prefix of the language switch for screen readers.
    pub switch_language: &'static str,
    // sign-in
    pub sign_in: &'static str,
    pub sign_out: &'static str,
    pub signed_in_as: &'static str,
    pub redirecting: &'static str,
    pub signing_in: &'static str,
    pub sign_in_failed_title: &'static str,
    pub sign_in_failed_body: &'static str,
    pub sign_in_refused_body: &'static str,
    pub welcome_title: &'static str,
    pub welcome_body: &'static str,
    pub signed_out_notice: &'static str,
    // inbox
    pub inbox_title: &'static str,
    pub inbox_tabs_label: &'static str,
    pub tab_pending: &'static str,
    pub tab_decided: &'static str,
    pub refresh: &'static str,
    pub refreshing: &'static str,
    pub load_more: &'static str,
    pub loading_more: &'static str,
    pub empty_pending_title: &'static str,
    pub empty_pending_body: &'static str,
    pub empty_decided_title: &'static str,
    pub empty_decided_body: &'static str,
    pub inbox_error_title: &'static str,
    pub count_pending: fn(usize, bool) -> String,
    pub count_decided: fn(usize, bool) -> String,
    pub expires: fn(&str) -> String,
    pub expired_when: fn(&str) -> String,
    pub decided_when: fn(&str) -> String,
    pub requested_by: &'static str,
    /// The authenticated registrant (API key or machine client), apart from the free-text "requested by".
    pub registered_by: &'static str,
    pub execution: &'static str,
    pub step: &'static str,
    /// The people registered as having asked (`requestedBy`).
    pub requester: &'static str,
    /// The approval page, for a requester: why there is no decision form.
    pub self_approval_notice: &'static str,
    /// An inbox row the caller asked for (cannot decide).
    pub self_approval_mark: &'static str,
    /// While pending, what ringi does if nobody decides (approve?).
    pub on_expiry_notice: fn(bool) -> &'static str,
    /// Decided by ringi on expiry (approved?).
    pub auto_decided_notice: fn(bool) -> &'static str,
    /// An inbox row decided automatically on expiry.
    pub auto_decided_mark: &'static str,
    pub progress: fn(u32, u32) -> String,
    // statuses
    pub status_pending: &'static str,
    pub status_approved: &'static str,
    pub status_rejected: &'static str,
    pub status_expired: &'static str,
    /// `decided_unconfirmed`, by verdict (approve, reject).
    pub status_unconfirmed: fn(bool) -> &'static str,
    /// The approval page's notice for `decided_unconfirmed`: (approve?, who sent it).
    pub unconfirmed_notice: fn(bool, &str) -> String,
    /// The caller's own decision ended `decided_unconfirmed` (approve?).
    pub result_unconfirmed: fn(bool) -> String,
    // approval page
    pub approval_title: &'static str,
    pub created_label: &'static str,
    pub expires_label: &'static str,
    pub decided_label: &'static str,
    pub approvals_label: &'static str,
    pub summary_heading: &'static str,
    pub details_heading: &'static str,
    pub items: fn(usize) -> String,
    pub empty_value: &'static str,
    pub form_heading: &'static str,
    pub required: &'static str,
    pub choose: &'static str,
    pub comment_label: &'static str,
    pub comment_help: &'static str,
    pub max_chars: fn(usize) -> String,
    pub range: fn(Option<f64>, Option<f64>) -> String,
    pub approve: &'static str,
    pub reject: &'static str,
    pub decide_hint: &'static str,
    pub confirm_approve_title: &'static str,
    pub confirm_reject_title: &'static str,
    pub confirm_approve_body: &'static str,
    pub confirm_reject_body: &'static str,
    pub confirm_approve: &'static str,
    pub confirm_reject: &'static str,
    pub cancel: &'static str,
    pub sending: &'static str,
    pub result_approved: &'static str,
    pub result_rejected: &'static str,
    pub result_recorded: fn(u32, u32) -> String,
    pub expired_notice: fn(&str) -> String,
    pub decided_notice_approved: &'static str,
    pub decided_notice_rejected: &'static str,
    pub you_approved: fn(&str) -> String,
    pub you_rejected: fn(&str) -> String,
    pub waiting_for_others: fn(u32, u32) -> String,
    pub audit_heading: &'static str,
    pub audit_empty: &'static str,
    pub audit_approved: &'static str,
    pub audit_rejected: &'static str,
    pub feedback_label: &'static str,
    pub draft_restored: &'static str,
    /// The approval asks for a recent (or stronger) sign-in (`requireSignIn`).
    pub step_up_notice: &'static str,
    pub yes: &'static str,
    pub no: &'static str,
    // errors
    pub err_already_decided: &'static str,
    pub err_expired: &'static str,
    pub err_in_progress: &'static str,
    pub err_already_voted: &'static str,
    pub err_already_satisfied: &'static str,
    pub err_conflict: &'static str,
    pub err_not_found_title: &'static str,
    pub err_not_found_body: &'static str,
    pub err_unavailable: &'static str,
    pub err_load_failed: &'static str,
    pub err_fix_fields: &'static str,
    pub err_server: &'static str,
    pub field_required: &'static str,
    pub field_too_long: fn(usize) -> String,
    pub field_not_option: &'static str,
    pub field_not_number: &'static str,
    pub field_out_of_range: fn(Option<f64>, Option<f64>) -> String,
    /// A value the form itself cannot produce (not text, not true/false, no such field).
    pub field_invalid: &'static str,
    /// A field the worker refused (a 400 naming it). Its message is English: only the English UI shows it.
    pub server_refused: fn(&str) -> String,
    /// The event log (timeline, audit page).
    pub audit: &'static audit::AuditTexts,
    // schedule: reminders and escalation
    pub schedule_heading: &'static str,
    pub next_reminder_label: &'static str,
    pub no_more_reminders: &'static str,
    pub reminders_label: &'static str,
    /// A reminder that went out (when).
    pub reminder_sent: fn(&str) -> String,
    pub reminder_skipped: &'static str,
    pub reminder_due: &'static str,
    pub escalation_label: &'static str,
    /// The escalation: (when, to whom).
    pub escalation_planned: fn(&str, &str) -> String,
    /// The approval page's notice once escalated: (when, to whom).
    pub escalated_notice: fn(&str, &str) -> String,
    pub escalation_note_label: &'static str,
    /// The inbox's and the schedule's mark of an escalated approval.
    pub escalated_badge: &'static str,
    /// A group principal in a list of people.
    pub group_principal: fn(&str) -> String,
    /// Delegation, out of office, settings.
    pub delegation: &'static delegation::DelegationTexts,
}

impl Texts {
    /// Why a feedback value or the comment is refused (core's `Issue`, as the worker's rules find it).
    pub fn issue(&self, issue: &Issue) -> String {
        match issue {
            Issue::Required => self.field_required.into(),
            Issue::TooLong(n) => (self.field_too_long)(*n),
            Issue::NotAnOption => self.field_not_option.into(),
            Issue::NotANumber => self.field_not_number.into(),
            Issue::OutOfRange { min, max } => (self.field_out_of_range)(*min, *max),
            Issue::NotText | Issue::NotABoolean | Issue::UnknownField => self.field_invalid.into(),
        }
    }
}

/// A bound of a number field as people write it (`5`, not `5.0`), in its texts and its input's `min`/`max`. A fraction
/// is written by serde_json's shortest round-trip formatting, which the app carries anyway (core's `f64` Display
/// would add its own, ≈ 7 KB of wasm).
pub fn num(n: f64) -> String {
    json_number(n).map(|x| x.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::num;

    #[test]
    fn numbers_are_written_as_people_write_them() {
        for (n, text) in
            [(5.0, "5"), (-3.0, "-3"), (0.0, "0"), (2.5, "2.5"), (-0.125, "-0.125"), (0.1, "0.1"), (1e300, "1e+300")]
        {
            assert_eq!(num(n), text, "{n}");
        }
        assert_eq!((crate::i18n::en::EN.range)(Some(0.5), Some(100.0)), "Between 0.5 and 100.");
    }
}

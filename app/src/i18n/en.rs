//! English UI strings.

use super::texts::{num, Texts};

pub(super) const EN: Texts = Texts {
    skip_to_content: "Skip to main content",
    home_label: " (inbox)",
    loading: "Loading…",
    config_error_title: "ringi could not start",
    config_error_body: "The app configuration could not be loaded. Check your connection and try again.",
    retry: "Try again",
    retrying: "Trying again…",
    part_error_title: "Part of this page could not be loaded",
    part_error_body: "Check your connection and try again.",
    not_found_title: "Page not found",
    not_found_body: "There is nothing at this address. Approval links look like /a/ followed by an ID.",
    back_to_inbox: "Back to the inbox",
    version_label: "Version",
    other_language: "日本語",
    switch_language: "Language:",
    sign_in: "Sign in",
    sign_out: "Sign out",
    signed_in_as: "Signed in as",
    redirecting: "Taking you to sign-in…",
    signing_in: "Signing you in…",
    sign_in_failed_title: "Sign-in did not complete",
    sign_in_failed_body: "Your sign-in could not be finished. This happens when the sign-in page was opened in another tab or took too long. Please sign in again.",
    sign_in_refused_body: "You are signed in, but ringi did not accept the sign-in. Please try again; if it keeps happening, contact your administrator.",
    welcome_title: "Approvals, from anywhere",
    welcome_body: "Review and decide the approval requests of your AWS workflows. Sign in to see the requests waiting for you.",
    signed_out_notice: "You have been signed out.",
    inbox_title: "Inbox",
    inbox_tabs_label: "Which requests",
    tab_pending: "Pending",
    tab_decided: "Decided",
    refresh: "Refresh",
    refreshing: "Refreshing…",
    load_more: "Load more",
    loading_more: "Loading more…",
    empty_pending_title: "Nothing waiting for you",
    empty_pending_body: "When a workflow asks for your approval, it shows up here and you get an email with a link.",
    empty_decided_title: "No decided requests yet",
    empty_decided_body: "Requests you approved, rejected or that expired are listed here.",
    inbox_error_title: "The inbox could not be loaded",
    count_pending: |n, more| match (n, more) {
        (0, _) => "No pending requests".into(),
        (1, false) => "1 pending request".into(),
        (n, false) => format!("{n} pending requests"),
        (n, true) => format!("{n} pending requests shown, more available"),
    },
    count_decided: |n, more| match (n, more) {
        (0, _) => "No decided requests".into(),
        (1, false) => "1 decided request".into(),
        (n, false) => format!("{n} decided requests"),
        (n, true) => format!("{n} decided requests shown, more available"),
    },
    expires: |rel| format!("Expires {rel}"),
    expired_when: |rel| format!("Expired {rel}"),
    decided_when: |rel| format!("Decided {rel}"),
    requested_by: "Requested by",
    registered_by: "Registered by",
    execution: "Execution",
    step: "Step",
    requester: "Requester",
    self_approval_notice: "You requested this approval, so you cannot approve or reject it yourself (separation of \
                           duty). Another approver decides.",
    self_approval_mark: "Your own request: another approver decides",
    on_expiry_notice: |approve| {
        if approve {
            "If nobody decides before it expires, ringi approves it automatically."
        } else {
            "If nobody decides before it expires, ringi rejects it automatically."
        }
    },
    auto_decided_notice: |approved| {
        if approved {
            "Nobody decided in time: ringi approved this request automatically on expiry, as it was registered to."
        } else {
            "Nobody decided in time: ringi rejected this request automatically on expiry, as it was registered to."
        }
    },
    auto_decided_mark: "Decided automatically on expiry",
    progress: |k, n| if n == 1 { format!("{k} of 1 approval") } else { format!("{k} of {n} approvals") },
    status_pending: "Pending",
    status_approved: "Approved",
    status_rejected: "Rejected",
    status_expired: "Expired",
    status_unconfirmed: |approve| if approve { "Approved, unconfirmed" } else { "Rejected, unconfirmed" },
    unconfirmed_notice: |approve, by| {
        format!(
            "{by}'s decision ({}) was sent to the workflow, but Step Functions did not confirm it before the task \
             closed. The workflow most likely continued with it: check the execution to be sure. This request can no \
             longer be decided.",
            if approve { "approve" } else { "reject" }
        )
    },
    result_unconfirmed: |approve| {
        format!(
            "Your decision ({}) was sent, but Step Functions did not confirm it before the task closed. The workflow \
             most likely continued with it: check the execution to be sure.",
            if approve { "approve" } else { "reject" }
        )
    },
    approval_title: "Approval request",
    created_label: "Requested",
    expires_label: "Expires",
    decided_label: "Decided",
    approvals_label: "Approvals",
    summary_heading: "Summary",
    details_heading: "Details",
    items: |n| if n == 1 { "1 item".into() } else { format!("{n} items") },
    empty_value: "(empty)",
    form_heading: "Your decision",
    required: "required",
    choose: "Choose…",
    comment_label: "Comment",
    comment_help: "Optional. Passed to the workflow and kept in the history.",
    max_chars: |n| format!("At most {n} characters."),
    range: |min, max| match (min, max) {
        (Some(a), Some(b)) => format!("Between {} and {}.", num(a), num(b)),
        (Some(a), None) => format!("At least {}.", num(a)),
        (None, Some(b)) => format!("At most {}.", num(b)),
        (None, None) => String::new(),
    },
    approve: "Approve",
    reject: "Reject",
    decide_hint: "You will be asked to confirm. Nothing is decided until then.",
    confirm_approve_title: "Approve this request?",
    confirm_reject_title: "Reject this request?",
    confirm_approve_body: "The workflow continues with your approval. This cannot be undone.",
    confirm_reject_body: "The workflow is told that the request was rejected. This cannot be undone.",
    confirm_approve: "Yes, approve",
    confirm_reject: "Yes, reject",
    cancel: "Cancel",
    sending: "Sending…",
    result_approved: "Approved. The workflow continues.",
    result_rejected: "Rejected. The workflow has been told.",
    result_recorded: |k, n| {
        format!("Your approval is recorded: {k} of {n} approvals. The request stays open until enough approvers agree.")
    },
    expired_notice: |when| {
        format!("This request expired ({when}). It can no longer be approved or rejected; the workflow has treated it as timed out.")
    },
    decided_notice_approved: "This request has been approved.",
    decided_notice_rejected: "This request has been rejected.",
    you_approved: |when| format!("You approved this request ({when})."),
    you_rejected: |when| format!("You rejected this request ({when})."),
    waiting_for_others: |k, n| format!("Waiting for other approvers: {k} of {n} approvals so far."),
    audit_heading: "History",
    audit_empty: "No decisions recorded yet.",
    audit_approved: "approved",
    audit_rejected: "rejected",
    feedback_label: "Feedback",
    draft_restored: "You were signed in again and your answers were restored. Review them and choose again.",
    step_up_notice: "Deciding this request needs a recent sign-in. If yours is older, you will be asked to sign in \
                     again first; your answers are kept.",
    yes: "Yes",
    no: "No",
    err_already_decided: "Someone else decided this request in the meantime. The current state is shown below.",
    err_expired: "This request expired before your decision arrived. Nothing was sent to the workflow.",
    err_in_progress: "Another decision on this request is being delivered right now. Wait a moment and check again.",
    err_already_voted: "You already recorded a different decision on this request.",
    err_already_satisfied: "Your approval is not needed: the approvers you count as have already approved. \
                            Another listed approver has to decide.",
    err_conflict: "The request changed in the meantime. The current state is shown below.",
    err_not_found_title: "Request not found",
    err_not_found_body: "This approval request does not exist, or it is not addressed to you. Check that you are signed in with the right account.",
    err_unavailable: "ringi could not be reached, or its storage or the workflow service is unavailable. Nothing was decided and your answers are kept: try again.",
    err_load_failed: "The request could not be loaded. Check your connection and try again.",
    err_fix_fields: "Please correct the marked fields.",
    err_server: "Something went wrong on the server. Nothing was decided. Please try again later or contact your administrator.",
    field_required: "This field is required.",
    field_too_long: |n| format!("Use at most {n} characters."),
    field_not_option: "Choose one of the options.",
    field_not_number: "Enter a number.",
    field_out_of_range: |min, max| match (min, max) {
        (Some(a), Some(b)) => format!("Enter a number between {} and {}.", num(a), num(b)),
        (Some(a), None) => format!("Enter a number of at least {}.", num(a)),
        (None, Some(b)) => format!("Enter a number of at most {}.", num(b)),
        (None, None) => "Enter a number.".into(),
    },
    field_invalid: "Check this value.",
    server_refused: |message| format!("Server: {message}"),
    audit: &super::audit::EN,
    schedule_heading: "Reminders and escalation",
    next_reminder_label: "Next reminder",
    no_more_reminders: "No more reminders",
    reminders_label: "Reminders",
    reminder_sent: |when| format!("sent {when}"),
    reminder_skipped: "not sent (nobody left to remind)",
    reminder_due: "scheduled",
    escalation_label: "Escalation",
    escalation_planned: |when, to| format!("{when} to {to}"),
    escalated_notice: |when, to| format!("Escalated {when}: {to} can now decide this request too."),
    escalation_note_label: "Note",
    escalated_badge: "Escalated",
    group_principal: |g| format!("group {g}"),
    delegation: &super::delegation::EN,
};

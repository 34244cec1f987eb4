//! The approval's schedule: the next reminder, every reminder and what became of it, the escalation (when
//! and to whom), and — once it happened — the escalated notice with the registrant's note.

use leptos::prelude::*;
use ringi_core::base::principal::Principal;
use ringi_core::base::status::ApprovalStatus;
use ringi_core::domain::schedule::{EscalationView, ReminderView, ScheduleView};

use super::state::use_approval;
use crate::components::FactRow;
use crate::context::{tr, use_app, AppContext};
use crate::infra::time;

/// Who an escalation goes to, as people read it ("boss@example.com, group leads").
fn principals_text(ctx: AppContext, to: &[Principal]) -> String {
    let t = ctx.texts();
    to.iter()
        .map(|p| match p {
            Principal::Group(g) => (t.group_principal)(g),
            other => other.value().to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// "2027-01-15 09:00 (in 3 hours)"
fn when(ctx: AppContext, rfc3339: &str) -> String {
    let rel = time::parse(rfc3339).map(|ms| time::relative(ms, ctx.now.get(), ctx.locale.get())).unwrap_or_default();
    format!("{} ({rel})", time::absolute_str(rfc3339, ctx.locale.get()))
}

/// The escalated notice: shown whatever the status, since the added approvers are why the caller sees it.
#[component]
pub fn EscalatedNotice() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    move || {
        let esc = state.view.with(|v| v.as_ref().and_then(|v| v.schedule.decode().ok()?.escalation))?;
        let at = esc.escalated_at.clone()?;
        let to = esc.to.clone();
        let text = move || {
            (ctx.texts().escalated_notice)(&time::absolute_str(&at, ctx.locale.get()), &principals_text(ctx, &to))
        };
        Some(view! {
            <div class="notice notice--escalated" data-testid="escalated-notice">
                <p>{text}</p>
                {esc.note.map(|note| {
                    view! {
                        <p data-testid="escalation-note">
                            <strong>{tr(|t| t.escalation_note_label)}": "</strong>
                            {note}
                        </p>
                    }
                })}
            </div>
        })
    }
}

/// The schedule card, while the approval is open and has anything scheduled.
#[component]
pub fn Schedule() -> impl IntoView {
    let state = use_approval();
    move || {
        let (schedule, status) = state.view.with(|v| v.as_ref().map(|v| (v.schedule.decode(), v.status)))?;
        // Not shown if unreadable: the schedule is a forecast; the reminders and escalation happen anyway.
        let schedule = schedule.ok()?;
        let status = state.status.get().unwrap_or(status);
        let open = matches!(status, ApprovalStatus::Pending | ApprovalStatus::Claimed);
        if !open || (schedule.reminders.is_empty() && schedule.escalation.is_none()) {
            return None;
        }
        Some(view! { <ScheduleCard schedule /> })
    }
}

#[component]
fn ScheduleCard(schedule: ScheduleView) -> impl IntoView {
    let ctx = use_app();
    let next = schedule.next_reminder().map(|r| r.at.clone());
    let next = move || match &next {
        Some(at) => when(ctx, at),
        None => ctx.texts().no_more_reminders.to_owned(),
    };
    let reminders = (!schedule.reminders.is_empty()).then(|| {
        let items = schedule.reminders.iter().cloned().map(|r| view! { <Reminder r /> }).collect_view();
        view! {
            <FactRow label=|t| t.reminders_label>
                <ol class="schedule__list" data-testid="reminders">
                    {items}
                </ol>
            </FactRow>
        }
    });
    let escalation = schedule.escalation.map(|e| view! { <EscalationRow e /> });
    view! {
        <section class="card schedule" aria-labelledby="schedule-title" data-testid="schedule">
            <h2 id="schedule-title" class="card__title">{tr(|t| t.schedule_heading)}</h2>
            <dl class="facts">
                <FactRow label=|t| t.next_reminder_label testid="next-reminder">{next}</FactRow>
                {reminders}
                {escalation}
            </dl>
        </section>
    }
}

#[component]
fn Reminder(r: ReminderView) -> impl IntoView {
    let ctx = use_app();
    let (state, text) = match (&r.sent_at, r.skipped) {
        (Some(sent), _) => ("sent", Some(sent.clone())),
        (None, true) => ("skipped", None),
        (None, false) => ("due", None),
    };
    let at = r.at.clone();
    let label = move || {
        let t = ctx.texts();
        match (&text, state) {
            (Some(sent), _) => (t.reminder_sent)(&time::absolute_str(sent, ctx.locale.get())),
            (None, "skipped") => t.reminder_skipped.to_owned(),
            _ => t.reminder_due.to_owned(),
        }
    };
    view! {
        <li class="schedule__item" data-testid="reminder" data-state=state>
            <time datetime=r.at.clone()>{move || time::absolute_str(&at, ctx.locale.get())}</time>
            " · "
            <span class="schedule__state">{label}</span>
        </li>
    }
}

#[component]
fn EscalationRow(e: EscalationView) -> impl IntoView {
    let ctx = use_app();
    let done = e.escalated_at.is_some();
    let state = if done { "done" } else { "planned" };
    let (at, to) = (e.at.clone(), e.to.clone());
    let text = move || (ctx.texts().escalation_planned)(&when(ctx, &at), &principals_text(ctx, &to));
    view! {
        <FactRow label=|t| t.escalation_label testid="escalation">
            <span data-state=state>{text}</span>
            {done.then(|| view! { " · " <span class="schedule__state">{tr(|t| t.escalated_badge)}</span> })}
        </FactRow>
    }
}

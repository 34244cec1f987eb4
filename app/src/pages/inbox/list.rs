//! The inbox's rows: one per approval, with its status, deadline, origin and progress.

use leptos::prelude::*;
use ringi_core::api::wire::InboxItem;
use ringi_core::base::context::ApprovalContext;
use ringi_core::base::error::ErrorCode;
use ringi_core::base::status::ApprovalStatus;

use crate::components::{next_task, ProgressDots, StatusBadge};
use crate::context::{tr, use_app, AppContext};
use crate::infra::time::{self, Urgency};

/// Rows rendered with the rest of the page (a phone's screen holds about five); the others follow one task later
/// (components::later), so that a long inbox is not one long task.
const FIRST_ROWS: usize = 8;

#[component]
pub fn List(items: Signal<Vec<InboxItem>>, decided: Memo<bool>) -> impl IntoView {
    let ctx = use_app();
    let all_rows = next_task();
    let rows = move || {
        let shown = if all_rows.get() { usize::MAX } else { FIRST_ROWS };
        items.with(|l| l.iter().take(shown).cloned().collect::<Vec<_>>())
    };
    let empty = move || {
        let t = ctx.texts();
        let (title, body) = if decided.get() {
            (t.empty_decided_title, t.empty_decided_body)
        } else {
            (t.empty_pending_title, t.empty_pending_body)
        };
        view! {
            <div class="empty" data-testid="inbox-empty">
                <span class="empty__mark" aria-hidden="true">
                    "✓"
                </span>
                <h2 class="empty__title">{title}</h2>
                <p>{body}</p>
            </div>
        }
    };
    view! {
        <Show when=move || items.with(|l| !l.is_empty()) fallback=empty>
            <ul class="items" data-testid="inbox-list">
                <For each=rows key=|item| (item.id.clone(), item.status.as_str()) let:item>
                    <Item item />
                </For>
            </ul>
        </Show>
    }
}

#[component]
fn Item(item: InboxItem) -> impl IntoView {
    let ctx = use_app();
    let context = item.context();
    let expires_ms = time::parse(&item.expires_at);
    let decided_ms = item.decided_at.as_deref().and_then(time::parse);
    let status = item.status;
    let progress = item.progress;
    let summary = first_line(&item.summary);
    let (own, auto) = (item.cannot_decide == Some(ErrorCode::SelfApproval), item.decided_on_expiry);
    let when = move || when_text(ctx, status, expires_ms, decided_ms);
    let urgency = move || match (status, expires_ms) {
        (ApprovalStatus::Pending | ApprovalStatus::Claimed, Some(ms)) => Urgency::of(ms, ctx.now.get()).class(),
        _ => "urgency",
    };
    let absolute = move || expires_ms.map(|ms| time::absolute(ms, ctx.locale.get())).unwrap_or_default();
    view! {
        <li class="item" data-testid="inbox-item" data-id=item.id.clone()>
            <div class="item__top">
                <span class="item__badges">
                    <StatusBadge status verdict=item.verdict />
                    {item
                        .escalated
                        .then(|| {
                            view! {
                                <span class="badge badge--escalated" data-testid="escalated-badge">
                                    {tr(|t| t.escalated_badge)}
                                </span>
                            }
                        })}
                </span>
                <span class=urgency>
                    <time datetime=item.expires_at.clone() title=absolute>
                        {when}
                    </time>
                </span>
            </div>
            <h2 class="item__title" id=format!("item-{}", item.id)>
                <a class="item__link" href=format!("/a/{}", item.id)>
                    {item.title.clone()}
                </a>
            </h2>
            {(!summary.is_empty()).then(|| view! { <p class="item__summary">{summary}</p> })}
            <Marks own auto />
            {item.delegated_to.as_ref().map(|to| {
                let who = to.value().to_owned();
                view! {
                    <p class="item__delegated" data-testid="inbox-delegated">
                        {move || (ctx.texts().delegation.inbox_delegated)(&who)}
                    </p>
                }
            })}
            <div class="item__bottom">
                <ContextLine context />
                // Decided: the status says it all, unless several approvals were needed.
                {(matches!(status, ApprovalStatus::Pending | ApprovalStatus::Claimed) || progress.required > 1)
                    .then(|| view! { <ProgressDots progress /> })}
            </div>
        </li>
    }
}

fn when_text(ctx: AppContext, status: ApprovalStatus, expires_ms: Option<f64>, decided_ms: Option<f64>) -> String {
    let t = ctx.texts();
    let now = ctx.now.get();
    let locale = ctx.locale.get();
    match status {
        ApprovalStatus::Approved | ApprovalStatus::Rejected | ApprovalStatus::DecidedUnconfirmed => {
            decided_ms.map(|ms| (t.decided_when)(&time::relative(ms, now, locale))).unwrap_or_default()
        }
        _ => match expires_ms {
            Some(ms) if ms <= now || status == ApprovalStatus::Expired => {
                (t.expired_when)(&time::relative(ms, now, locale))
            }
            Some(ms) => (t.expires)(&time::relative(ms, now, locale)),
            None => String::new(),
        },
    }
}

/// The first non-blank line of a summary (a row has room for one).
fn first_line(summary: &str) -> String {
    summary.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_owned()
}

/// Why the row reads differently: the caller's own request (they may not decide it), or ringi decided it on
/// expiry.
#[component]
fn Marks(own: bool, auto: bool) -> impl IntoView {
    view! {
        {own.then(|| view! { <p class="item__mark" data-testid="self-approval-mark">{tr(|t| t.self_approval_mark)}</p> })}
        {auto.then(|| view! { <p class="item__mark" data-testid="auto-decided">{tr(|t| t.auto_decided_mark)}</p> })}
    }
}

/// Who asked and from which state machine step.
#[component]
fn ContextLine(context: ApprovalContext) -> impl IntoView {
    let source = context.source();
    view! {
        <p class="item__context">
            {context
                .requested_by
                .map(|who| {
                    view! {
                        <span class="item__who">
                            <span class="item__label">{tr(|t| t.requested_by)}" "</span>
                            {who}
                        </span>
                    }
                })}
            {source.map(|s| view! { <span class="item__source">{s}</span> })}
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::first_line;

    #[test]
    fn first_line_skips_blank_lines() {
        assert_eq!(first_line("\n  \n  Deploy v2  \nmore"), "Deploy v2");
        assert_eq!(first_line(""), "");
    }
}

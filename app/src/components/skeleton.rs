//! Placeholder blocks while something loads. The blocks are decoration; the status text is what assistive
//! technology announces.

use leptos::prelude::*;

use crate::context::{tr, Pick};

/// One grey block, by the shape of what will stand there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Chip,
    Title,
    Line,
    Short,
    Button,
}

impl Block {
    fn class(self) -> &'static str {
        match self {
            Block::Chip => "skeleton__block skeleton__block--chip",
            Block::Title => "skeleton__block skeleton__block--title",
            Block::Line => "skeleton__block",
            Block::Short => "skeleton__block skeleton__block--short",
            Block::Button => "skeleton__block skeleton__block--button",
        }
    }
}

#[component]
pub fn Skeleton(
    /// The container's classes (`page skeleton`, `card skeleton`, `items items--skeleton`).
    class: &'static str,
    blocks: &'static [Block],
    #[prop(optional)] testid: Option<&'static str>,
    /// The announced text; `None`: a purely decorative placeholder, hidden from assistive technology.
    #[prop(optional)]
    label: Option<Pick>,
    /// Show the label as text (the sign-in steps) rather than to assistive technology only.
    #[prop(optional)]
    visible_label: bool,
    /// `n > 0`: the blocks repeated as `n` list rows (the inbox).
    #[prop(optional)]
    rows: usize,
) -> impl IntoView {
    let blocks_view =
        move || blocks.iter().map(|b| view! { <div class=b.class() aria-hidden="true"></div> }).collect_view();
    let content = if rows == 0 {
        blocks_view().into_any()
    } else {
        (0..rows)
            .map(|_| view! { <div class="item item--skeleton" aria-hidden="true">{blocks_view()}</div> })
            .collect_view()
            .into_any()
    };
    let label_class = if visible_label { "skeleton__label" } else { "visually-hidden" };
    view! {
        <div class=class data-testid=testid aria-hidden=label.is_none().then_some("true")>
            {label.map(|pick| view! { <p class=label_class role="status">{tr(pick)}</p> })}
            {content}
        </div>
    }
}

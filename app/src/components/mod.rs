//! Pieces shared by the pages. Each one stands for markup that would otherwise be written out several times.

mod badge;
mod busy_button;
mod error_card;
mod fact_row;
mod json_tree;
mod later;
mod note_input;
mod on_demand;
mod progress;
mod skeleton;

pub use badge::StatusBadge;
pub use busy_button::BusyButton;
pub use error_card::ErrorCard;
pub use fact_row::FactRow;
pub use json_tree::{object_view, rows_view};
pub use later::next_task;
pub use note_input::NoteInput;
pub use on_demand::{ChunkMissing, OnDemand, Part};
pub use progress::ProgressDots;
pub use skeleton::{Block, Skeleton};

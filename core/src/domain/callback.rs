//! The answer ringi gives the waiting workflow: success with an output, or failure with an error and a cause
//! (a decision's, or the outcome on expiry). How it travels to Step Functions is `crate::adapters::sfn`.

/// What the workflow's task is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SfnCallback {
    Success { output: String },
    Failure { error: String, cause: String },
}

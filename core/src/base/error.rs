//! The one error type of the API and its mapping to HTTP: every adapter turns failures into an `ApiError`
//! and renders it through [`ApiError::status`] / [`ApiError::body`], nowhere else.

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::base::by_name::serde_by_name;
use crate::base::json::{FromJson, Members, Placeholder, ReadError};
use crate::base::sign_in::SignInRequirement;
use crate::base::status::ApprovalStatus;

/// The stable machine-readable `error.code` of every API error; the SPA keys its messages on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidRequest,
    MalformedBody,
    Unauthorized,
    Forbidden,
    NotFound,
    NoRoute,
    MethodNotAllowed,
    AlreadyDecided,
    Expired,
    InProgress,
    AlreadyVoted,
    AlreadySatisfied,
    DuplicateApproval,
    SelfApproval,
    PayloadTooLarge,
    RateLimited,
    SfnUnavailable,
    StorageUnavailable,
    UpstreamRejected,
    Internal,
    Delegated,
    DelegationLoop,
    DelegationTooDeep,
    DelegateIsApprover,
    DelegateIsRequester,
    GroupSeat,
    NotSupportedByBackend,
    StepUpRequired,
    PushNotConfigured,
    TooManyDevices,
}
serde_by_name!(ErrorCode, code, parse, "an error code");

impl ErrorCode {
    /// The wire name (what serde writes): the OpenAPI `ErrorCode` enum lists exactly these.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::MalformedBody => "malformed_body",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::NoRoute => "no_route",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::AlreadyDecided => "already_decided",
            Self::Expired => "expired",
            Self::InProgress => "in_progress",
            Self::AlreadyVoted => "already_voted",
            Self::AlreadySatisfied => "already_satisfied",
            Self::DuplicateApproval => "duplicate_approval",
            Self::SelfApproval => "self_approval",
            Self::PayloadTooLarge => "payload_too_large",
            Self::RateLimited => "rate_limited",
            Self::SfnUnavailable => "sfn_unavailable",
            Self::StorageUnavailable => "storage_unavailable",
            Self::UpstreamRejected => "upstream_rejected",
            Self::Internal => "internal",
            Self::Delegated => "delegated",
            Self::DelegationLoop => "delegation_loop",
            Self::DelegationTooDeep => "delegation_too_deep",
            Self::DelegateIsApprover => "delegate_is_approver",
            Self::DelegateIsRequester => "delegate_is_requester",
            Self::GroupSeat => "group_seat",
            Self::NotSupportedByBackend => "not_supported_by_backend",
            Self::StepUpRequired => "step_up_required",
            Self::PushNotConfigured => "push_not_configured",
            Self::TooManyDevices => "too_many_devices",
        }
    }

    pub const ALL: [Self; 30] = [
        Self::InvalidRequest,
        Self::MalformedBody,
        Self::Unauthorized,
        Self::Forbidden,
        Self::NotFound,
        Self::NoRoute,
        Self::MethodNotAllowed,
        Self::AlreadyDecided,
        Self::Expired,
        Self::InProgress,
        Self::AlreadyVoted,
        Self::AlreadySatisfied,
        Self::DuplicateApproval,
        Self::SelfApproval,
        Self::PayloadTooLarge,
        Self::RateLimited,
        Self::SfnUnavailable,
        Self::StorageUnavailable,
        Self::UpstreamRejected,
        Self::Internal,
        Self::Delegated,
        Self::DelegationLoop,
        Self::DelegationTooDeep,
        Self::DelegateIsApprover,
        Self::DelegateIsRequester,
        Self::GroupSeat,
        Self::NotSupportedByBackend,
        Self::StepUpRequired,
        Self::PushNotConfigured,
        Self::TooManyDevices,
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == s)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// A request field is missing or wrong; `field` names it (JSON path-ish, e.g. `approvers[1].email`).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("request body is not valid JSON: {0}")]
    MalformedBody(String),
    /// Deliberately uninformative: the reason is logged, never returned.
    #[error("authentication required")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    /// Also returned when the caller is not an approver: the two must be indistinguishable.
    #[error("approval not found")]
    NotFound,
    #[error("no such endpoint")]
    NoRoute,
    /// `allow` lists the methods the path does support (sent as the `Allow` header).
    #[error("method not allowed; this path allows {allow}")]
    MethodNotAllowed { allow: String },
    #[error("approval already decided ({0})")]
    AlreadyDecided(ApprovalStatus),
    #[error("approval expired or its task is closed")]
    Expired,
    /// Another request holds the approval's claim (or changed it between this request's read and write);
    /// `retry_after` seconds until its lease runs out (`Retry-After`), so a retry is not told this again.
    #[error("another decision for this approval is being delivered; retry in {retry_after} s")]
    InProgress { retry_after: u32 },
    #[error("you have already recorded a decision on this approval")]
    AlreadyVoted,
    /// Quorum by principal: every listed principal this caller matches is already satisfied by others.
    #[error("the approvers you count as have already approved; another listed approver must decide")]
    AlreadySatisfied,
    #[error("approvalId already registered with a different task token")]
    DuplicateApproval,
    /// Separation of duty: the caller is one of the approval's requesters (`requestedBy`) and may not
    /// decide it (unless it was registered with `allowSelfApproval`).
    #[error("you requested this approval (or your sign-in carries no verified email to tell you apart from a requester named by email): a requester cannot approve or reject their own request")]
    SelfApproval,
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Too many registrations from one credential; `retry_after` seconds until the window ends (sent as the
    /// `Retry-After` header).
    #[error("too many registrations from this credential; retry in {retry_after} s")]
    RateLimited { retry_after: u32 },
    #[error("Step Functions is unavailable; the approval is still pending, retry in {retry_after} s")]
    Unavailable { retry_after: u32 },
    /// D1 failed (after bounded retries for transient errors). Nothing is decided that the approval does
    /// not show; it stays decidable (a claim taken without a callback is released or runs out its lease).
    #[error("storage is temporarily unavailable; retry in {retry_after} s")]
    StorageUnavailable { retry_after: u32 },
    #[error("Step Functions refused the worker's request; an operator has to check the AWS credentials")]
    UpstreamRejected,
    #[error("internal error")]
    Internal,
    /// The caller handed their slot on (delegation or out-of-office routing): the delegate decides now.
    #[error("you delegated this approval; the delegate decides it now")]
    Delegated,
    /// The delegate is already in this slot's chain (or is the caller).
    #[error("the delegate already had this approval in its chain of delegations")]
    DelegationLoop,
    #[error("this approval was delegated as often as allowed (3 times); decide it or ask an operator to reassign it")]
    DelegationTooDeep,
    /// One person counts once: the delegate already holds (or held) another slot of this approval.
    #[error("the delegate is already an approver of this approval")]
    DelegateIsApprover,
    /// Separation of duty: the requester does not decide their own request.
    #[error("the requester of this approval cannot be its delegate")]
    DelegateIsRequester,
    /// A `{group}` seat belongs to all of the group's members: one member cannot hand it on.
    #[error("this approval is assigned to a group you belong to, not to you alone: only operators can reassign it")]
    GroupSeat,
    /// The configured storage backend (`STORAGE`) does not implement this feature; it names the feature.
    #[error("{0} is not supported by the configured storage backend (STORAGE=dynamodb); use STORAGE=d1")]
    NotSupportedByBackend(&'static str),
    /// The approval asks for a fresher or stronger sign-in than the caller's token shows (`requireSignIn`):
    /// signing in again as it says lets them decide. RFC 9470's `insufficient_user_authentication`.
    #[error("this approval needs a fresh or stronger sign-in: sign in again, then decide")]
    StepUpRequired(SignInRequirement),
    /// Web Push is off: the worker has no `VAPID_KEY` secret.
    #[error("notifications on devices are not set up on this installation (no VAPID_KEY)")]
    PushNotConfigured,
    /// One person keeps at most this many devices' subscriptions (`webpush::MAX_DEVICES`).
    #[error("notifications are on for {0} devices already: turn them off on one of them first")]
    TooManyDevices(usize),
}

impl ApiError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.into(), message: message.into() }
    }

    /// Storage failed: retry in a second.
    pub const fn storage_unavailable() -> Self {
        Self::StorageUnavailable { retry_after: 1 }
    }

    /// Step Functions failed: retry in two seconds.
    pub const fn sfn_unavailable() -> Self {
        Self::Unavailable { retry_after: 2 }
    }

    /// The approval changed between this request's read and its write: deciding again sees the change.
    pub const fn changed_meanwhile() -> Self {
        Self::InProgress { retry_after: 1 }
    }

    /// The claim is held until `until` (ms): retry once its lease has run out.
    pub fn claimed_until(until: i64, now: i64) -> Self {
        Self::InProgress { retry_after: retry_secs(until, now) }
    }

    /// This request may have left its claim behind (taken, then not released): a retry before the lease runs
    /// out would be told `in_progress`, so a temporary failure asks to wait out the lease instead.
    pub fn claim_left_held(self, lease_ms: i64) -> Self {
        let lease = retry_secs(lease_ms, 0);
        match self {
            Self::StorageUnavailable { retry_after } => {
                Self::StorageUnavailable { retry_after: retry_after.max(lease) }
            }
            Self::Unavailable { retry_after } => Self::Unavailable { retry_after: retry_after.max(lease) },
            other => other,
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid { .. } | Self::MalformedBody(_) => 400,
            // RFC 9470: a token that is valid but whose sign-in is not enough is a 401 challenge.
            Self::Unauthorized | Self::StepUpRequired(_) => 401,
            Self::Forbidden(_) | Self::SelfApproval | Self::DelegateIsRequester | Self::GroupSeat => 403,
            Self::NotFound | Self::NoRoute => 404,
            Self::MethodNotAllowed { .. } => 405,
            Self::AlreadyDecided(_)
            | Self::Expired
            | Self::InProgress { .. }
            | Self::AlreadyVoted
            | Self::AlreadySatisfied
            | Self::DuplicateApproval
            | Self::Delegated
            | Self::DelegationLoop
            | Self::DelegationTooDeep
            | Self::DelegateIsApprover
            | Self::TooManyDevices(_) => 409,
            Self::PayloadTooLarge(_) => 413,
            Self::RateLimited { .. } => 429,
            Self::Internal => 500,
            Self::UpstreamRejected => 502,
            Self::Unavailable { .. } | Self::StorageUnavailable { .. } => 503,
            Self::NotSupportedByBackend(_) | Self::PushNotConfigured => 501,
        }
    }

    /// The machine-readable code of this error.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::Invalid { .. } => ErrorCode::InvalidRequest,
            Self::MalformedBody(_) => ErrorCode::MalformedBody,
            Self::Unauthorized => ErrorCode::Unauthorized,
            Self::Forbidden(_) => ErrorCode::Forbidden,
            Self::NotFound => ErrorCode::NotFound,
            Self::NoRoute => ErrorCode::NoRoute,
            Self::MethodNotAllowed { .. } => ErrorCode::MethodNotAllowed,
            Self::AlreadyDecided(_) => ErrorCode::AlreadyDecided,
            Self::Expired => ErrorCode::Expired,
            Self::InProgress { .. } => ErrorCode::InProgress,
            Self::AlreadyVoted => ErrorCode::AlreadyVoted,
            Self::AlreadySatisfied => ErrorCode::AlreadySatisfied,
            Self::DuplicateApproval => ErrorCode::DuplicateApproval,
            Self::SelfApproval => ErrorCode::SelfApproval,
            Self::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            Self::RateLimited { .. } => ErrorCode::RateLimited,
            Self::Unavailable { .. } => ErrorCode::SfnUnavailable,
            Self::StorageUnavailable { .. } => ErrorCode::StorageUnavailable,
            Self::UpstreamRejected => ErrorCode::UpstreamRejected,
            Self::Internal => ErrorCode::Internal,
            Self::Delegated => ErrorCode::Delegated,
            Self::DelegationLoop => ErrorCode::DelegationLoop,
            Self::DelegationTooDeep => ErrorCode::DelegationTooDeep,
            Self::DelegateIsApprover => ErrorCode::DelegateIsApprover,
            Self::DelegateIsRequester => ErrorCode::DelegateIsRequester,
            Self::GroupSeat => ErrorCode::GroupSeat,
            Self::NotSupportedByBackend(_) => ErrorCode::NotSupportedByBackend,
            Self::StepUpRequired(_) => ErrorCode::StepUpRequired,
            Self::PushNotConfigured => ErrorCode::PushNotConfigured,
            Self::TooManyDevices(_) => ErrorCode::TooManyDevices,
        }
    }

    /// [`ErrorCode::code`] of this error.
    pub fn code(&self) -> &'static str {
        self.error_code().code()
    }

    /// Seconds a client should wait before retrying (`Retry-After`), for the temporary failures.
    pub fn retry_after(&self) -> Option<u32> {
        match self {
            Self::StorageUnavailable { retry_after }
            | Self::Unavailable { retry_after }
            | Self::InProgress { retry_after }
            | Self::RateLimited { retry_after } => Some(*retry_after),
            _ => None,
        }
    }

    pub fn body(&self) -> ErrorBody {
        let field = match self {
            Self::Invalid { field, .. } => Some(field.clone()),
            _ => None,
        };
        let require_sign_in = match self {
            Self::StepUpRequired(r) => Some(r.clone()),
            _ => None,
        };
        ErrorBody {
            error: ErrorDetail { code: self.code().to_owned(), message: self.to_string(), field, require_sign_in },
        }
    }
}

/// `{"error": {"code", "message", "field"?}}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// `code` stays a string on the wire type so that a client still reads codes added after it was built;
/// [`ErrorDetail::error_code`] is the typed view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// `step_up_required`: the sign-in that lets the caller decide (what to ask the provider for).
    #[serde(default, rename = "requireSignIn", skip_serializing_if = "Option::is_none")]
    pub require_sign_in: Option<SignInRequirement>,
}

impl FromJson for ErrorBody {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self { error: m.get("error") })
    }
}

impl FromJson for ErrorDetail {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            code: m.get("code"),
            message: m.get("message"),
            field: m.or_default("field"),
            require_sign_in: m.or_default("requireSignIn"),
        })
    }
}

impl Placeholder for ErrorDetail {
    fn placeholder() -> Self {
        Self { code: String::new(), message: String::new(), field: None, require_sign_in: None }
    }
}

impl ErrorDetail {
    /// The code, if this build knows it.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::parse(&self.code)
    }
}

/// Whole seconds from `now` to `until` (ms), at least one: what a `Retry-After` says.
pub fn retry_secs(until: i64, now: i64) -> u32 {
    u32::try_from((until - now).max(0)).unwrap_or(u32::MAX).div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_temporary_failure_says_when_to_retry_and_a_held_claim_is_waited_out() {
        assert_eq!(ApiError::storage_unavailable().retry_after(), Some(1));
        assert_eq!(ApiError::sfn_unavailable().retry_after(), Some(2));
        assert_eq!(ApiError::changed_meanwhile().retry_after(), Some(1));
        assert_eq!(ApiError::claimed_until(31_500, 1_000).retry_after(), Some(31));
        assert_eq!(ApiError::claimed_until(1_001, 1_000).retry_after(), Some(1));
        assert_eq!(ApiError::RateLimited { retry_after: 7 }.retry_after(), Some(7));
        assert_eq!(ApiError::NotFound.retry_after(), None);
        // A failure that may have left this request's claim behind: a retry before the lease ends would only
        // be told in_progress.
        assert_eq!(ApiError::storage_unavailable().claim_left_held(30_000).retry_after(), Some(30));
        assert_eq!(ApiError::sfn_unavailable().claim_left_held(30_000).retry_after(), Some(30));
        assert_eq!(ApiError::Unavailable { retry_after: 60 }.claim_left_held(30_000).retry_after(), Some(60));
        assert_eq!(ApiError::NotFound.claim_left_held(30_000), ApiError::NotFound);
    }

    #[test]
    fn statuses_follow_the_design_card() {
        assert_eq!(ApiError::invalid("title", "required").status(), 400);
        assert_eq!(ApiError::Unauthorized.status(), 401);
        assert_eq!(ApiError::NotFound.status(), 404);
        assert_eq!(ApiError::Expired.status(), 409);
        assert_eq!(ApiError::AlreadyDecided(ApprovalStatus::Approved).status(), 409);
        assert_eq!(ApiError::PayloadTooLarge("x".into()).status(), 413);
        assert_eq!(ApiError::RateLimited { retry_after: 7 }.status(), 429);
        assert_eq!(ApiError::UpstreamRejected.status(), 502);
        assert_eq!(ApiError::sfn_unavailable().status(), 503);
        assert_eq!(ApiError::storage_unavailable().status(), 503);
        assert_eq!(ApiError::storage_unavailable().code(), "storage_unavailable");
        assert_eq!((ApiError::SelfApproval.status(), ApiError::SelfApproval.code()), (403, "self_approval"));
        let unsupported = ApiError::NotSupportedByBackend("delegation");
        assert_eq!((unsupported.status(), unsupported.code()), (501, "not_supported_by_backend"));
        assert!(unsupported.to_string().starts_with("delegation "));
        assert_eq!(
            (ApiError::PushNotConfigured.status(), ApiError::PushNotConfigured.code()),
            (501, "push_not_configured")
        );
        assert_eq!(
            (ApiError::TooManyDevices(10).status(), ApiError::TooManyDevices(10).code()),
            (409, "too_many_devices")
        );
    }

    #[test]
    fn body_names_the_field() {
        let body = serde_json::to_value(ApiError::invalid("approvers", "at least one").body()).unwrap();
        assert_eq!(body["error"]["code"], "invalid_request");
        assert_eq!(body["error"]["field"], "approvers");
        let body = serde_json::to_value(ApiError::NotFound.body()).unwrap();
        assert!(body["error"].get("field").is_none());
        let step_up = ApiError::StepUpRequired(SignInRequirement { max_age_seconds: Some(300), ..Default::default() });
        assert_eq!((step_up.status(), step_up.code()), (401, "step_up_required"));
        let body = serde_json::to_value(step_up.body()).unwrap();
        assert_eq!(body["error"]["requireSignIn"], serde_json::json!({"maxAgeSeconds": 300}));
    }

    #[test]
    fn codes_serialize_as_their_wire_names() {
        for c in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.code());
            assert_eq!(ErrorCode::parse(c.code()), Some(c));
        }
        let body = ApiError::AlreadyDecided(ApprovalStatus::DecidedUnconfirmed).body();
        assert_eq!(body.error.error_code(), Some(ErrorCode::AlreadyDecided));
        assert_eq!(body.error.message, "approval already decided (decided_unconfirmed)");
    }
}

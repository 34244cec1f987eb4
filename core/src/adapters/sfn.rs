//! Step Functions callbacks: request bodies for SendTaskSuccess/SendTaskFailure and the classification of
//! their answers into what ringi does next (design.md §6).

use serde_json::json;

use crate::base::ids::TaskToken;
use crate::domain::callback::SfnCallback;

pub const JSON_CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// The callback as Step Functions takes it (the value itself is the domain's: `crate::domain::callback`).
impl SfnCallback {
    pub fn target(&self) -> &'static str {
        match self {
            Self::Success { .. } => "AWSStepFunctions.SendTaskSuccess",
            Self::Failure { .. } => "AWSStepFunctions.SendTaskFailure",
        }
    }

    /// The JSON 1.0 request body. Contains the token: never log it.
    pub fn body(&self, token: &TaskToken) -> String {
        match self {
            Self::Success { output } => json!({"taskToken": token.expose(), "output": output}),
            Self::Failure { error, cause } => json!({"taskToken": token.expose(), "error": error, "cause": cause}),
        }
        .to_string()
    }
}

/// What a Step Functions answer means for the approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackOutcome {
    Delivered,
    /// The task is gone (timed out, already answered, execution ended): the approval is expired.
    TaskClosed(String),
    /// Throttling, 5xx, network: retry, and if that fails, release the claim (503).
    Retryable(String),
    /// Our credentials or permissions were refused: release the claim (502) and tell the operator.
    Refused(String),
    /// A request Step Functions considers invalid (e.g. `InvalidOutput`): release the claim (502).
    Invalid(String),
}

/// The AWS error code of a response body: JSON `__type` (possibly `namespace#Code`) or the XML `<Code>`
/// that some front ends (and moto's auth layer) send.
pub fn error_code(body: &str) -> Option<String> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let t = v.get("__type").or_else(|| v.get("code")).and_then(|t| t.as_str())?;
        return Some(t.rsplit('#').next().unwrap_or(t).to_owned());
    }
    let start = body.find("<Code>")? + "<Code>".len();
    let end = body[start..].find("</Code>")? + start;
    Some(body[start..end].trim().to_owned())
}

pub fn classify(status: u16, body: &str) -> CallbackOutcome {
    if (200..300).contains(&status) {
        return CallbackOutcome::Delivered;
    }
    let code = error_code(body).unwrap_or_else(|| format!("HTTP{status}"));
    match code.as_str() {
        "TaskTimedOut" | "InvalidToken" | "TaskDoesNotExist" => CallbackOutcome::TaskClosed(code),
        "ThrottlingException"
        | "Throttling"
        | "TooManyRequestsException"
        | "RequestLimitExceeded"
        | "ServiceUnavailable"
        | "ServiceUnavailableException"
        | "InternalFailure"
        | "InternalServerError"
        | "KmsThrottlingException" => CallbackOutcome::Retryable(code),
        "InvalidOutput" | "ValidationException" | "SerializationException" => CallbackOutcome::Invalid(code),
        _ if status == 429 || status >= 500 => CallbackOutcome::Retryable(code),
        _ => CallbackOutcome::Refused(code),
    }
}

/// Bounded retries with full jitter, inside one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_ms: u64,
    pub cap_ms: u64,
    /// Each attempt is given up after this long (a stalled endpoint must not hold the claim for long).
    pub attempt_timeout_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 3, base_ms: 100, cap_ms: 1_000, attempt_timeout_ms: 3_000 }
    }
}

impl RetryPolicy {
    /// The longest one delivery can take: every attempt running into its timeout, plus the longest backoff
    /// before each retry. A claim's lease must outlast this (see `config::min_claim_lease_secs`).
    pub fn worst_case_ms(&self) -> u64 {
        let attempts = u64::from(self.max_attempts.max(1));
        let backoff: u64 = (1..self.max_attempts.max(1)).map(|retry| self.backoff_ms(retry, 1.0)).sum();
        attempts * self.attempt_timeout_ms + backoff
    }

    /// Delay before attempt `attempt` (1-based retry count), given a uniform random number in [0, 1).
    pub fn backoff_ms(&self, attempt: u32, rand01: f64) -> u64 {
        let ceiling = self.base_ms.saturating_mul(1u64 << attempt.min(16)).min(self.cap_ms);
        (ceiling as f64 * rand01.clamp(0.0, 1.0)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_carry_token_output_error_cause() {
        let t = TaskToken::parse("tok").unwrap();
        let s = SfnCallback::Success { output: "{\"a\":1}".into() };
        assert_eq!(s.target(), "AWSStepFunctions.SendTaskSuccess");
        let v: serde_json::Value = serde_json::from_str(&s.body(&t)).unwrap();
        assert_eq!(v["taskToken"], "tok");
        assert_eq!(v["output"], "{\"a\":1}");
        let f = SfnCallback::Failure { error: "Rejected".into(), cause: "{}".into() };
        let v: serde_json::Value = serde_json::from_str(&f.body(&t)).unwrap();
        assert_eq!((v["error"].as_str(), v["cause"].as_str()), (Some("Rejected"), Some("{}")));
        assert_eq!(f.target(), "AWSStepFunctions.SendTaskFailure");
    }

    #[test]
    fn error_mapping() {
        use CallbackOutcome::*;
        assert_eq!(classify(200, ""), Delivered);
        assert_eq!(classify(400, r#"{"__type":"TaskTimedOut","message":"x"}"#), TaskClosed("TaskTimedOut".into()));
        assert_eq!(
            classify(400, r#"{"__type":"com.amazonaws.swf.service.v2.model#InvalidToken"}"#),
            TaskClosed("InvalidToken".into())
        );
        assert_eq!(classify(400, r#"{"__type":"TaskDoesNotExist"}"#), TaskClosed("TaskDoesNotExist".into()));
        assert_eq!(classify(400, r#"{"__type":"ThrottlingException"}"#), Retryable("ThrottlingException".into()));
        assert_eq!(classify(500, "oops"), Retryable("HTTP500".into()));
        assert_eq!(classify(503, ""), Retryable("HTTP503".into()));
        assert_eq!(classify(400, r#"{"__type":"InvalidOutput"}"#), Invalid("InvalidOutput".into()));
        assert_eq!(
            classify(403, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code></Error></ErrorResponse>"),
            Refused("SignatureDoesNotMatch".into())
        );
        assert_eq!(
            classify(400, r#"{"__type":"UnrecognizedClientException"}"#),
            Refused("UnrecognizedClientException".into())
        );
        assert_eq!(classify(403, ""), Refused("HTTP403".into()));
    }

    #[test]
    fn backoff_is_bounded_and_jittered() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff_ms(1, 0.0), 0);
        assert_eq!(p.backoff_ms(1, 0.999), 199);
        assert!(p.backoff_ms(10, 0.999) <= p.cap_ms);
    }

    #[test]
    fn worst_case_is_every_attempt_timing_out_plus_the_longest_backoffs() {
        let p = RetryPolicy::default();
        assert_eq!(p.worst_case_ms(), 3 * 3_000 + 200 + 400);
        let one = RetryPolicy { max_attempts: 1, ..p };
        assert_eq!(one.worst_case_ms(), 3_000);
    }
}

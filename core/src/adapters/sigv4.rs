//! AWS Signature V4 for the worker's outbound calls (Step Functions, SES), through the `aws-sigv4` crate.
//! The signing time is passed in: wasm32 has no clock (`SystemTime::now` panics there).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SessionTokenMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("session_token", &self.session_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("SigV4 signing failed: {0}")]
pub struct SigningError(String);

/// Knobs the official test vectors vary; production calls use [`SignOptions::default`].
#[derive(Debug, Clone, Copy)]
pub struct SignOptions {
    pub normalize_path: bool,
    /// Add `x-amz-content-sha256` (S3-style); Step Functions and SES do not need it.
    pub content_sha256_header: bool,
    /// Still send `x-amz-security-token` but leave it out of the signature (a few services, e.g. IoT, want
    /// that); normal AWS calls sign it.
    pub omit_session_token: bool,
}

impl Default for SignOptions {
    fn default() -> Self {
        Self { normalize_path: true, content_sha256_header: false, omit_session_token: false }
    }
}

pub struct SignRequest<'a> {
    pub method: &'a str,
    pub url: &'a str,
    /// Headers that will be sent and must be signed (at least `host` is derived from the URL by the signer).
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
    pub region: &'a str,
    pub service: &'a str,
    pub time: SystemTime,
}

pub fn unix_ms_to_system_time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// Returns the headers to add (`authorization`, `x-amz-date`, and `x-amz-security-token` when a session
/// token is used).
pub fn sign_headers(
    req: &SignRequest<'_>,
    creds: &AwsCredentials,
    opts: SignOptions,
) -> Result<Vec<(String, String)>, SigningError> {
    let identity: Identity = Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        creds.session_token.clone(),
        None,
        "ringi",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Double;
    settings.uri_path_normalization_mode =
        if opts.normalize_path { UriPathNormalizationMode::Enabled } else { UriPathNormalizationMode::Disabled };
    settings.payload_checksum_kind =
        if opts.content_sha256_header { PayloadChecksumKind::XAmzSha256 } else { PayloadChecksumKind::NoHeader };
    settings.session_token_mode =
        if opts.omit_session_token { SessionTokenMode::Exclude } else { SessionTokenMode::Include };
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(req.region)
        .name(req.service)
        .time(req.time)
        .settings(settings)
        .build()
        .map_err(|e| SigningError(e.to_string()))?
        .into();
    let signable =
        SignableRequest::new(req.method, req.url, req.headers.iter().copied(), SignableBody::Bytes(req.body))
            .map_err(|e| SigningError(e.to_string()))?;
    let (instructions, _signature) = sign(signable, &params).map_err(|e| SigningError(e.to_string()))?.into_parts();
    Ok(instructions.headers().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_a_step_functions_call_deterministically() {
        let creds = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "secret".into(),
            session_token: None,
        };
        let req = SignRequest {
            method: "POST",
            url: "https://states.us-east-1.amazonaws.com/",
            headers: &[
                ("content-type", "application/x-amz-json-1.0"),
                ("x-amz-target", "AWSStepFunctions.SendTaskSuccess"),
            ],
            body: b"{}",
            region: "us-east-1",
            service: "states",
            time: unix_ms_to_system_time(1_440_938_160_000),
        };
        let a = sign_headers(&req, &creds, SignOptions::default()).unwrap();
        let b = sign_headers(&req, &creds, SignOptions::default()).unwrap();
        assert_eq!(a, b);
        let auth = &a.iter().find(|(k, _)| k == "authorization").unwrap().1;
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/states/aws4_request"));
        assert!(auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-target"), "{auth}");
        assert!(!format!("{creds:?}").contains("secret\""));
    }
}

//! The AWS sections: the region and credentials, the accounts whose workflows ringi answers (and federation
//! into them), the Step Functions and SES endpoints, and where approvals are kept (D1 or DynamoDB).

use super::vars::{url, ConfigError, Vars};
use crate::adapters::aws_target::{AwsTargets, OwnRole};
use crate::adapters::federation::Federation;
use crate::adapters::sigv4::AwsCredentials;

/// Where approvals are kept (`STORAGE`): D1 (the default, every feature), or a DynamoDB table shaped like the
/// seed design's token table (the decision path; design.md §7 "DynamoDB").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    D1,
    DynamoDb(DynamoDbConfig),
}

/// `STORAGE=dynamodb`: the table (`DYNAMODB_TABLE`, hash key `approvalId`), its approver index
/// (`DYNAMODB_INDEX`, hash key `approverUserId`), and where to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoDbConfig {
    pub table: String,
    pub index: String,
    pub region: String,
    pub endpoint: String,
}

/// DynamoDB table and index names: 3-255 characters of `[A-Za-z0-9_.-]`.
fn dynamodb_name(name: &'static str, v: String) -> Result<String, ConfigError> {
    let ok = (3..=255).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(v)
    } else {
        Err(ConfigError::Invalid(name, "must be 3-255 characters of A-Z a-z 0-9 _ . -".into()))
    }
}

pub(super) struct Aws {
    pub region: String,
    pub credentials: Option<AwsCredentials>,
    pub sfn_endpoint: Option<String>,
    pub targets: AwsTargets,
    pub federation: Option<Federation>,
    pub own_role: Option<OwnRole>,
    pub ses_endpoint: String,
}

/// `AWS_REGION`, the access key, `SFN_ENDPOINT`, `AWS_TARGETS`, federation, the worker's own role
/// (`AWS_ROLE_ARN`), `SES_ENDPOINT`.
pub(super) fn aws(v: &Vars) -> Result<Aws, ConfigError> {
    let region = v.opt("AWS_REGION").unwrap_or_else(|| "us-east-1".into());
    let credentials = match (v.opt("AWS_ACCESS_KEY_ID"), v.opt("AWS_SECRET_ACCESS_KEY")) {
        (Some(access_key_id), Some(secret_access_key)) => {
            Some(AwsCredentials { access_key_id, secret_access_key, session_token: v.opt("AWS_SESSION_TOKEN") })
        }
        (None, None) => None,
        _ => {
            return Err(ConfigError::Invalid(
                "AWS_ACCESS_KEY_ID",
                "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
            ))
        }
    };
    let sfn_endpoint = v.url("SFN_ENDPOINT")?;
    let targets = match v.opt("AWS_TARGETS") {
        None => AwsTargets::default(),
        Some(t) => AwsTargets::parse(&t).map_err(|e| ConfigError::Invalid("AWS_TARGETS", e))?,
    };
    let federation = federation(v, &targets)?;
    let own_role = match v.opt("AWS_ROLE_ARN") {
        None => None,
        Some(_) if federation.is_none() => {
            return Err(ConfigError::Invalid(
                "AWS_ROLE_ARN",
                "the worker's role is assumed with its own token: set FEDERATION_SIGNING_KEY too".into(),
            ))
        }
        Some(arn) => Some(OwnRole::parse(&arn).map_err(|e| ConfigError::Invalid("AWS_ROLE_ARN", e))?),
    };
    let ses_endpoint = match v.opt("SES_ENDPOINT") {
        Some(u) => url("SES_ENDPOINT", u)?,
        None => format!("https://email.{region}.amazonaws.com"),
    };
    Ok(Aws { region, credentials, sfn_endpoint, targets, federation, own_role, ses_endpoint })
}

/// `FEDERATION_SIGNING_KEY` set: callbacks use temporary credentials of each target account's role, so every
/// account of `AWS_TARGETS` must name one.
fn federation(v: &Vars, targets: &AwsTargets) -> Result<Option<Federation>, ConfigError> {
    let Some(key) = v.opt("FEDERATION_SIGNING_KEY") else { return Ok(None) };
    let sts = v.url("STS_ENDPOINT")?;
    let f = Federation::parse(&key, v.opt("FEDERATION_PUBLISHED_KEYS").as_deref(), v.opt("FEDERATION_AUDIENCE"), sts)
        .map_err(|(name, e)| ConfigError::Invalid(name, e))?;
    if targets.is_empty() {
        return Err(ConfigError::Invalid(
            "AWS_TARGETS",
            "federation (FEDERATION_SIGNING_KEY) needs the accounts and their roles".into(),
        ));
    }
    if let Some(a) = targets.accounts().iter().find(|a| a.role_arn.is_none()) {
        return Err(ConfigError::Invalid(
            "AWS_TARGETS",
            format!("account {} has no roleArn: federation assumes each account's role", a.account),
        ));
    }
    Ok(Some(f))
}

/// `STORAGE`: `d1` (the default) or `dynamodb` with its table, index, region and endpoint.
pub(super) fn storage(v: &Vars, aws: &Aws) -> Result<Storage, ConfigError> {
    match v.opt("STORAGE").as_deref() {
        None | Some("d1") => Ok(Storage::D1),
        Some("dynamodb") => {
            let region = v.opt("DYNAMODB_REGION").unwrap_or_else(|| aws.region.clone());
            if aws.credentials.is_none() && aws.own_role.is_none() {
                return Err(ConfigError::Invalid(
                    "STORAGE",
                    "dynamodb needs the worker's role (AWS_ROLE_ARN, with federation) or an access key".into(),
                ));
            }
            Ok(Storage::DynamoDb(DynamoDbConfig {
                table: dynamodb_name("DYNAMODB_TABLE", v.req("DYNAMODB_TABLE")?)?,
                index: dynamodb_name("DYNAMODB_INDEX", v.opt("DYNAMODB_INDEX").unwrap_or_else(|| "byApprover".into()))?,
                endpoint: match v.opt("DYNAMODB_ENDPOINT") {
                    Some(u) => url("DYNAMODB_ENDPOINT", u)?,
                    None => format!("https://dynamodb.{region}.amazonaws.com"),
                },
                region,
            }))
        }
        Some(_) => Err(ConfigError::Invalid("STORAGE", "must be d1 or dynamodb".into())),
    }
}

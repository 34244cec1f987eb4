//! The AWS sections: the region and credentials, the accounts whose workflows ringi answers (and federation
//! into them), the Step Functions and SES endpoints, and where approvals are kept (D1 or DynamoDB).

use super::vars::{url, ConfigError, Vars};
use crate::adapters::aws_target::{AwsTargets, OwnRole};
use crate::adapters::federation::Federation;
use crate::adapters::keyring::KeyRing;
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
/// (`AWS_ROLE_ARN`), `SES_ENDPOINT`. `keys`: the key ring, whose tokens federation shows AWS.
pub(super) fn aws(v: &Vars, keys: Option<&KeyRing>) -> Result<Aws, ConfigError> {
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
    let federation = federation(v, &targets, keys.is_some() && credentials.is_none() && !targets.is_empty())?;
    let own_role = match v.opt("AWS_ROLE_ARN") {
        None => None,
        Some(_) if federation.is_none() => {
            return Err(ConfigError::Invalid(
                "AWS_ROLE_ARN",
                "the worker's role is assumed with its own token: set SIGNING_KEY, and no access key".into(),
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

/// Federation (`federated`: a key ring, no access key, and `AWS_TARGETS`): callbacks use temporary credentials of
/// each target account's role, so every account must name one. An access key, where one is set, signs instead (the
/// key ring then only signs receipts); without either, nothing can sign for AWS yet (a deploy switching from the
/// access key to federation passes through that, between removing the key and deploying the targets).
fn federation(v: &Vars, targets: &AwsTargets, federated: bool) -> Result<Option<Federation>, ConfigError> {
    if !federated {
        return Ok(None);
    }
    let f = Federation::new(v.opt("FEDERATION_AUDIENCE"), v.url("STS_ENDPOINT")?);
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

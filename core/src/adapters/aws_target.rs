//! Where an approval's callback goes: the AWS account and region its workflow runs in. Which accounts and
//! regions this ringi answers is server-side configuration (`AWS_TARGETS`); a registration names its target
//! (the EventBridge envelope's `account`/`region`, or `aws.accountId`/`aws.region`) and is refused unless
//! the configuration lists it. A registrant never supplies a role or an endpoint.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use crate::base::error::ApiError;

/// A 12-digit AWS account ID.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccountId(String);

impl AccountId {
    pub fn parse(s: &str) -> Option<Self> {
        (s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit())).then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AccountId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An AWS region name (`eu-west-1`, `us-gov-west-1`): it becomes part of a host name, so only lower-case
/// letters, digits and inner hyphens.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Region(String);

impl Region {
    pub fn parse(s: &str) -> Option<Self> {
        let ok = (4..=32).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && s.contains('-')
            && !s.starts_with('-')
            && !s.ends_with('-')
            && !s.contains("--");
        ok.then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An IAM role ARN of the account it is configured for (`arn:aws:iam::ACCOUNT:role/NAME`, any partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleArn(String);

impl RoleArn {
    pub fn parse(s: &str, account: &AccountId) -> Result<Self, String> {
        let mut parts = s.splitn(6, ':');
        let (arn, partition, service, region, acct, resource) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next());
        let ok = arn == Some("arn")
            && partition.is_some_and(|p| p.starts_with("aws"))
            && service == Some("iam")
            && region == Some("")
            && resource.is_some_and(|r| r.starts_with("role/") && r.len() > 5 && !r.contains(char::is_whitespace));
        if !ok {
            return Err(format!("roleArn of {account} must be arn:aws:iam::{account}:role/NAME"));
        }
        if acct != Some(account.as_str()) {
            return Err(format!("roleArn of {account} names another account"));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The worker's own role in its home account (`AWS_ROLE_ARN`): under federation, mail (SES) and the DynamoDB
/// table are reached with its temporary credentials, so the worker holds no access key at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnRole {
    pub account: AccountId,
    pub arn: RoleArn,
}

impl OwnRole {
    pub fn parse(s: &str) -> Result<Self, String> {
        let account = s
            .split(':')
            .nth(4)
            .and_then(AccountId::parse)
            .ok_or_else(|| "must be arn:aws:iam::ACCOUNT:role/NAME".to_owned())?;
        Ok(Self { arn: RoleArn::parse(s, &account)?, account })
    }
}

/// Where one approval's callback goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsTarget {
    pub account: AccountId,
    pub region: Region,
}

impl AwsTarget {
    /// From the stored columns; `None` when the approval predates targets or the ringi has none (either
    /// missing), an error naming the column when one is corrupt.
    pub fn from_stored(
        account: Option<&str>,
        region: Option<&str>,
    ) -> Result<Option<Self>, crate::base::corrupt::CorruptValue> {
        use crate::base::corrupt::CorruptValue;
        match (account, region) {
            (Some(a), Some(r)) => Ok(Some(Self {
                account: AccountId::parse(a).ok_or_else(|| CorruptValue::new("approvals.aws_account", a))?,
                region: Region::parse(r).ok_or_else(|| CorruptValue::new("approvals.aws_region", r))?,
            })),
            _ => Ok(None),
        }
    }
}

/// One configured account: the role ringi assumes there (federation) and the regions it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetAccount {
    pub account: AccountId,
    pub role_arn: Option<RoleArn>,
    pub regions: Vec<Region>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawAccount {
    role_arn: Option<String>,
    regions: Vec<String>,
}

/// `AWS_TARGETS`: `{"ACCOUNT": {"roleArn": "arn:aws:iam::ACCOUNT:role/NAME", "regions": ["eu-west-1"]}}`.
/// Empty (unset): this ringi answers one account, its own credentials' (`AWS_REGION`), as before targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwsTargets(Vec<TargetAccount>);

/// The target a registration names, and where it named it (the 400 names that field).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestedTarget {
    /// From the EventBridge envelope (`account`, `region`).
    pub envelope: (Option<String>, Option<String>),
    /// From the body's `aws` member (`aws.accountId`, `aws.region`); `Some` when the member is there.
    pub explicit: Option<(Option<String>, Option<String>)>,
}

impl AwsTargets {
    pub fn parse(json: &str) -> Result<Self, String> {
        let raw: BTreeMap<String, RawAccount> = serde_json::from_str(json)
            .map_err(|e| format!("must be {{\"ACCOUNT\": {{\"roleArn\": …, \"regions\": [...]}}}}: {e}"))?;
        if raw.is_empty() {
            return Err("lists no account".into());
        }
        let mut out = Vec::new();
        for (account, a) in raw {
            let id = AccountId::parse(&account).ok_or_else(|| format!("{account:?} is not a 12-digit account ID"))?;
            if a.regions.is_empty() {
                return Err(format!("account {id} allows no region"));
            }
            let regions = a
                .regions
                .iter()
                .map(|r| Region::parse(r).ok_or_else(|| format!("{r:?} of account {id} is not a region name")))
                .collect::<Result<Vec<_>, _>>()?;
            let role_arn = a.role_arn.as_deref().map(|r| RoleArn::parse(r, &id)).transpose()?;
            out.push(TargetAccount { account: id, role_arn, regions });
        }
        Ok(Self(out))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn accounts(&self) -> &[TargetAccount] {
        &self.0
    }

    pub fn account(&self, id: &AccountId) -> Option<&TargetAccount> {
        self.0.iter().find(|a| &a.account == id)
    }

    /// The registration's target, checked against the configuration. Without targets configured, an
    /// envelope's account/region are ignored (one account, as before) and an explicit `aws` is refused: it
    /// could not be honoured. With targets, one is required; an envelope and an explicit `aws` that both name
    /// one must agree, and it must be configured.
    pub fn resolve(&self, req: &RequestedTarget) -> Result<Option<AwsTarget>, ApiError> {
        if self.is_empty() {
            return match req.explicit {
                Some(_) => Err(ApiError::invalid("aws", "this ringi answers one AWS account (AWS_TARGETS is not set)")),
                None => Ok(None),
            };
        }
        let (env_account, env_region) = &req.envelope;
        let (account, region) = match &req.explicit {
            Some((a, r)) => {
                // A direct field may not contradict what EventBridge put in the envelope.
                let a = agree("aws.accountId", a.as_deref(), env_account.as_deref(), "account")?;
                let r = agree("aws.region", r.as_deref(), env_region.as_deref(), "region")?;
                ((a, "aws.accountId"), (r, "aws.region"))
            }
            None => ((env_account.as_deref(), "account"), (env_region.as_deref(), "region")),
        };
        let (account, account_field) = account;
        let (region, region_field) = region;
        let account = account.ok_or_else(|| {
            ApiError::invalid(account_field, "is required: this ringi answers several AWS accounts (AWS_TARGETS)")
        })?;
        let region = region.ok_or_else(|| ApiError::invalid(region_field, "is required"))?;
        let id = AccountId::parse(account)
            .ok_or_else(|| ApiError::invalid(account_field, "must be a 12-digit AWS account ID"))?;
        let configured = self.account(&id).ok_or_else(|| {
            ApiError::invalid(account_field, "is not an AWS account this ringi answers (AWS_TARGETS)")
        })?;
        let region = Region::parse(region)
            .filter(|r| configured.regions.contains(r))
            .ok_or_else(|| ApiError::invalid(region_field, format!("is not a region this ringi answers for {id}")))?;
        Ok(Some(AwsTarget { account: id, region }))
    }
}

/// The explicit value, unless the envelope names a different one.
fn agree<'a>(
    field: &str,
    explicit: Option<&'a str>,
    envelope: Option<&'a str>,
    envelope_field: &str,
) -> Result<Option<&'a str>, ApiError> {
    match (explicit, envelope) {
        (Some(x), Some(e)) if x != e => {
            Err(ApiError::invalid(field, format!("differs from the EventBridge event's {envelope_field}")))
        }
        (x, e) => Ok(x.or(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"{"111111111111": {"roleArn": "arn:aws:iam::111111111111:role/ringi-callback",
                              "regions": ["eu-west-1", "us-east-1"]},
                             "222222222222": {"roleArn": "arn:aws-cn:iam::222222222222:role/path/ringi",
                              "regions": ["ap-northeast-1"]}}"#;

    fn targets() -> AwsTargets {
        AwsTargets::parse(CONFIG).unwrap()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    fn field(r: Result<Option<AwsTarget>, ApiError>) -> (String, String) {
        match r.unwrap_err() {
            ApiError::Invalid { field, message } => (field, message),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn configuration_is_checked_account_by_account() {
        let t = targets();
        assert_eq!(t.accounts().len(), 2);
        let a = t.account(&AccountId::parse("222222222222").unwrap()).unwrap();
        assert_eq!(a.regions, vec![Region::parse("ap-northeast-1").unwrap()]);
        assert_eq!(a.role_arn.as_ref().unwrap().as_str(), "arn:aws-cn:iam::222222222222:role/path/ringi");
        for (bad, says) in [
            ("{}", "no account"),
            (r#"{"1234": {"regions": ["eu-west-1"]}}"#, "12-digit"),
            (r#"{"111111111111": {"regions": []}}"#, "no region"),
            (r#"{"111111111111": {"regions": ["EU_WEST"]}}"#, "region name"),
            (
                r#"{"111111111111": {"regions": ["eu-west-1"], "roleArn": "arn:aws:iam::999999999999:role/x"}}"#,
                "another account",
            ),
            (
                r#"{"111111111111": {"regions": ["eu-west-1"], "roleArn": "arn:aws:sts::111111111111:role/x"}}"#,
                "must be arn",
            ),
            (r#"{"111111111111": {"regions": ["eu-west-1"], "endpoint": "https://x"}}"#, "unknown field"),
            ("[1]", "must be"),
        ] {
            let e = AwsTargets::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(Region::parse("us-gov-west-1").is_some());
        for bad in ["evil.com/", "eu--west-1", "-eu-west-1", "euwest1", "eu-west-1.x"] {
            assert!(Region::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_envelope_names_the_target() {
        let req = RequestedTarget { envelope: (s("111111111111"), s("eu-west-1")), explicit: None };
        let t = targets().resolve(&req).unwrap().unwrap();
        assert_eq!((t.account.as_str(), t.region.as_str()), ("111111111111", "eu-west-1"));
        let other = RequestedTarget { envelope: (s("333333333333"), s("eu-west-1")), explicit: None };
        assert_eq!(field(targets().resolve(&other)).0, "account");
        let region = RequestedTarget { envelope: (s("222222222222"), s("eu-west-1")), explicit: None };
        assert_eq!(field(targets().resolve(&region)).0, "region");
        assert_eq!(field(targets().resolve(&RequestedTarget::default())).0, "account");
    }

    #[test]
    fn a_direct_caller_names_it_in_aws_and_may_not_contradict_the_envelope() {
        let direct = |a: &str, r: &str| RequestedTarget { envelope: (None, None), explicit: Some((s(a), s(r))) };
        let t = targets().resolve(&direct("222222222222", "ap-northeast-1")).unwrap().unwrap();
        assert_eq!(t.region.as_str(), "ap-northeast-1");
        assert_eq!(field(targets().resolve(&direct("333333333333", "eu-west-1"))).0, "aws.accountId");
        assert_eq!(field(targets().resolve(&direct("11111111111x", "eu-west-1"))).0, "aws.accountId");
        assert_eq!(field(targets().resolve(&direct("111111111111", "ap-northeast-1"))).0, "aws.region");
        assert_eq!(field(targets().resolve(&direct("111111111111", "states.evil.test#"))).0, "aws.region");
        let missing = RequestedTarget { envelope: (None, None), explicit: Some((s("111111111111"), None)) };
        assert_eq!(field(targets().resolve(&missing)).0, "aws.region");
        // Spoofing the account of an event that came from another one.
        let spoofed = RequestedTarget {
            envelope: (s("111111111111"), s("eu-west-1")),
            explicit: Some((s("222222222222"), s("ap-northeast-1"))),
        };
        let (f, m) = field(targets().resolve(&spoofed));
        assert_eq!(f, "aws.accountId");
        assert!(m.contains("differs"), "{m}");
        // Agreeing with the envelope, or filling in only what it lacks, is fine.
        let agreeing =
            RequestedTarget { envelope: (s("111111111111"), s("us-east-1")), explicit: Some((None, s("us-east-1"))) };
        assert_eq!(targets().resolve(&agreeing).unwrap().unwrap().account.as_str(), "111111111111");
    }

    #[test]
    fn without_targets_one_account_is_answered_as_before() {
        let none = AwsTargets::default();
        let envelope = RequestedTarget { envelope: (s("111111111111"), s("eu-west-1")), explicit: None };
        assert_eq!(none.resolve(&envelope).unwrap(), None);
        let direct = RequestedTarget { envelope: (None, None), explicit: Some((s("111111111111"), s("eu-west-1"))) };
        assert_eq!(field(none.resolve(&direct)).0, "aws");
    }

    #[test]
    fn the_workers_own_role_names_its_account() {
        let own = OwnRole::parse("arn:aws:iam::123456789012:role/ringi-worker").unwrap();
        assert_eq!(own.account.as_str(), "123456789012");
        assert_eq!(own.arn.as_str(), "arn:aws:iam::123456789012:role/ringi-worker");
        for bad in [
            "ringi-worker",
            "arn:aws:iam::12345:role/x",
            "arn:aws:iam::123456789012:user/x",
            "arn:aws:sts::123456789012:role/x",
        ] {
            assert!(OwnRole::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stored_targets_read_back_or_name_the_corrupt_column() {
        let t = AwsTarget::from_stored(Some("111111111111"), Some("eu-west-1")).unwrap().unwrap();
        assert_eq!(t.account.as_str(), "111111111111");
        assert_eq!(AwsTarget::from_stored(None, None).unwrap(), None);
        assert!(AwsTarget::from_stored(Some("x"), Some("eu-west-1")).is_err());
    }
}

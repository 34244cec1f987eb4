//! The worker's typed configuration (design.md §13), parsed once from wrangler vars and secrets.

use crate::adapters::aws_target::{AwsTarget, AwsTargets};
use crate::adapters::chat::ChatChannels;
use crate::adapters::discovery::Discovery;
use crate::adapters::federation::Federation;
use crate::adapters::jwt::{AudienceRule, ClaimMapping, EmailPolicy, IdpProfile, JwtRules, ScopeClaim, TokenUse};
use crate::adapters::sfn::RetryPolicy;
use crate::adapters::sigv4::AwsCredentials;
use crate::api::wire::SpaConfig;
use crate::base::text;
use crate::dev::clock::TestClock;
use crate::dev::faults::D1Faults;
use crate::dev::latency::LatencyModel;

/// Time a claim holder needs besides the callback itself (the claim, the final D1 writes).
pub const CLAIM_LEASE_MARGIN_MS: u64 = 2_000;

/// The shortest `CLAIM_LEASE_SECONDS` accepted: a lease must outlast the worst-case delivery of a callback
/// (every attempt timing out plus backoff, [`RetryPolicy::worst_case_ms`]) and the margin, or a second
/// approver could claim and deliver while the first delivery is still in flight.
pub fn min_claim_lease_secs(policy: &RetryPolicy) -> i64 {
    (policy.worst_case_ms() + CLAIM_LEASE_MARGIN_MS).div_ceil(1000) as i64
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration {0} is required")]
    Missing(&'static str),
    #[error("configuration {0} is invalid: {1}")]
    Invalid(&'static str, String),
}

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

#[derive(Debug, Clone)]
pub struct Config {
    /// `STORAGE`: the approvals' backend.
    pub storage: Storage,
    pub public_base_url: String,
    /// Cognito (`COGNITO_ISSUER`) or any OpenID Connect provider (`OIDC_ISSUER`).
    pub profile: IdpProfile,
    pub issuer: String,
    /// `JWKS_URL`. Cognito: by default below the issuer. OIDC: by default `None`, the discovery document's
    /// `jwks_uri` (the worker caches the document).
    pub jwks_url: Option<String>,
    /// The SPA's client (`COGNITO_CLIENT_ID` / `OIDC_CLIENT_ID`).
    pub client_id: String,
    /// OIDC: what `aud` must contain (`OIDC_AUDIENCE`, default the client id). Cognito: the client id.
    pub audience: String,
    pub token_use: TokenUse,
    /// Where groups, scopes and the email are read (`GROUPS_CLAIM`, `SCOPE_CLAIM`, `EMAIL_VERIFIED`).
    pub mapping: ClaimMapping,
    /// `SIGN_IN_SCOPES`: what the SPA asks for at sign-in (space-separated, `openid` included).
    pub sign_in_scopes: String,
    pub cognito_domain: String,
    pub register_scope: String,
    /// App clients whose client-credentials tokens may register. No default: empty means no token may
    /// register (API keys only).
    pub register_client_ids: Vec<String>,
    /// Lower-case hex SHA-256 digests of accepted registration API keys.
    pub register_api_key_hashes: Vec<String>,
    pub aws_region: String,
    pub aws_credentials: Option<AwsCredentials>,
    /// `SFN_ENDPOINT`: one fixed endpoint for every region (a local stand-in); by default each region's own.
    pub sfn_endpoint: Option<String>,
    /// `AWS_TARGETS`: the accounts and regions whose workflows this ringi answers (core::aws_target). Empty:
    /// one account, the credentials' own, in `AWS_REGION`.
    pub aws_targets: AwsTargets,
    /// `FEDERATION_SIGNING_KEY` set: callbacks use temporary credentials of each target's role
    /// (core::federation), not the static access key.
    pub federation: Option<Federation>,
    pub ses_endpoint: String,
    pub mail_from: Option<String>,
    /// Besides the approval's own email approvers, `notify` may name addresses in these domains only
    /// (lower case), so a registrant cannot make ringi mail anyone.
    pub mail_allowed_domains: Vec<String>,
    /// `CHAT_CHANNELS` (a secret): the chat channels a registration's `notify` may name (core::chat). Empty:
    /// none may be named.
    pub chat_channels: ChatChannels,
    /// Registrations one credential may make per minute (429 beyond).
    pub register_rate_per_minute: u32,
    pub claim_lease_ms: i64,
    /// Send one reminder when this little time is left.
    pub reminder_window_ms: i64,
    /// `ON_EXPIRY_LEAD_SECONDS`: an approval registered with `onExpiry` `reject`/`approve` gives its approvers a
    /// deadline this long before the task's (`on_expiry::deadlines`), and the cron answers in between. The cron
    /// runs every 5 minutes, so the default (10 minutes) gives two runs inside the window: one whose callback
    /// failed is retried by the next.
    pub on_expiry_lead_ms: i64,
    /// Closed approvals (and their audit trail) are purged this long after the decision.
    pub retention_ms: i64,
    /// Members of this group are operators: the audit export, reassigning approvers. None: nobody is.
    pub admin_group: Option<String>,
    /// Audit events are kept this long after they happened, independent of `retention_ms`.
    pub audit_retention_ms: i64,
    pub default_locale: String,
    pub version: String,
    /// Dev/bench only (`D1_FAULTS`): makes chosen D1 calls fail. Refused unless `PUBLIC_BASE_URL` is a
    /// loopback origin, so a production config cannot carry it.
    pub d1_faults: D1Faults,
    /// Dev/bench only (`INJECT_LATENCY`): a delay before each D1 round trip and AWS call, to model a
    /// placement. Refused off loopback like `D1_FAULTS`.
    pub inject_latency: LatencyModel,
    /// Dev/test only (`TEST_CLOCK`): moves the worker's "now" forward, so tests skip leases, schedules and
    /// expiries instead of sleeping. Refused off loopback like `D1_FAULTS`.
    pub test_clock: TestClock,
}

impl Config {
    /// A dev/bench switch is on: responses may then carry the worker's own counts (round trips).
    pub fn dev_switches_on(&self) -> bool {
        self.d1_faults.enabled() || self.inject_latency.enabled()
    }
}

fn list(v: Option<String>) -> Vec<String> {
    v.unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// [`check_url`] for the variable `name`.
pub fn check_url(name: &'static str, v: &str) -> Result<(), ConfigError> {
    text::check_url(v).map_err(|m| ConfigError::Invalid(name, m))
}

fn url(name: &'static str, v: String) -> Result<String, ConfigError> {
    check_url(name, &v)?;
    Ok(v.trim_end_matches('/').to_owned())
}

/// `scheme://host[:port]` of a URL already accepted by [`text::check_url`] (for the CSP).
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    (!host_port.is_empty()).then(|| format!("{}://{}", scheme.to_ascii_lowercase(), host_port.to_ascii_lowercase()))
}

impl Config {
    /// `get` reads one variable (empty strings count as unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let opt = |name: &str| get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let req = |name: &'static str| opt(name).ok_or(ConfigError::Missing(name));
        let public_base_url = url("PUBLIC_BASE_URL", req("PUBLIC_BASE_URL")?)?;
        let (profile, issuer_var, issuer) =
            match (opt("COGNITO_ISSUER"), opt("OIDC_ISSUER")) {
                (Some(i), None) => (IdpProfile::Cognito, "COGNITO_ISSUER", i),
                (None, Some(i)) => (IdpProfile::Oidc, "OIDC_ISSUER", i),
                (Some(_), Some(_)) => return Err(ConfigError::Invalid(
                    "OIDC_ISSUER",
                    "set COGNITO_ISSUER (a Cognito user pool) or OIDC_ISSUER (any OpenID Connect provider), not both"
                        .into(),
                )),
                (None, None) => return Err(ConfigError::Missing("COGNITO_ISSUER (or OIDC_ISSUER)")),
            };
        // Exact `iss` comparison: the value is kept as given, only its scheme is checked.
        check_url(issuer_var, &issuer)?;
        let cognito = profile == IdpProfile::Cognito;
        // A setting of the other profile is a mistake, not something to ignore silently.
        let only_for = |name: &'static str, ok: bool, why: &str| -> Result<(), ConfigError> {
            if !ok && opt(name).is_some() {
                return Err(ConfigError::Invalid(name, why.into()));
            }
            Ok(())
        };
        only_for("COGNITO_CLIENT_ID", cognito, "is for a Cognito user pool: with OIDC_ISSUER set OIDC_CLIENT_ID")?;
        only_for(
            "COGNITO_DOMAIN",
            cognito,
            "is for a Cognito user pool: with OIDC_ISSUER the endpoints come from the issuer's discovery document",
        )?;
        only_for("OIDC_CLIENT_ID", !cognito, "is for OIDC_ISSUER: a Cognito user pool's client is COGNITO_CLIENT_ID")?;
        only_for(
            "OIDC_AUDIENCE",
            !cognito,
            "is for OIDC_ISSUER: Cognito tokens are checked on client_id and token_use",
        )?;
        let jwks_url = match opt("JWKS_URL") {
            Some(u) => Some(url("JWKS_URL", u)?),
            None if cognito => Some(format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/'))),
            None => None,
        };
        let client_id = req(if cognito { "COGNITO_CLIENT_ID" } else { "OIDC_CLIENT_ID" })?;
        let token_use = match opt("TOKEN_USE") {
            None => TokenUse::Access,
            Some(t) => {
                TokenUse::parse(&t).ok_or_else(|| ConfigError::Invalid("TOKEN_USE", "must be id or access".into()))?
            }
        };
        let audience = opt("OIDC_AUDIENCE").unwrap_or_else(|| client_id.clone());
        if !cognito && token_use == TokenUse::Id && audience != client_id {
            return Err(ConfigError::Invalid(
                "OIDC_AUDIENCE",
                "with TOKEN_USE=id the bearer is an ID token, whose aud is the client (OIDC_CLIENT_ID)".into(),
            ));
        }
        let groups_claim =
            opt("GROUPS_CLAIM").unwrap_or_else(|| if cognito { "cognito:groups" } else { "groups" }.to_owned());
        if groups_claim.chars().any(char::is_whitespace) {
            return Err(ConfigError::Invalid("GROUPS_CLAIM", "a claim name or dotted path, no spaces".into()));
        }
        let email = match opt("EMAIL_VERIFIED") {
            None => EmailPolicy::RequireVerified,
            Some(v) => EmailPolicy::parse(&v)
                .ok_or_else(|| ConfigError::Invalid("EMAIL_VERIFIED", "must be require or trust".into()))?,
        };
        if cognito && email == EmailPolicy::Trust {
            return Err(ConfigError::Invalid(
                "EMAIL_VERIFIED",
                "trust is for providers that send no email_verified; Cognito does, and an unverified Cognito \
                 address may be anyone's"
                    .into(),
            ));
        }
        let scope_claim = match opt("SCOPE_CLAIM") {
            None => ScopeClaim::Scope,
            Some(v) => ScopeClaim::parse(&v)
                .ok_or_else(|| ConfigError::Invalid("SCOPE_CLAIM", "must be scope or scp".into()))?,
        };
        if cognito && scope_claim == ScopeClaim::Scp {
            return Err(ConfigError::Invalid("SCOPE_CLAIM", "Cognito tokens carry their scopes in scope".into()));
        }
        let sign_in_scopes = opt("SIGN_IN_SCOPES")
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| "openid email profile".into());
        if !sign_in_scopes.split(' ').any(|s| s == "openid") {
            return Err(ConfigError::Invalid("SIGN_IN_SCOPES", "must include openid".into()));
        }
        let mapping = ClaimMapping { groups_claim, email, scope_claim };
        let cognito_domain = opt("COGNITO_DOMAIN").map(|d| url("COGNITO_DOMAIN", d)).transpose()?.unwrap_or_default();
        // No fallback to COGNITO_CLIENT_ID: the SPA's client signs in people, and people do not register.
        let register_client_ids = list(opt("REGISTER_CLIENT_IDS"));
        let register_api_key_hashes =
            list(opt("REGISTER_API_KEYS")).into_iter().map(|h| h.to_ascii_lowercase()).collect::<Vec<_>>();
        if let Some(bad) =
            register_api_key_hashes.iter().find(|h| h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(ConfigError::Invalid(
                "REGISTER_API_KEYS",
                format!("entry of length {} is not a SHA-256 hex digest", bad.len()),
            ));
        }
        let aws_region = opt("AWS_REGION").unwrap_or_else(|| "us-east-1".into());
        let aws_credentials = match (opt("AWS_ACCESS_KEY_ID"), opt("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => {
                Some(AwsCredentials { access_key_id, secret_access_key, session_token: opt("AWS_SESSION_TOKEN") })
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid(
                    "AWS_ACCESS_KEY_ID",
                    "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
                ))
            }
        };
        let sfn_endpoint = opt("SFN_ENDPOINT").map(|u| url("SFN_ENDPOINT", u)).transpose()?;
        let aws_targets = match opt("AWS_TARGETS") {
            None => AwsTargets::default(),
            Some(v) => AwsTargets::parse(&v).map_err(|e| ConfigError::Invalid("AWS_TARGETS", e))?,
        };
        let federation = match opt("FEDERATION_SIGNING_KEY") {
            None => None,
            Some(key) => {
                let sts = opt("STS_ENDPOINT").map(|u| url("STS_ENDPOINT", u)).transpose()?;
                let f = Federation::parse(
                    &key,
                    opt("FEDERATION_PUBLISHED_KEYS").as_deref(),
                    opt("FEDERATION_AUDIENCE"),
                    sts,
                )
                .map_err(|(name, e)| ConfigError::Invalid(name, e))?;
                if aws_targets.is_empty() {
                    return Err(ConfigError::Invalid(
                        "AWS_TARGETS",
                        "federation (FEDERATION_SIGNING_KEY) needs the accounts and their roles".into(),
                    ));
                }
                if let Some(a) = aws_targets.accounts().iter().find(|a| a.role_arn.is_none()) {
                    return Err(ConfigError::Invalid(
                        "AWS_TARGETS",
                        format!("account {} has no roleArn: federation assumes each account's role", a.account),
                    ));
                }
                Some(f)
            }
        };
        let ses_endpoint = match opt("SES_ENDPOINT") {
            Some(u) => url("SES_ENDPOINT", u)?,
            None => format!("https://email.{aws_region}.amazonaws.com"),
        };
        let storage = match opt("STORAGE").as_deref() {
            None | Some("d1") => Storage::D1,
            Some("dynamodb") => {
                let region = opt("DYNAMODB_REGION").unwrap_or_else(|| aws_region.clone());
                if aws_credentials.is_none() {
                    return Err(ConfigError::Invalid(
                        "STORAGE",
                        "dynamodb needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
                    ));
                }
                Storage::DynamoDb(DynamoDbConfig {
                    table: dynamodb_name("DYNAMODB_TABLE", req("DYNAMODB_TABLE")?)?,
                    index: dynamodb_name(
                        "DYNAMODB_INDEX",
                        opt("DYNAMODB_INDEX").unwrap_or_else(|| "byApprover".into()),
                    )?,
                    endpoint: match opt("DYNAMODB_ENDPOINT") {
                        Some(u) => url("DYNAMODB_ENDPOINT", u)?,
                        None => format!("https://dynamodb.{region}.amazonaws.com"),
                    },
                    region,
                })
            }
            Some(_) => return Err(ConfigError::Invalid("STORAGE", "must be d1 or dynamodb".into())),
        };
        let secs = |name: &'static str, default: i64, max: i64| -> Result<i64, ConfigError> {
            match opt(name) {
                None => Ok(default * 1000),
                Some(v) => v
                    .parse::<i64>()
                    .ok()
                    .filter(|s| (1..=max).contains(s))
                    .map(|s| s * 1000)
                    .ok_or_else(|| ConfigError::Invalid(name, format!("must be 1-{max} seconds"))),
            }
        };
        let claim_lease_ms = secs("CLAIM_LEASE_SECONDS", 30, 900)?;
        // Under federation a delivery may also fetch credentials: at most twice (cold, and once more when Step
        // Functions calls them expired), each bounded like an attempt.
        let sts_secs = match federation {
            Some(_) => 2 * RetryPolicy::default().attempt_timeout_ms.div_ceil(1000) as i64,
            None => 0,
        };
        let min_lease = min_claim_lease_secs(&RetryPolicy::default()) + sts_secs;
        if claim_lease_ms < min_lease * 1000 {
            let policy = RetryPolicy::default();
            return Err(ConfigError::Invalid(
                "CLAIM_LEASE_SECONDS",
                format!(
                    "must be at least {min_lease} seconds: a claim must outlast the worst-case callback delivery \
                     ({} attempts × {} ms timeout + backoff = {} ms) plus {CLAIM_LEASE_MARGIN_MS} ms",
                    policy.max_attempts,
                    policy.attempt_timeout_ms,
                    policy.worst_case_ms()
                ),
            ));
        }
        let reminder_window_ms = secs("REMINDER_BEFORE_SECONDS", 24 * 3600, 366 * 86_400)?;
        let on_expiry_lead_ms = secs("ON_EXPIRY_LEAD_SECONDS", 600, 86_400)?;
        let retention_ms = secs("RETENTION_SECONDS", 90 * 86_400, 10 * 366 * 86_400)?;
        let audit_retention_ms = match opt("AUDIT_RETENTION_DAYS") {
            None => 400 * 86_400_000,
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|d| (1..=3660).contains(d))
                .map(|d| d * 86_400_000)
                .ok_or_else(|| ConfigError::Invalid("AUDIT_RETENTION_DAYS", "must be 1-3660 days".into()))?,
        };
        let admin_group = opt("ADMIN_GROUP").map(|g| g.trim().to_owned()).filter(|g| !g.is_empty());
        let mail_allowed_domains: Vec<String> = list(opt("MAIL_ALLOWED_DOMAINS"))
            .into_iter()
            .map(|d| d.trim_start_matches('@').to_ascii_lowercase())
            .collect();
        if let Some(bad) = mail_allowed_domains.iter().find(|d| !crate::base::text::valid_domain(d)) {
            return Err(ConfigError::Invalid("MAIL_ALLOWED_DOMAINS", format!("{bad:?} is not a domain name")));
        }
        let chat_channels = match opt("CHAT_CHANNELS") {
            None => ChatChannels::default(),
            Some(v) => ChatChannels::parse(&v, |u| {
                check_url("CHAT_CHANNELS", u).map_err(|_| "must be an https:// URL (http:// only for loopback)".into())
            })
            .map_err(|e| ConfigError::Invalid("CHAT_CHANNELS", e))?,
        };
        let register_rate_per_minute = match opt("REGISTER_RATE_PER_MINUTE") {
            None => 600,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=100_000).contains(n))
                .ok_or_else(|| ConfigError::Invalid("REGISTER_RATE_PER_MINUTE", "must be 1-100000".into()))?,
        };
        let default_locale = match opt("DEFAULT_LOCALE").as_deref() {
            None | Some("en") => "en".to_owned(),
            Some("ja") => "ja".to_owned(),
            Some(_) => return Err(ConfigError::Invalid("DEFAULT_LOCALE", "must be en or ja".into())),
        };
        let d1_faults = match opt("D1_FAULTS") {
            None => D1Faults::Off,
            Some(v) => D1Faults::parse(&v).map_err(|e| ConfigError::Invalid("D1_FAULTS", e))?,
        };
        let inject_latency = match opt("INJECT_LATENCY") {
            None => LatencyModel::Off,
            Some(v) => LatencyModel::parse(&v).map_err(|e| ConfigError::Invalid("INJECT_LATENCY", e))?,
        };
        let test_clock = match opt("TEST_CLOCK") {
            None => TestClock::Off,
            Some(v) => TestClock::parse(&v).map_err(|e| ConfigError::Invalid("TEST_CLOCK", e))?,
        };
        for (name, on) in [
            ("D1_FAULTS", d1_faults.enabled()),
            ("INJECT_LATENCY", inject_latency.enabled()),
            ("TEST_CLOCK", test_clock.enabled()),
        ] {
            if on && !text::is_loopback_origin(&public_base_url) {
                return Err(ConfigError::Invalid(
                    name,
                    "this switch is for local development and benchmarks only: it is refused unless \
                     PUBLIC_BASE_URL is a loopback origin (127.0.0.1, localhost, [::1])"
                        .into(),
                ));
            }
        }
        Ok(Self {
            storage,
            d1_faults,
            inject_latency,
            test_clock,
            public_base_url,
            profile,
            issuer,
            jwks_url,
            client_id,
            audience,
            token_use,
            mapping,
            sign_in_scopes,
            cognito_domain,
            register_scope: opt("REGISTER_SCOPE").unwrap_or_else(|| "ringi/approvals.write".into()),
            register_client_ids,
            register_api_key_hashes,
            aws_region,
            aws_credentials,
            sfn_endpoint,
            aws_targets,
            federation,
            ses_endpoint,
            mail_from: opt("MAIL_FROM"),
            mail_allowed_domains,
            chat_channels,
            register_rate_per_minute,
            claim_lease_ms,
            reminder_window_ms,
            on_expiry_lead_ms,
            retention_ms,
            admin_group,
            audit_retention_ms,
            default_locale,
            version: opt("RINGI_VERSION").unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
        })
    }

    /// The region a callback is signed for and sent to: the approval's target's, else `AWS_REGION`.
    pub fn callback_region<'a>(&'a self, target: Option<&'a AwsTarget>) -> &'a str {
        target.map_or(self.aws_region.as_str(), |t| t.region.as_str())
    }

    /// The Step Functions endpoint of `region` (or the fixed `SFN_ENDPOINT`), with the trailing `/` of the
    /// JSON protocol's path.
    pub fn sfn_url(&self, region: &str) -> String {
        match &self.sfn_endpoint {
            Some(fixed) => format!("{fixed}/"),
            None => format!("https://states.{region}.amazonaws.com/"),
        }
    }

    /// The issuer of the worker's own tokens for AWS (federation): its public origin, where AWS fetches
    /// `/.well-known/openid-configuration` and the keys.
    pub fn federation_issuer(&self) -> &str {
        self.public_base_url.trim_end_matches('/')
    }

    /// Is this verified caller an operator (a member of `ADMIN_GROUP`)?
    pub fn is_admin(&self, who: &crate::base::principal::Identity) -> bool {
        self.admin_group.as_ref().is_some_and(|g| who.groups.iter().any(|mine| mine == g))
    }

    /// Can a caller's email ever be verified? Not with Cognito access tokens (`TOKEN_USE=access`, the
    /// default): they carry no email. Then approvers and requesters can be matched by `sub` only.
    pub fn emails_verifiable(&self) -> bool {
        !(self.profile == IdpProfile::Cognito && self.token_use == TokenUse::Access)
    }

    /// Whether out-of-office routing may match an absent approver by email: only a verified email, never
    /// one a provider sends unchecked (`EMAIL_VERIFIED=trust`), which anyone could claim.
    pub fn routes_by_email(&self) -> bool {
        self.mapping.email != EmailPolicy::Trust
    }

    fn audience_rule(&self, token_use: TokenUse, client_required: bool) -> AudienceRule {
        match self.profile {
            IdpProfile::Cognito => AudienceRule::Cognito(token_use),
            IdpProfile::Oidc => AudienceRule::Oidc { audience: self.audience.clone(), client_required },
        }
    }

    pub fn user_rules(&self) -> JwtRules {
        JwtRules {
            issuer: self.issuer.clone(),
            audience: self.audience_rule(self.token_use, false),
            client_ids: vec![self.client_id.clone()],
            mapping: self.mapping.clone(),
        }
    }

    /// Machine registration uses client-credentials access tokens, which must name their client.
    pub fn register_rules(&self) -> JwtRules {
        JwtRules {
            issuer: self.issuer.clone(),
            audience: self.audience_rule(TokenUse::Access, true),
            client_ids: self.register_client_ids.clone(),
            mapping: self.mapping.clone(),
        }
    }

    /// The SPA's configuration. The sign-in endpoints: below `COGNITO_DOMAIN` for Cognito; from the issuer's
    /// discovery document (`discovered`, which the worker caches) for OIDC — without it they are empty.
    pub fn spa_config(&self, discovered: Option<&Discovery>) -> SpaConfig {
        let (authorization_endpoint, token_endpoint, end_session_endpoint) = match (self.profile, discovered) {
            (IdpProfile::Cognito, _) => {
                let d = &self.cognito_domain;
                (format!("{d}/oauth2/authorize"), format!("{d}/oauth2/token"), Some(format!("{d}/logout")))
            }
            (IdpProfile::Oidc, Some(doc)) => {
                (doc.authorization_endpoint.clone(), doc.token_endpoint.clone(), doc.end_session_endpoint.clone())
            }
            (IdpProfile::Oidc, None) => (String::new(), String::new(), None),
        };
        SpaConfig {
            cognito_domain: self.cognito_domain.clone(),
            client_id: self.client_id.clone(),
            redirect_uri: format!("{}/auth/callback", self.public_base_url),
            issuer: self.issuer.clone(),
            token_use: self.token_use,
            default_locale: self.default_locale.clone(),
            version: self.version.clone(),
            admin_group: self.admin_group.clone(),
            provider: self.profile,
            authorization_endpoint,
            token_endpoint,
            end_session_endpoint,
            scope: self.sign_in_scopes.clone(),
            groups_claim: self.mapping.groups_claim.clone(),
        }
    }

    pub fn approval_url(&self, id: &str) -> String {
        format!("{}/a/{id}", self.public_base_url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::principal::Identity;
    use crate::base::text::is_loopback_origin;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    const BASE: &[(&str, &str)] = &[
        ("PUBLIC_BASE_URL", "http://127.0.0.1:8787/"),
        ("COGNITO_ISSUER", "https://cognito-idp.ap-northeast-1.amazonaws.com/ap-northeast-1_X"),
        ("COGNITO_CLIENT_ID", "client"),
    ];

    #[test]
    fn defaults() {
        let c = Config::from_lookup(lookup(BASE)).unwrap();
        assert_eq!(c.public_base_url, "http://127.0.0.1:8787");
        assert_eq!(
            c.jwks_url.as_deref(),
            Some("https://cognito-idp.ap-northeast-1.amazonaws.com/ap-northeast-1_X/.well-known/jwks.json")
        );
        assert_eq!(c.profile, IdpProfile::Cognito);
        assert_eq!(c.mapping, ClaimMapping::default());
        assert_eq!(c.user_rules().audience, AudienceRule::Cognito(TokenUse::Access));
        assert_eq!(c.sign_in_scopes, "openid email profile");
        assert_eq!(c.token_use, TokenUse::Access);
        assert!(c.register_client_ids.is_empty(), "no fallback to COGNITO_CLIENT_ID: no token may register");
        assert_eq!(c.sfn_url(c.callback_region(None)), "https://states.us-east-1.amazonaws.com/");
        assert!(c.aws_targets.is_empty());
        assert_eq!(c.spa_config(None).redirect_uri, "http://127.0.0.1:8787/auth/callback");
        assert!(c.aws_credentials.is_none());
        assert_eq!(c.claim_lease_ms, 30_000);
        assert_eq!(c.on_expiry_lead_ms, 600_000);
        let lead = [BASE, &[("ON_EXPIRY_LEAD_SECONDS", "900")]].concat();
        assert_eq!(Config::from_lookup(lookup(&lead)).unwrap().on_expiry_lead_ms, 900_000);
        let bad = [BASE, &[("ON_EXPIRY_LEAD_SECONDS", "0")]].concat();
        assert!(Config::from_lookup(lookup(&bad)).is_err());
    }

    #[test]
    fn storage_backends() {
        assert_eq!(Config::from_lookup(lookup(BASE)).unwrap().storage, Storage::D1);
        let creds: &[(&str, &str)] =
            &[("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"), ("AWS_SECRET_ACCESS_KEY", "x"), ("AWS_REGION", "ap-northeast-1")];
        let ddb = [BASE, creds, &[("STORAGE", "dynamodb"), ("DYNAMODB_TABLE", "approval-tokens")]].concat();
        let Storage::DynamoDb(d) = Config::from_lookup(lookup(&ddb)).unwrap().storage else { panic!("dynamodb") };
        assert_eq!((d.table.as_str(), d.index.as_str()), ("approval-tokens", "byApprover"));
        assert_eq!(
            (d.region.as_str(), d.endpoint.as_str()),
            ("ap-northeast-1", "https://dynamodb.ap-northeast-1.amazonaws.com")
        );
        let local = [&ddb[..], &[("DYNAMODB_ENDPOINT", "http://127.0.0.1:5000"), ("DYNAMODB_INDEX", "inbox")]].concat();
        let Storage::DynamoDb(d) = Config::from_lookup(lookup(&local)).unwrap().storage else { panic!("dynamodb") };
        assert_eq!((d.endpoint.as_str(), d.index.as_str()), ("http://127.0.0.1:5000", "inbox"));
        let err = |pairs: &[(&str, &str)]| Config::from_lookup(lookup(&[BASE, pairs].concat())).unwrap_err();
        assert!(matches!(err(&[("STORAGE", "s3")]), ConfigError::Invalid("STORAGE", _)));
        assert_eq!(err(&[creds, &[("STORAGE", "dynamodb")]].concat()), ConfigError::Missing("DYNAMODB_TABLE"));
        assert!(matches!(
            err(&[("STORAGE", "dynamodb"), ("DYNAMODB_TABLE", "t-1")]),
            ConfigError::Invalid("STORAGE", _)
        ));
        let bad_name = [creds, &[("STORAGE", "dynamodb"), ("DYNAMODB_TABLE", "a b")]].concat();
        assert!(matches!(err(&bad_name), ConfigError::Invalid("DYNAMODB_TABLE", _)));
        let remote_http =
            [creds, &[("STORAGE", "dynamodb"), ("DYNAMODB_TABLE", "t-1"), ("DYNAMODB_ENDPOINT", "http://example.com")]]
                .concat();
        assert!(matches!(err(&remote_http), ConfigError::Invalid("DYNAMODB_ENDPOINT", _)));
    }

    #[test]
    fn operators_and_audit_retention() {
        let c = Config::from_lookup(lookup(BASE)).unwrap();
        assert_eq!(c.audit_retention_ms, 400 * 86_400_000);
        let ops = Identity {
            sub: "s".into(),
            email: None,
            groups: vec!["ringi-admins".into()],
            username: None,
            scopes: vec![],
            client_id: "client".into(),
        };
        assert!(!c.is_admin(&ops), "no ADMIN_GROUP: nobody is an operator");
        let mut set = BASE.to_vec();
        set.extend([("ADMIN_GROUP", "ringi-admins"), ("AUDIT_RETENTION_DAYS", "30")]);
        let c = Config::from_lookup(lookup(&set)).unwrap();
        assert!(c.is_admin(&ops));
        assert!(!c.is_admin(&Identity { groups: vec!["ringi-admin".into()], ..ops }));
        assert_eq!(c.audit_retention_ms, 30 * 86_400_000);
        set.push(("AUDIT_RETENTION_DAYS", "0"));
        let err = Config::from_lookup(lookup(&set)).unwrap_err();
        assert!(matches!(err, ConfigError::Invalid("AUDIT_RETENTION_DAYS", _)));
    }

    #[test]
    fn d1_faults_only_on_loopback() {
        let mut local = BASE.to_vec();
        local.push(("D1_FAULTS", "header"));
        assert_eq!(Config::from_lookup(lookup(&local)).unwrap().d1_faults, D1Faults::Header);
        local.push(("D1_FAULTS", "call=3"));
        let mut prod = local.clone();
        prod[0] = ("PUBLIC_BASE_URL", "https://ringi.example.com");
        let err = Config::from_lookup(lookup(&prod)).unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid("D1_FAULTS", m) if m.contains("loopback")), "{err}");
        prod[0] = ("PUBLIC_BASE_URL", "https://127.0.0.1.example.com");
        assert!(Config::from_lookup(lookup(&prod)).is_err());
        let mut bad = BASE.to_vec();
        bad.push(("D1_FAULTS", "sometimes"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("D1_FAULTS", _)));
        assert!(is_loopback_origin("http://localhost:8787") && is_loopback_origin("http://[::1]:1"));
        assert!(!is_loopback_origin("http://127.0.0.1.nip.io") && !is_loopback_origin("https://example.com"));
        // A host that merely starts like a loopback one is a name like any other.
        prod[0] = ("PUBLIC_BASE_URL", "https://127.approvals.example.com");
        assert!(matches!(Config::from_lookup(lookup(&prod)).unwrap_err(), ConfigError::Invalid("D1_FAULTS", _)));
        assert_eq!(Config::from_lookup(lookup(BASE)).unwrap().d1_faults, D1Faults::Off);
    }

    #[test]
    fn test_clock_only_on_loopback() {
        let mut local = BASE.to_vec();
        local.push(("TEST_CLOCK", "header"));
        assert_eq!(Config::from_lookup(lookup(&local)).unwrap().test_clock, TestClock::Header);
        for public in ["https://ringi.example.com", "https://127.0.0.1.example.com", "https://localhost.evil.com"] {
            let mut prod = local.clone();
            prod[0] = ("PUBLIC_BASE_URL", public);
            let err = Config::from_lookup(lookup(&prod)).unwrap_err();
            assert!(matches!(&err, ConfigError::Invalid("TEST_CLOCK", m) if m.contains("loopback")), "{err}");
        }
        let mut bad = BASE.to_vec();
        bad.push(("TEST_CLOCK", "-60"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("TEST_CLOCK", _)));
        assert_eq!(Config::from_lookup(lookup(BASE)).unwrap().test_clock, TestClock::Off);
    }

    #[test]
    fn dev_switches_take_the_parsed_host_not_a_prefix() {
        for loopback in [
            "http://127.0.0.1:8787",
            "https://127.0.0.1",
            "http://127.8.9.10/x",
            "http://[::1]",
            "http://[::1]:8787/",
            "http://localhost",
            "http://LOCALHOST:1",
            "http://evil.example@127.0.0.1:8787",
        ] {
            assert!(is_loopback_origin(loopback), "{loopback}");
        }
        for not in [
            "https://127.approvals.example.com",
            "https://127.0.0.1.approvals.example.com",
            "http://localhost.evil.com",
            "http://127.0.0.1@evil.com",
            "http://127.0.0.1:8787@evil.com/",
            "http://evil.com\\@127.0.0.1",
            "http://[::2]",
            "http://[::1].evil.com",
            "http://0.0.0.0",
            "ftp://127.0.0.1",
            "127.0.0.1:8787",
            "",
        ] {
            assert!(!text::is_loopback_origin(not), "{not}");
        }
        // What the config refuses, every switch alike.
        for (switch, value) in [("D1_FAULTS", "header"), ("INJECT_LATENCY", "header")] {
            let mut set = BASE.to_vec();
            set[0] = ("PUBLIC_BASE_URL", "https://127.approvals.example.com");
            set.push((switch, value));
            assert!(
                matches!(Config::from_lookup(lookup(&set)).unwrap_err(), ConfigError::Invalid(n, _) if n == switch)
            );
            set[0] = ("PUBLIC_BASE_URL", "http://127.0.0.1:8787");
            assert!(Config::from_lookup(lookup(&set)).unwrap().dev_switches_on());
        }
    }

    #[test]
    fn injected_latency_only_on_loopback() {
        let mut local = BASE.to_vec();
        local.push(("INJECT_LATENCY", "d1=80,aws=80"));
        let c = Config::from_lookup(lookup(&local)).unwrap();
        assert!(c.inject_latency.enabled() && c.dev_switches_on());
        let mut prod = local.clone();
        prod[0] = ("PUBLIC_BASE_URL", "https://ringi.example.com");
        let err = Config::from_lookup(lookup(&prod)).unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid("INJECT_LATENCY", m) if m.contains("loopback")), "{err}");
        let mut bad = BASE.to_vec();
        bad.push(("INJECT_LATENCY", "d1=forever"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("INJECT_LATENCY", _)));
        assert!(!Config::from_lookup(lookup(BASE)).unwrap().dev_switches_on());
    }

    #[test]
    fn errors_name_the_variable() {
        assert_eq!(Config::from_lookup(lookup(&BASE[1..])).unwrap_err(), ConfigError::Missing("PUBLIC_BASE_URL"));
        let mut bad = BASE.to_vec();
        bad.push(("TOKEN_USE", "refresh"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("TOKEN_USE", _)));
        let mut bad = BASE.to_vec();
        bad.push(("REGISTER_API_KEYS", "abc"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("REGISTER_API_KEYS", _)));
        let mut bad = BASE.to_vec();
        bad.push(("AWS_ACCESS_KEY_ID", "AKID"));
        assert!(Config::from_lookup(lookup(&bad)).is_err());
    }

    fn with(extra: &[(&'static str, &'static str)]) -> Result<Config, ConfigError> {
        let mut all = BASE.to_vec();
        all.extend_from_slice(extra);
        Config::from_lookup(lookup(&all))
    }

    const OIDC: &[(&str, &str)] = &[
        ("PUBLIC_BASE_URL", "https://ringi.example.com"),
        ("OIDC_ISSUER", "https://login.microsoftonline.com/tid/v2.0"),
        ("OIDC_CLIENT_ID", "app-guid"),
    ];

    fn oidc(extra: &[(&'static str, &'static str)]) -> Result<Config, ConfigError> {
        let mut all = OIDC.to_vec();
        all.extend_from_slice(extra);
        Config::from_lookup(lookup(&all))
    }

    #[test]
    fn oidc_profile_and_its_claim_mapping() {
        let c = oidc(&[]).unwrap();
        assert_eq!(c.profile, IdpProfile::Oidc);
        assert_eq!(c.jwks_url, None, "from the discovery document");
        assert_eq!(c.mapping.groups_claim, "groups");
        assert_eq!((c.mapping.email, c.mapping.scope_claim), (EmailPolicy::RequireVerified, ScopeClaim::Scope));
        let aud = |client_required| AudienceRule::Oidc { audience: "app-guid".into(), client_required };
        assert_eq!(c.user_rules().audience, aud(false));
        assert_eq!(c.register_rules().audience, aud(true), "a machine's token must name its client");
        let c = oidc(&[
            ("GROUPS_CLAIM", "https://example.com/groups"),
            ("EMAIL_VERIFIED", "trust"),
            ("SCOPE_CLAIM", "scp"),
            ("OIDC_AUDIENCE", "api://default"),
            ("JWKS_URL", "https://login.example.com/keys"),
            ("SIGN_IN_SCOPES", " openid  email api://ringi/approvals "),
        ])
        .unwrap();
        assert_eq!(
            c.mapping,
            ClaimMapping {
                groups_claim: "https://example.com/groups".into(),
                email: EmailPolicy::Trust,
                scope_claim: ScopeClaim::Scp
            }
        );
        assert_eq!(
            c.user_rules().audience,
            AudienceRule::Oidc { audience: "api://default".into(), client_required: false }
        );
        assert_eq!(c.jwks_url.as_deref(), Some("https://login.example.com/keys"));
        assert_eq!(c.sign_in_scopes, "openid email api://ringi/approvals");
        let spa = c.spa_config(None);
        assert_eq!(
            (spa.provider, spa.authorization_endpoint.as_str(), spa.scope.as_str()),
            (IdpProfile::Oidc, "", "openid email api://ringi/approvals")
        );
        let doc = Discovery {
            issuer: c.issuer.clone(),
            jwks_uri: "https://k".into(),
            authorization_endpoint: "https://a/authorize".into(),
            token_endpoint: "https://a/token".into(),
            end_session_endpoint: Some("https://a/logout".into()),
        };
        let spa = c.spa_config(Some(&doc));
        assert_eq!(spa.authorization_endpoint, "https://a/authorize");
        assert_eq!(spa.token_endpoint, "https://a/token");
        assert_eq!(spa.end_session_endpoint.as_deref(), Some("https://a/logout"));
        assert_eq!(spa.groups_claim, "https://example.com/groups");
        // Cognito's endpoints are below the Hosted UI domain, the discovery document is not needed.
        let cog = with(&[("COGNITO_DOMAIN", "https://auth.example.com")]).unwrap().spa_config(None);
        assert_eq!(cog.authorization_endpoint, "https://auth.example.com/oauth2/authorize");
        assert_eq!(cog.token_endpoint, "https://auth.example.com/oauth2/token");
        assert_eq!(cog.end_session_endpoint.as_deref(), Some("https://auth.example.com/logout"));
        assert_eq!(cog.groups_claim, "cognito:groups");
    }

    #[test]
    fn which_emails_the_rules_can_rely_on() {
        // Cognito access tokens carry no email: requesters by email cannot be enforced, routing by email is moot.
        let access = with(&[]).unwrap();
        assert!(!access.emails_verifiable());
        assert!(with(&[("TOKEN_USE", "id")]).unwrap().emails_verifiable());
        // An unchecked email (EMAIL_VERIFIED=trust) never routes someone's approvals: anyone could claim it.
        assert!(oidc(&[]).unwrap().routes_by_email());
        assert!(!oidc(&[("EMAIL_VERIFIED", "trust")]).unwrap().routes_by_email());
    }

    #[test]
    fn invalid_provider_combinations_are_config_errors() {
        let invalid = |r: Result<Config, ConfigError>, name: &str| {
            assert!(matches!(&r, Err(ConfigError::Invalid(n, _)) if *n == name), "{name}: {:?}", r.map(|_| ()));
        };
        invalid(with(&[("OIDC_ISSUER", "https://login.example.com")]), "OIDC_ISSUER");
        assert_eq!(
            Config::from_lookup(lookup(&[("PUBLIC_BASE_URL", "https://r.example.com")])).unwrap_err(),
            ConfigError::Missing("COGNITO_ISSUER (or OIDC_ISSUER)")
        );
        invalid(oidc(&[("COGNITO_CLIENT_ID", "x")]), "COGNITO_CLIENT_ID");
        invalid(oidc(&[("COGNITO_DOMAIN", "https://auth.example.com")]), "COGNITO_DOMAIN");
        invalid(with(&[("OIDC_CLIENT_ID", "x")]), "OIDC_CLIENT_ID");
        invalid(with(&[("OIDC_AUDIENCE", "x")]), "OIDC_AUDIENCE");
        invalid(with(&[("EMAIL_VERIFIED", "trust")]), "EMAIL_VERIFIED");
        invalid(with(&[("SCOPE_CLAIM", "scp")]), "SCOPE_CLAIM");
        invalid(oidc(&[("EMAIL_VERIFIED", "maybe")]), "EMAIL_VERIFIED");
        invalid(oidc(&[("SCOPE_CLAIM", "scopes")]), "SCOPE_CLAIM");
        invalid(oidc(&[("GROUPS_CLAIM", "my groups")]), "GROUPS_CLAIM");
        invalid(oidc(&[("SIGN_IN_SCOPES", "email profile")]), "SIGN_IN_SCOPES");
        invalid(oidc(&[("TOKEN_USE", "id"), ("OIDC_AUDIENCE", "api://default")]), "OIDC_AUDIENCE");
        invalid(oidc(&[("OIDC_ISSUER", "http://login.example.com")]), "OIDC_ISSUER");
        assert!(matches!(Config::from_lookup(lookup(&OIDC[..2])).unwrap_err(), ConfigError::Missing("OIDC_CLIENT_ID")));
        // Allowed: the OIDC audience with access tokens, a custom groups claim with Cognito.
        assert!(oidc(&[("TOKEN_USE", "id")]).is_ok());
        assert!(oidc(&[("OIDC_AUDIENCE", "api://default")]).is_ok());
        assert_eq!(with(&[("GROUPS_CLAIM", "custom:teams")]).unwrap().mapping.groups_claim, "custom:teams");
    }

    #[test]
    fn aws_targets_route_each_callback_to_its_region() {
        let c = with(&[("AWS_TARGETS", r#"{"111111111111": {"regions": ["eu-west-1"]}}"#)]).unwrap();
        let t = AwsTarget::from_stored(Some("111111111111"), Some("eu-west-1")).unwrap();
        assert_eq!(c.callback_region(t.as_ref()), "eu-west-1");
        assert_eq!(c.sfn_url(c.callback_region(t.as_ref())), "https://states.eu-west-1.amazonaws.com/");
        // A local stand-in serves every region on one endpoint (it routes by the signature's region).
        let local = with(&[("SFN_ENDPOINT", "http://127.0.0.1:5000")]).unwrap();
        assert_eq!(local.sfn_url("eu-west-1"), "http://127.0.0.1:5000/");
        assert!(matches!(with(&[("AWS_TARGETS", "{}")]), Err(ConfigError::Invalid("AWS_TARGETS", _))));
        assert!(matches!(
            with(&[("AWS_TARGETS", r#"{"111111111111": {"regions": ["eu-west-1"], "sfnEndpoint": "https://x"}}"#)]),
            Err(ConfigError::Invalid("AWS_TARGETS", _))
        ));
    }

    #[test]
    fn federation_needs_every_target_account_to_name_its_role() {
        const KEY: &str = r#"{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#;
        const ROLE: &str =
            r#"{"111111111111": {"roleArn": "arn:aws:iam::111111111111:role/ringi", "regions": ["eu-west-1"]}}"#;
        let c =
            with(&[("FEDERATION_SIGNING_KEY", KEY), ("AWS_TARGETS", ROLE), ("STS_ENDPOINT", "http://127.0.0.1:5000")])
                .unwrap();
        let f = c.federation.as_ref().unwrap();
        assert_eq!(
            (f.audience.as_str(), f.sts_url("eu-west-1").as_str()),
            ("sts.amazonaws.com", "http://127.0.0.1:5000/")
        );
        assert_eq!(c.federation_issuer(), "http://127.0.0.1:8787");
        assert!(with(&[]).unwrap().federation.is_none(), "the static key stays the default without a signing key");
        let err = |pairs: &[(&'static str, &'static str)]| match with(pairs).unwrap_err() {
            ConfigError::Invalid(name, _) => name,
            e => panic!("{e:?}"),
        };
        assert_eq!(err(&[("FEDERATION_SIGNING_KEY", KEY)]), "AWS_TARGETS");
        assert_eq!(
            err(&[("FEDERATION_SIGNING_KEY", KEY), ("AWS_TARGETS", r#"{"111111111111": {"regions": ["eu-west-1"]}}"#)]),
            "AWS_TARGETS"
        );
        assert_eq!(err(&[("FEDERATION_SIGNING_KEY", "{}"), ("AWS_TARGETS", ROLE)]), "FEDERATION_SIGNING_KEY");
        assert_eq!(
            err(&[("FEDERATION_SIGNING_KEY", KEY), ("AWS_TARGETS", ROLE), ("FEDERATION_PUBLISHED_KEYS", "x")]),
            "FEDERATION_PUBLISHED_KEYS"
        );
    }

    #[test]
    fn chat_channels_are_a_checked_map_whose_errors_hide_urls() {
        assert!(with(&[]).unwrap().chat_channels.is_empty());
        let c = with(&[(
            "CHAT_CHANNELS",
            r#"{"deploys": {"kind": "slack", "url": "http://127.0.0.1:8025/hooks/s3cr3t"}}"#,
        )])
        .unwrap();
        assert!(c.chat_channels.find("deploys").is_some());
        assert!(!format!("{c:?}").contains("s3cr3t"), "the config's Debug hides webhook URLs");
        for bad in [r#"{"deploys": {"kind": "slack", "url": "http://10.0.0.1/s3cr3t"}}"#, "not json"] {
            let err = with(&[("CHAT_CHANNELS", bad)]).unwrap_err();
            assert!(matches!(&err, ConfigError::Invalid("CHAT_CHANNELS", m) if !m.contains("s3cr3t")), "{err}");
        }
    }

    #[test]
    fn register_client_ids_are_only_the_listed_ones() {
        let c = with(&[("REGISTER_CLIENT_IDS", " machine-a, ,machine-b ")]).unwrap();
        assert_eq!(c.register_client_ids, vec!["machine-a", "machine-b"]);
        assert_eq!(c.register_rules().client_ids, vec!["machine-a", "machine-b"]);
        assert!(!c.register_rules().client_ids.contains(&c.client_id));
    }

    #[test]
    fn urls_must_be_https_except_on_loopback() {
        for name in ["COGNITO_ISSUER", "JWKS_URL", "COGNITO_DOMAIN", "PUBLIC_BASE_URL", "SFN_ENDPOINT", "SES_ENDPOINT"]
        {
            for bad in [
                "http://cognito.example.com",
                "http://10.0.0.1:9000/x",
                "http://127.0.0.1.evil.example/",
                "http://localhost.evil.example",
                "http://[::2]:80",
                "http://user@evil.example",
                "ftp://127.0.0.1",
                "cognito.example.com",
                "https://",
            ] {
                assert!(
                    matches!(with(&[(name, bad)]).unwrap_err(), ConfigError::Invalid(n, _) if n == name),
                    "{name}={bad} must be refused"
                );
            }
            for good in [
                "https://auth.example.com",
                "http://127.0.0.1:9000/pool",
                "http://127.8.9.10",
                "http://localhost:8787/",
                "http://LOCALHOST",
                "http://[::1]:5000",
                "http://evil.example@127.0.0.1:1/",
            ] {
                assert!(with(&[(name, good)]).is_ok(), "{name}={good} must be accepted");
            }
        }
    }

    #[test]
    fn origin_for_the_csp() {
        assert_eq!(origin_of("https://Auth.Example.com/oauth2/x?y").as_deref(), Some("https://auth.example.com"));
        assert_eq!(origin_of("http://127.0.0.1:9000/pool").as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(origin_of("nope"), None);
    }

    #[test]
    fn claim_lease_has_a_floor_above_the_worst_case_delivery() {
        let floor = min_claim_lease_secs(&RetryPolicy::default());
        // 3 attempts × 3 s + 0.2 s + 0.4 s backoff + 2 s margin.
        assert_eq!(floor, 12);
        assert!(floor * 1000 > RetryPolicy::default().worst_case_ms() as i64);
        let err = with(&[("CLAIM_LEASE_SECONDS", "5")]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Invalid("CLAIM_LEASE_SECONDS", m) if m.contains("at least 12 seconds")),
            "{err}"
        );
        assert!(with(&[("CLAIM_LEASE_SECONDS", "11")]).is_err());
        assert_eq!(with(&[("CLAIM_LEASE_SECONDS", "12")]).unwrap().claim_lease_ms, 12_000);
    }
}

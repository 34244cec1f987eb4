//! The worker's typed configuration (design.md §13), parsed once from wrangler vars and secrets: one
//! function per section ([`idp`], [`aws`], [`limits`], [`notify`], [`switches`]), each naming the variable
//! an error is about ([`vars`]).

mod aws;
mod idp;
mod limits;
mod notify;
mod switches;
mod vars;

#[cfg(test)]
mod tests;

pub use crate::base::text::origin_of;
pub use aws::{DynamoDbConfig, Storage};
pub use limits::{min_claim_lease_secs, CLAIM_LEASE_MARGIN_MS};
pub use notify::PushConfig;
pub use vars::{check_url, ConfigError};

use crate::adapters::aws_target::{AwsTarget, AwsTargets, OwnRole};
use crate::adapters::chat::ChatChannels;
use crate::adapters::discovery::Discovery;
use crate::adapters::federation::Federation;
use crate::adapters::idp::{AudienceRule, ClaimMapping, EmailPolicy, IdpProfile, JwtRules, TokenUse};
use crate::adapters::keyring::KeyRing;
use crate::adapters::sigv4::AwsCredentials;
use crate::api::wire::SpaConfig;
use crate::dev::clock::TestClock;
use crate::dev::faults::D1Faults;
use crate::dev::latency::LatencyModel;
use crate::dev::reload::DevReload;
use vars::{url, Vars};

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
    /// `AWS_TARGETS`: the accounts and regions whose workflows this ringi answers (core::adapters::aws_target). Empty:
    /// one account, the credentials' own, in `AWS_REGION`.
    pub aws_targets: AwsTargets,
    /// `SIGNING_KEY` (and `PUBLISHED_KEYS`): ringi's key ring (core::adapters::keyring). It signs every decision's
    /// receipt and, under federation, the worker's tokens for AWS; its public keys are at `/.well-known/jwks.json`.
    pub keys: Option<KeyRing>,
    /// A key ring and no access key: callbacks use temporary credentials of each target's role
    /// (core::adapters::federation), not a static access key.
    pub federation: Option<Federation>,
    /// `AWS_ROLE_ARN` (with federation): the worker's own role, whose temporary credentials sign mail and DynamoDB
    /// calls instead of the access key.
    pub aws_role: Option<OwnRole>,
    pub ses_endpoint: String,
    pub mail_from: Option<String>,
    /// Besides the approval's own email approvers, `notify` may name addresses in these domains only
    /// (lower case), so a registrant cannot make ringi mail anyone.
    pub mail_allowed_domains: Vec<String>,
    /// `CHAT_CHANNELS` (a secret): the chat channels a registration's `notify` may name (core::adapters::chat). Empty:
    /// none may be named.
    pub chat_channels: ChatChannels,
    /// `VAPID_KEY` (a secret), `VAPID_SUBJECT`, `PUSH_ALLOWED_HOSTS`: Web Push (core::adapters::webpush). None: push
    /// is off (the subscribe endpoint answers `push_not_configured`, nothing else changes).
    pub push: Option<notify::PushConfig>,
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
    /// Dev only (`DEV_RELOAD=on`, `make dev`): pages reload themselves when the worker or the SPA was rebuilt.
    /// Refused off loopback like `D1_FAULTS`.
    pub dev_reload: DevReload,
}

impl Config {
    /// A dev/bench switch is on: responses may then carry the worker's own counts (round trips).
    pub fn dev_switches_on(&self) -> bool {
        self.d1_faults.enabled() || self.inject_latency.enabled()
    }
}

impl Config {
    /// `get` reads one variable (empty strings count as unset). The sections are read in this order, so
    /// that of two wrong variables the same one is reported first.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let v = Vars(&get);
        let public_base_url = url("PUBLIC_BASE_URL", v.req("PUBLIC_BASE_URL")?)?;
        let idp = idp::idp(&v)?;
        let (register_client_ids, register_api_key_hashes) = idp::registrants(&v)?;
        let keys = match v.opt("SIGNING_KEY") {
            None => None,
            Some(k) => Some(
                KeyRing::parse(&k, v.opt("PUBLISHED_KEYS").as_deref())
                    .map_err(|(name, e)| ConfigError::Invalid(name, e))?,
            ),
        };
        let aws = aws::aws(&v, keys.as_ref())?;
        let storage = aws::storage(&v, &aws)?;
        let times = limits::lifetimes(&v, aws.federation.is_some())?;
        let admin_group = v.opt("ADMIN_GROUP").map(|g| g.trim().to_owned()).filter(|g| !g.is_empty());
        let mail_allowed_domains = notify::mail_allowed_domains(&v)?;
        let chat_channels = notify::chat_channels(&v)?;
        let push = notify::push(&v, &public_base_url)?;
        let register_rate_per_minute = limits::register_rate(&v)?;
        let default_locale = match v.opt("DEFAULT_LOCALE").as_deref() {
            None | Some("en") => "en".to_owned(),
            Some("ja") => "ja".to_owned(),
            Some(_) => return Err(ConfigError::Invalid("DEFAULT_LOCALE", "must be en or ja".into())),
        };
        let dev = switches::switches(&v, &public_base_url)?;
        Ok(Self {
            storage,
            d1_faults: dev.d1_faults,
            inject_latency: dev.inject_latency,
            test_clock: dev.test_clock,
            dev_reload: dev.dev_reload,
            public_base_url,
            profile: idp.profile,
            issuer: idp.issuer,
            jwks_url: idp.jwks_url,
            client_id: idp.client_id,
            audience: idp.audience,
            token_use: idp.token_use,
            mapping: idp.mapping,
            sign_in_scopes: idp.sign_in_scopes,
            cognito_domain: idp.cognito_domain,
            register_scope: v.opt("REGISTER_SCOPE").unwrap_or_else(|| "ringi/approvals.write".into()),
            register_client_ids,
            register_api_key_hashes,
            aws_region: aws.region,
            aws_credentials: aws.credentials,
            sfn_endpoint: aws.sfn_endpoint,
            aws_targets: aws.targets,
            keys,
            federation: aws.federation,
            aws_role: aws.own_role,
            ses_endpoint: aws.ses_endpoint,
            mail_from: v.opt("MAIL_FROM"),
            mail_allowed_domains,
            chat_channels,
            push,
            register_rate_per_minute,
            claim_lease_ms: times.claim_lease_ms,
            reminder_window_ms: times.reminder_window_ms,
            on_expiry_lead_ms: times.on_expiry_lead_ms,
            retention_ms: times.retention_ms,
            admin_group,
            audit_retention_ms: times.audit_retention_ms,
            default_locale,
            version: v.opt("RINGI_VERSION").unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
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

    /// The issuer of what ringi signs (receipts, the tokens for AWS): its public origin, where AWS and verifiers
    /// fetch `/.well-known/openid-configuration` and the keys.
    pub fn issuer_url(&self) -> &str {
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

    /// Which sign-in claims the provider's tokens can carry, for `requireSignIn` at registration: every OpenID
    /// Connect provider may send `acr` and `amr` (Entra, Okta do, as configured there); a Cognito user pool's
    /// tokens carry `auth_time` only, so there only `maxAge` can be required.
    pub fn sign_in_provable(&self) -> crate::domain::step_up::Provable {
        let oidc = self.profile == IdpProfile::Oidc;
        crate::domain::step_up::Provable { acr: oidc, amr: oidc }
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
            redirect_uri: format!("{}{}", self.public_base_url, crate::base::sign_in::CALLBACK_PATH),
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
            vapid_public_key: self.push.as_ref().map(notify::PushConfig::public_key),
        }
    }

    pub fn approval_url(&self, id: &str) -> String {
        format!("{}/a/{id}", self.public_base_url)
    }
}

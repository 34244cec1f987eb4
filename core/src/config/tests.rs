//! The configuration as the worker reads it: defaults, each section's checks, the errors that name a variable.

use super::*;
use crate::adapters::idp::ScopeClaim;
use crate::adapters::sfn::RetryPolicy;
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
    assert!(matches!(err(&[("STORAGE", "dynamodb"), ("DYNAMODB_TABLE", "t-1")]), ConfigError::Invalid("STORAGE", _)));
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
        sign_in: Default::default(),
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
        assert!(!is_loopback_origin(not), "{not}");
    }
    // What the config refuses, every switch alike.
    for (switch, value) in [("D1_FAULTS", "header"), ("INJECT_LATENCY", "header")] {
        let mut set = BASE.to_vec();
        set[0] = ("PUBLIC_BASE_URL", "https://127.approvals.example.com");
        set.push((switch, value));
        assert!(matches!(Config::from_lookup(lookup(&set)).unwrap_err(), ConfigError::Invalid(n, _) if n == switch));
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
fn only_openid_connect_providers_can_prove_acr_and_amr() {
    let cognito = with(&[("TOKEN_USE", "id")]).unwrap().sign_in_provable();
    assert_eq!((cognito.acr, cognito.amr), (false, false));
    let generic = oidc(&[]).unwrap().sign_in_provable();
    assert_eq!((generic.acr, generic.amr), (true, true));
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
    let c = with(&[("SIGNING_KEY", KEY), ("AWS_TARGETS", ROLE), ("STS_ENDPOINT", "http://127.0.0.1:5000")]).unwrap();
    let f = c.federation.as_ref().unwrap();
    assert_eq!((f.audience.as_str(), f.sts_url("eu-west-1").as_str()), ("sts.amazonaws.com", "http://127.0.0.1:5000/"));
    assert_eq!(c.issuer_url(), "http://127.0.0.1:8787");
    assert!(with(&[]).unwrap().federation.is_none(), "the static key stays the default without a signing key");
    // With an access key, the key ring signs receipts only: the key signs the callbacks.
    let keyed = with(&[("SIGNING_KEY", KEY), ("AWS_ACCESS_KEY_ID", "AKIA1"), ("AWS_SECRET_ACCESS_KEY", "s")]).unwrap();
    assert!(keyed.federation.is_none() && keyed.keys.as_ref().is_some_and(|k| k.signing.kid() == "k1"));
    let err = |pairs: &[(&'static str, &'static str)]| match with(pairs).unwrap_err() {
        ConfigError::Invalid(name, _) => name,
        e => panic!("{e:?}"),
    };
    let no_targets = with(&[("SIGNING_KEY", KEY)]).unwrap();
    assert!(no_targets.federation.is_none() && no_targets.keys.is_some(), "receipts only: no account to federate into");
    assert_eq!(
        err(&[("SIGNING_KEY", KEY), ("AWS_TARGETS", r#"{"111111111111": {"regions": ["eu-west-1"]}}"#)]),
        "AWS_TARGETS"
    );
    assert_eq!(err(&[("SIGNING_KEY", "{}"), ("AWS_TARGETS", ROLE)]), "SIGNING_KEY");
    assert_eq!(err(&[("SIGNING_KEY", "{}")]), "SIGNING_KEY", "a key ring is checked whatever it is for");
    assert_eq!(err(&[("SIGNING_KEY", KEY), ("AWS_TARGETS", ROLE), ("PUBLISHED_KEYS", "x")]), "PUBLISHED_KEYS");

    // The worker's own role: mail and the DynamoDB table without any access key.
    const OWN: (&str, &str) = ("AWS_ROLE_ARN", "arn:aws:iam::222222222222:role/ringi-worker");
    const TABLE: [(&str, &str); 2] = [("STORAGE", "dynamodb"), ("DYNAMODB_TABLE", "ringi-approvals")];
    let fed = [("SIGNING_KEY", KEY), ("AWS_TARGETS", ROLE), OWN];
    let c = with(&[&fed[..], &TABLE[..]].concat()).unwrap();
    assert!(c.aws_credentials.is_none());
    assert_eq!(c.aws_role.as_ref().map(|r| r.account.as_str()), Some("222222222222"));
    assert_eq!(err(&[OWN]), "AWS_ROLE_ARN", "a role needs the worker's own token");
    assert_eq!(err(&[fed[0], fed[1], ("AWS_ROLE_ARN", "ringi-worker")]), "AWS_ROLE_ARN");
    assert_eq!(err(&TABLE), "STORAGE", "no role and no key: nothing could sign for the table");
}

#[test]
fn chat_channels_are_a_checked_map_whose_errors_hide_urls() {
    assert!(with(&[]).unwrap().chat_channels.is_empty());
    let c =
        with(&[("CHAT_CHANNELS", r#"{"deploys": {"kind": "slack", "url": "http://127.0.0.1:8025/hooks/s3cr3t"}}"#)])
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
    for name in ["COGNITO_ISSUER", "JWKS_URL", "COGNITO_DOMAIN", "PUBLIC_BASE_URL", "SFN_ENDPOINT", "SES_ENDPOINT"] {
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

#[test]
fn dev_reload_only_on_loopback() {
    use crate::dev::reload::DevReload;
    let mut local = BASE.to_vec();
    local.push(("DEV_RELOAD", "on"));
    assert_eq!(Config::from_lookup(lookup(&local)).unwrap().dev_reload, DevReload::On);
    let mut prod = local.clone();
    prod[0] = ("PUBLIC_BASE_URL", "https://ringi.example.com");
    let err = Config::from_lookup(lookup(&prod)).unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid("DEV_RELOAD", m) if m.contains("loopback")), "{err}");
    assert_eq!(Config::from_lookup(lookup(BASE)).unwrap().dev_reload, DevReload::Off);
}

#[test]
fn push_is_off_without_vapid_key_and_its_key_and_hosts_are_checked() {
    assert!(Config::from_lookup(lookup(BASE)).unwrap().push.is_none());
    assert!(Config::from_lookup(lookup(BASE)).unwrap().spa_config(None).vapid_public_key.is_none());
    let key = r#"{"kty":"EC","crv":"P-256","kid":"v1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#;
    let on = Config::from_lookup(lookup(&[BASE, &[("VAPID_KEY", key)]].concat())).unwrap();
    let push = on.push.clone().unwrap();
    assert_eq!(on.spa_config(None).vapid_public_key.as_deref().map(str::len), Some(87));
    assert!(push.subject.starts_with("mailto:") || push.subject.starts_with("http"));
    assert!(push.hosts.allows("https://fcm.googleapis.com/x"));
    let err = |pairs: &[(&str, &str)]| Config::from_lookup(lookup(&[BASE, pairs].concat())).unwrap_err();
    assert!(matches!(err(&[("VAPID_KEY", "{}")]), ConfigError::Invalid("VAPID_KEY", _)));
    assert!(!err(&[("VAPID_KEY", "{}")]).to_string().contains("jpsQ"));
    assert!(matches!(err(&[("VAPID_KEY", key), ("VAPID_SUBJECT", "ops")]), ConfigError::Invalid("VAPID_SUBJECT", _)));
    assert!(matches!(
        err(&[("VAPID_KEY", key), ("PUSH_ALLOWED_HOSTS", "push.example.com, x/y")]),
        ConfigError::Invalid("PUSH_ALLOWED_HOSTS", _)
    ));
    let listed =
        Config::from_lookup(lookup(&[BASE, &[("VAPID_KEY", key), ("PUSH_ALLOWED_HOSTS", "*.example.net")]].concat()))
            .unwrap()
            .push
            .unwrap();
    assert!(listed.hosts.allows("https://push.example.net/x") && !listed.hosts.allows("https://fcm.googleapis.com/x"));
}

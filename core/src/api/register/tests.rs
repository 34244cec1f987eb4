//! Registration bodies as a workflow sends them: what is accepted, normalized and refused (naming the field).

use super::*;
use serde_json::json;

const NOW: i64 = 1_800_000_000_000;

fn base() -> Value {
    json!({"taskToken": "tok", "approvers": [{"email": "Alice@Example.com"}, {"group": "finance"}],
           "title": "Deploy v2", "timeoutSeconds": 3600})
}

fn field_of(v: Value) -> String {
    match parse_registration(v.to_string().as_bytes(), NOW, &[]).unwrap_err() {
        ApiError::Invalid { field, .. } => field,
        e => panic!("{e:?}"),
    }
}

fn with(k: &str, val: Value) -> Value {
    let mut b = base();
    b[k] = val;
    b
}

#[test]
fn request_fingerprint_is_the_same_for_a_redelivery_and_differs_for_another_request() {
    let parse = |v: &Value, now| parse_registration(v.to_string().as_bytes(), now, &[]).unwrap().request_sha256;
    let first = parse(&base(), NOW);
    // A redelivery seconds later (timeoutSeconds counts from receipt, the request itself is unchanged).
    assert_eq!(parse(&base(), NOW + 5_000), first);
    // The same request inside an EventBridge envelope (its id and time differ per delivery).
    let event = json!({"version": "0", "id": "e1", "detail-type": "ringi.approval.requested", "detail": base()});
    assert_eq!(parse(&event, NOW), first);
    assert_ne!(parse(&with("title", json!("Deploy v3")), NOW), first);
}

#[test]
fn notify_names_only_approvers_or_allowed_domains() {
    let parse = |notify: Value, allowed: &[String]| {
        parse_registration(with("notify", notify).to_string().as_bytes(), NOW, allowed).map(|a| a.notify)
    };
    // The approvers' own addresses are always fine (case does not matter).
    assert_eq!(parse(json!(["ALICE@example.com"]), &[]).unwrap(), vec!["alice@example.com"]);
    let field = |r: Result<Vec<String>, ApiError>| match r.unwrap_err() {
        ApiError::Invalid { field, .. } => field,
        e => panic!("{e:?}"),
    };
    assert_eq!(field(parse(json!(["alice@example.com", "ops@example.org"]), &[])), "notify[1]");
    let allowed = vec!["example.org".to_owned()];
    assert_eq!(parse(json!(["ops@example.org"]), &allowed).unwrap(), vec!["ops@example.org"]);
    // A look-alike domain is not the allowed one.
    assert_eq!(field(parse(json!(["ops@example.org.evil.test"]), &allowed)), "notify[0]");
    assert_eq!(field(parse(json!(["ops@sub.example.org"]), &allowed)), "notify[0]");
}

#[test]
fn escalation_mails_only_approvers_or_allowed_domains() {
    let parse = |to: Value, allowed: &[String]| {
        let b = with("escalation", json!({"after": "PT10M", "to": to}));
        parse_registration(b.to_string().as_bytes(), NOW, allowed).map(|a| a.schedule.escalation.unwrap().to)
    };
    let field = |r: Result<Vec<Principal>, ApiError>| match r.unwrap_err() {
        ApiError::Invalid { field, .. } => field,
        e => panic!("{e:?}"),
    };
    // Without MAIL_ALLOWED_DOMAINS: an approver's own address, and principals nobody mails.
    assert!(parse(json!([{"email": "ALICE@example.com"}, {"sub": "boss"}, {"group": "leads"}]), &[]).is_ok());
    assert_eq!(field(parse(json!([{"sub": "boss"}, {"email": "boss@example.com"}]), &[])), "escalation.to[1].email");
    let allowed = vec!["example.com".to_owned()];
    assert_eq!(parse(json!([{"email": "boss@example.com"}]), &allowed).unwrap().len(), 1);
    assert_eq!(field(parse(json!([{"email": "boss@example.com.evil.test"}]), &allowed)), "escalation.to[0].email");
}

#[test]
fn notify_names_configured_chat_channels_only() {
    let chat = ChatChannels::parse(
        r#"{"deploys": {"kind": "slack", "url": "https://hooks.slack.com/services/x"},
            "ops": {"kind": "teams", "url": "https://example.webhook.office.com/y"}}"#,
        |_| Ok(()),
    )
    .unwrap();
    let parse = |notify: Value| {
        let b = with("notify", notify).to_string();
        parse_registration_with_channels(b.as_bytes(), NOW, &[], &chat, &AwsTargets::default())
    };
    let a = parse(json!([{"email": "alice@example.com"}, {"channel": "deploys"}, {"channel": "ops"},
                         {"channel": "deploys"}]))
    .unwrap();
    assert_eq!(a.notify, vec!["alice@example.com"]);
    assert_eq!(a.channels.iter().map(ChannelName::as_str).collect::<Vec<_>>(), ["deploys", "ops"]);
    // Only channels: nobody is mailed.
    let a = parse(json!([{"channel": "ops"}])).unwrap();
    assert!(a.notify.is_empty() && a.channels.len() == 1);
    let field = |r: Result<NewApproval, ApiError>| match r.unwrap_err() {
        ApiError::Invalid { field, .. } => field,
        e => panic!("{e:?}"),
    };
    assert_eq!(field(parse(json!(["alice@example.com", {"channel": "nope"}]))), "notify[1].channel");
    // A URL is not a channel name.
    assert_eq!(field(parse(json!([{"channel": "https://hooks.slack.com/services/x"}]))), "notify[0].channel");
    assert_eq!(field(parse(json!([{"email": "x"}]))), "notify[0].email");
    assert_eq!(field(parse(json!([{"channel": "ops", "url": "https://x"}]))), "notify[0]");
    // Without CHAT_CHANNELS no channel exists.
    assert_eq!(field_of(with("notify", json!([{"channel": "deploys"}]))), "notify[0].channel");
    assert!(parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap().channels.is_empty());
}

#[test]
fn minimal_registration() {
    let a = parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap();
    assert_eq!(a.expires_at, NOW + 3_600_000);
    assert_eq!(a.approvers[0], Principal::Email("alice@example.com".into()));
    assert_eq!(a.notify, vec!["alice@example.com"]);
    assert_eq!(a.quorum, Quorum::Any);
    assert!(a.id.is_none());
}

#[test]
fn eventbridge_envelope_is_accepted() {
    let ev = json!({"version": "0", "detail-type": "ringi.approval", "source": "x", "detail": base()});
    assert!(parse_registration(ev.to_string().as_bytes(), NOW, &[]).is_ok());
}

#[test]
fn the_target_comes_from_the_envelope_or_aws_and_must_be_configured() {
    let targets = AwsTargets::parse(
        r#"{"111111111111": {"regions": ["eu-west-1"]}, "222222222222": {"regions": ["us-east-1"]}}"#,
    )
    .unwrap();
    let parse = |v: Value| {
        parse_registration_with_channels(v.to_string().as_bytes(), NOW, &[], &ChatChannels::default(), &targets)
    };
    let event = |account: &str, region: &str, detail: Value| {
        json!({"version": "0", "id": "e1", "detail-type": "ringi.approval.requested", "source": "x",
               "account": account, "region": region, "detail": detail})
    };
    let t = parse(event("222222222222", "us-east-1", base())).unwrap().target.unwrap();
    assert_eq!((t.account.as_str(), t.region.as_str()), ("222222222222", "us-east-1"));
    let direct = with("aws", json!({"accountId": "111111111111", "region": "eu-west-1"}));
    assert_eq!(parse(direct.clone()).unwrap().target.unwrap().region.as_str(), "eu-west-1");
    // The target is not part of the request's fingerprint: a redelivery still matches.
    assert_eq!(
        parse(event("222222222222", "us-east-1", base())).unwrap().request_sha256,
        parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap().request_sha256
    );
    let field = |r: Result<NewApproval, ApiError>| match r.unwrap_err() {
        ApiError::Invalid { field, .. } => field,
        e => panic!("{e:?}"),
    };
    assert_eq!(field(parse(event("333333333333", "us-east-1", base()))), "account");
    assert_eq!(field(parse(event("222222222222", "eu-west-1", base()))), "region");
    assert_eq!(field(parse(base())), "account");
    assert!(parse(event("111111111111", "eu-west-1", direct.clone())).is_ok(), "agrees with the envelope");
    let mut spoofed = direct;
    spoofed["aws"]["accountId"] = json!("222222222222");
    assert_eq!(field(parse(event("111111111111", "eu-west-1", spoofed))), "aws.accountId");
    // A registrant names no role and no endpoint.
    assert_eq!(
        field(parse(with(
            "aws",
            json!({"accountId": "111111111111", "region": "eu-west-1",
                                               "roleArn": "arn:aws:iam::111111111111:role/x"})
        ))),
        "aws.roleArn"
    );
    assert_eq!(field(parse(with("aws", json!({"endpoint": "https://evil.test"})))), "aws.endpoint");
    assert_eq!(field(parse(with("aws", json!("111111111111")))), "aws");
    assert_eq!(field(parse(with("aws", json!({"accountId": 111111111111u64})))), "aws.accountId");
    // Without AWS_TARGETS: the envelope's origin is ignored, an explicit target refused.
    assert!(parse_registration(event("333333333333", "eu-west-1", base()).to_string().as_bytes(), NOW, &[])
        .unwrap()
        .target
        .is_none());
    assert_eq!(field_of(with("aws", json!({"accountId": "111111111111", "region": "eu-west-1"}))), "aws");
}

#[test]
fn every_rule_names_its_field() {
    let mut no_token = base();
    no_token.as_object_mut().unwrap().remove("taskToken");
    assert_eq!(field_of(no_token), "taskToken");
    assert_eq!(field_of(with("taskToken", json!("x".repeat(2049)))), "taskToken");
    assert_eq!(field_of(with("approvers", json!([]))), "approvers");
    assert_eq!(field_of(with("approvers", json!([{"role": "x"}]))), "approvers[0]");
    assert_eq!(field_of(with("approvers", json!([{"email": "nope"}]))), "approvers[0].email");
    let mut three_of_two = with("quorum", json!(3));
    three_of_two["approvers"] = json!([{"sub": "a"}, {"sub": "b"}]);
    assert_eq!(field_of(three_of_two), "quorum");
    assert_eq!(field_of(with("quorum", json!("most"))), "quorum");
    assert_eq!(field_of(with("title", json!(""))), "title");
    assert_eq!(field_of(with("title", json!("t".repeat(201)))), "title");
    assert_eq!(field_of(with("summary", json!("s".repeat(4001)))), "summary");
    assert_eq!(field_of(with("details", json!([1]))), "details");
    assert_eq!(field_of(with("details", json!({"x": "y".repeat(DETAILS_MAX_BYTES)}))), "details");
    assert_eq!(field_of(with("form", json!([{"name": "a", "label": "A", "type": "date"}]))), "form");
    assert_eq!(field_of(with("form", json!([{"name": "a b", "label": "A", "type": "text"}]))), "form[0].name");
    assert_eq!(field_of(with("timeoutSeconds", json!(0))), "timeoutSeconds");
    assert_eq!(field_of(with("timeoutSeconds", json!(400 * 86_400))), "timeoutSeconds");
    assert_eq!(field_of(with("expiresAt", json!("2020-01-01T00:00:00Z"))), "expiresAt");
    let mut past = base();
    past.as_object_mut().unwrap().remove("timeoutSeconds");
    past["expiresAt"] = json!("2020-01-01T00:00:00Z");
    assert_eq!(field_of(past), "expiresAt");
    assert_eq!(field_of(with("notify", json!(["x"]))), "notify[0]");
    assert_eq!(field_of(with("locale", json!("fr"))), "locale");
    assert_eq!(field_of(with("approvalId", json!("short"))), "approvalId");
    assert_eq!(field_of(with("approvalId", json!("openapi-idem-0001"))), "approvalId");
    assert_eq!(field_of(with("title", json!("\u{202E}\u{200B}"))), "title");
    let long_help = json!([{"name": "a", "label": "A", "type": "text", "help": "h".repeat(501)}]);
    assert_eq!(field_of(with("form", long_help)), "form[0].help");
    assert_eq!(field_of(with("bogus", json!(1))), "bogus");
    assert_eq!(field_of(with("reminders", json!("PT1H"))), "reminders");
    assert_eq!(field_of(with("reminders", json!(["PT10M", "PT2H"]))), "reminders[1]");
    assert_eq!(
        field_of(with("escalation", json!({"after": "PT10M", "to": [{"email": "x"}]}))),
        "escalation.to[0].email"
    );
    assert_eq!(field_of(with("escalation", json!({"after": "PT2H", "to": [{"sub": "boss"}]}))), "escalation.after");
}

#[test]
fn schedule_fields_resolve_to_times() {
    let mut b = with("reminders", json!(["PT10M", {"beforeExpiry": "PT5M"}]));
    b["escalation"] = json!({"after": "PT30M", "to": [{"email": "Boss@Example.com"}], "note": "ping"});
    let a = parse_registration(b.to_string().as_bytes(), NOW, &["example.com".to_owned()]).unwrap();
    assert_eq!(a.schedule.reminders, Some(vec![NOW + 600_000, NOW + 3_300_000]));
    let e = a.schedule.escalation.unwrap();
    assert_eq!(
        (e.at, e.to, e.note),
        (NOW + 1_800_000, vec![Principal::Email("boss@example.com".into())], Some("ping".into()))
    );
    // Omitted: the default reminder before expiry (None); `[]`: none at all.
    assert_eq!(parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap().schedule.reminders, None);
    let none = with("reminders", json!([]));
    assert_eq!(parse_registration(none.to_string().as_bytes(), NOW, &[]).unwrap().schedule.reminders, Some(vec![]));
}

#[test]
fn values_of_the_wrong_type_say_what_the_field_must_be() {
    let said = |v: Value| match parse_registration(v.to_string().as_bytes(), NOW, &[]).unwrap_err() {
        ApiError::Invalid { field, message } => (field, message),
        e => panic!("{e:?}"),
    };
    let is = |f: &str, m: &str| (f.to_owned(), m.to_owned());
    assert_eq!(said(with("title", json!(1))), is("title", "must be a string"));
    assert_eq!(said(with("approvers", json!("x"))), is("approvers", "must be an array"));
    assert_eq!(said(with("approvers", json!([{"sub": "a"}, {"email": 5}]))).0, "approvers[1]");
    assert_eq!(said(with("notify", json!(["a@example.com", 1]))), is("notify[1]", "is not an email address"));
    assert_eq!(said(with("notify", json!([{"slack": "x"}]))).0, "notify[0]");
    assert_eq!(said(with("form", json!("x"))), is("form", "must be an array of fields"));
    assert_eq!(said(with("timeoutSeconds", json!("60"))), is("timeoutSeconds", "must be a positive integer"));
    assert_eq!(said(with("locale", json!(5))), is("locale", "must be \"en\" or \"ja\""));
    assert_eq!(said(with("taskToken", Value::Null)), is("taskToken", "is required"));
    assert_eq!(said(json!([base()])), is("body", "must be a JSON object"));
    assert_eq!(said(with("bogus", json!(1))), is("bogus", "is not a known field"));
    assert!(matches!(parse_registration(b"{nope", NOW, &[]), Err(ApiError::MalformedBody(_))));
}

#[test]
fn one_line_fields_lose_bidi_and_zero_width_controls() {
    let b = with("title", json!("Refund \u{202E}0001$\u{202C} to \u{200B}ACME\u{FEFF}"));
    let mut b = b;
    b["form"] = json!([{"name": "r", "label": "\u{2067}Risk\u{2069}", "type": "choice",
                        "options": ["low\u{061C}", "hi\u{200E}gh"]}]);
    let a = parse_registration(b.to_string().as_bytes(), NOW, &[]).unwrap();
    assert_eq!(a.title, "Refund 0001$ to ACME");
    assert_eq!(a.form[0].label, "Risk");
    assert_eq!(a.form[0].kind, crate::domain::form::FieldKind::Choice { options: vec!["low".into(), "high".into()] });
    let chosen = with("approvalId", json!("wf-Q2hhbmdlIHJlcXVlc3QgMQ"));
    assert_eq!(
        parse_registration(chosen.to_string().as_bytes(), NOW, &[]).unwrap().id.unwrap().as_str(),
        "wf-Q2hhbmdlIHJlcXVlc3QgMQ"
    );
}

#[test]
fn requesters_and_the_outcome_on_expiry() {
    let a = parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap();
    assert_eq!((a.requested_by.len(), a.allow_self_approval, a.on_expiry), (0, false, OnExpiry::None));
    let mut b = with("requestedBy", json!([{"email": "Alice@Example.com"}]));
    b["onExpiry"] = json!("reject");
    let a = parse_registration(b.to_string().as_bytes(), NOW, &[]).unwrap();
    assert_eq!(a.requested_by, vec![Principal::Email("alice@example.com".into())]);
    assert_eq!(a.on_expiry, OnExpiry::Reject);
    // The only other approver is a group: still reachable under "all".
    b["quorum"] = json!("all");
    assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_err(), "alice's own email slot");
    b["allowSelfApproval"] = json!(true);
    assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_ok());
    assert_eq!(field_of(with("requestedBy", json!([{"group": "finance"}]))), "requestedBy[0]");
    assert_eq!(field_of(with("requestedBy", json!({"sub": "a"}))), "requestedBy");
    assert_eq!(field_of(with("requestedBy", json!([{"role": "a"}]))), "requestedBy[0]");
    assert_eq!(field_of(with("allowSelfApproval", json!("yes"))), "allowSelfApproval");
    assert_eq!(field_of(with("onExpiry", json!("escalate"))), "onExpiry");
}

#[test]
fn n_quorum_may_exceed_listed_principals_only_with_groups() {
    let mut b = with("quorum", json!(2));
    b["approvers"] = json!([{"group": "finance"}]);
    assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_ok());
    b["approvers"] = json!([{"sub": "a"}]);
    assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_err());
}

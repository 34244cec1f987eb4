//! Web Push's statements (`ringi_core::sql::push`) on SQLite over the real migrations: at most MAX_DEVICES per
//! person, a device reached by sub, email or group, the outbox through delivery, retry and a gone subscription.

mod common;
use common::{approval, column, count, migrated, run};

use ringi_core::adapters::webpush::{PushOutcome, PushTargets, MAX_DEVICES};
use ringi_core::base::principal::Principal;
use ringi_core::sql::push::{self, NewDevice};
use rusqlite::Connection;

fn device(db: &Connection, device: &str, sub: &str, email: Option<&str>, groups: &[&str]) -> usize {
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    let endpoint = format!("https://push.example/{device}");
    run(
        db,
        &push::subscribe(&NewDevice {
            device,
            endpoint: &endpoint,
            sub,
            email,
            groups: &groups,
            p256dh: "p",
            auth: "a",
            lang: "en",
            now: 1,
        }),
    )
}

fn due(db: &Connection, id: &str, kind: &str, principals: &[Principal], now: i64) -> Vec<String> {
    let [insert, select] = push::due(id, kind, &PushTargets::of(principals), now);
    run(db, &insert);
    column(db, &select)
}

#[test]
fn a_person_keeps_at_most_max_devices_and_a_device_belongs_to_whoever_subscribed_last() {
    let db = migrated();
    for i in 0..MAX_DEVICES {
        assert_eq!(device(&db, &format!("d{i}"), "alice", None, &[]), 1);
    }
    assert_eq!(device(&db, "one-more", "alice", None, &[]), 0, "past the limit nothing is stored");
    assert_eq!(device(&db, "d0", "alice", Some("A@x.test"), &[]), 1, "a stored device is replaced, not counted twice");
    assert_eq!(device(&db, "d1", "bob", None, &[]), 1, "the browser's endpoint is bob's now");
    assert_eq!(count(&db, "push_subscriptions", "sub = 'alice'"), MAX_DEVICES as i64 - 1);
    assert_eq!(count(&db, "push_subscriptions", "email = 'a@x.test'"), 1, "emails are kept in lower case");
    let [outbox, subscription] = push::unsubscribe("alice", "d1");
    run(&db, &outbox);
    assert_eq!(run(&db, &subscription), 0, "nobody removes another person's device");
    let [outbox, subscription] = push::unsubscribe("bob", "d1");
    run(&db, &outbox);
    assert_eq!(run(&db, &subscription), 1);
}

#[test]
fn an_approval_reaches_devices_by_sub_email_or_group_and_the_outbox_follows_the_answers() {
    let db = migrated();
    approval(&db, "a1", 10_000, &["sub:alice"]);
    device(&db, "alice-phone", "alice", Some("alice@x.test"), &[]);
    device(&db, "bob-phone", "bob", Some("bob@x.test"), &["finance"]);
    device(&db, "carol-phone", "carol", None, &["ops"]);
    let by_sub = due(&db, "a1", "request", &[Principal::Sub("alice".into())], 100);
    assert_eq!(by_sub, ["alice-phone"]);
    let by_email = due(&db, "a1", "reminder", &[Principal::Email("Bob@X.test".into())], 100);
    assert_eq!(by_email, ["bob-phone"]);
    let by_group =
        due(&db, "a1", "escalation", &[Principal::Group("finance".into()), Principal::Group("ops".into())], 100);
    assert_eq!(by_group, ["bob-phone", "carol-phone"]);
    assert!(due(&db, "a1", "handover", &[Principal::Sub("dave".into())], 100).is_empty());
    assert_eq!(count(&db, "push_outbox", "state = 'pending'"), 4);

    // Delivered leaves; a retry stays failed; gone drops the subscription and all it had queued.
    for c in push::done("a1", "request", "alice-phone", PushOutcome::Delivered, 200) {
        run(&db, &c);
    }
    for c in push::done("a1", "reminder", "bob-phone", PushOutcome::Retry, 200) {
        run(&db, &c);
    }
    assert_eq!(
        count(&db, "push_outbox", "device = 'bob-phone' AND kind = 'reminder' AND state = 'failed' AND attempts = 1"),
        1
    );
    for c in push::done("a1", "escalation", "carol-phone", PushOutcome::Gone, 200) {
        run(&db, &c);
    }
    assert_eq!(count(&db, "push_subscriptions", "device = 'carol-phone'"), 0);
    assert_eq!(count(&db, "push_outbox", "device = 'carol-phone'"), 0);

    // The cron: the failed entry, and the pending one whose sender is gone (older than the grace), not a fresh one.
    let [cleanup, select] = push::retries(300, 5, 150);
    run(&db, &cleanup);
    let mut taken: Vec<String> = column(&db, &select).into_iter().map(|id: String| id).collect();
    taken.sort();
    assert_eq!(taken, ["a1", "a1"]);
    let [cleanup, select] = push::retries(300, 5, 50);
    run(&db, &cleanup);
    assert_eq!(column::<String>(&db, &select).len(), 1, "only the failed one: the pending one may still be in flight");
    // Closed (expired) approvals' entries go.
    let [cleanup, _] = push::retries(20_000, 5, 50);
    run(&db, &cleanup);
    assert_eq!(count(&db, "push_outbox", "1"), 0);
}

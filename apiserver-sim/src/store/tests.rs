//! Tests of the MVCC store through its public API.

use super::*;
use serde_json::Value;
use serde_json::json;

fn cm(name: &str, v: &str) -> Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"ns","uid":format!("uid-{name}")},"data":{"v":v}})
}

fn all(store: &Store, at: Option<u64>) -> Result<Vec<(String, String)>, StoreError> {
    let page = store.list(
        ListRequest {
            keyspace: "/cm",
            prefix: "ns/",
            at,
            start: "",
            limit: 0,
            count_remaining: false,
            cached: false,
        },
        &|_| true,
    )?;
    Ok(page
        .items
        .iter()
        .map(|o| {
            (
                o.name().to_owned(),
                o.to_value()["data"]["v"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect())
}

#[test]
fn revisions_conflicts_and_past_reads() {
    let s = Store::new(100, 1);
    let a = s.create("/cm", cm("a", "1"), &[]).unwrap();
    assert_eq!(a.rv(), 2);
    assert_eq!(
        s.create("/cm", cm("a", "1"), &[]),
        Err(StoreError::AlreadyExists)
    );
    s.create("/cm", cm("b", "1"), &[]).unwrap(); // rv 3
    let a2 = s.update("/cm", cm("a", "2"), 2, &[]).unwrap(); // rv 4
    assert_eq!(a2.rv(), 4);
    assert_eq!(
        s.update("/cm", cm("a", "3"), 2, &[]),
        Err(StoreError::Conflict { current: 4 })
    );
    // no-op update: no new revision
    assert_eq!(s.update("/cm", cm("a", "2"), 4, &[]).unwrap().rv(), 4);
    let d = s.delete("/cm", "ns/b", None, &[]).unwrap(); // rv 5
    assert_eq!(d.rv(), 5);
    assert_eq!(d.to_value()["metadata"]["resourceVersion"], "5");
    assert_eq!(all(&s, None).unwrap(), vec![("a".into(), "2".into())]);
    assert_eq!(
        all(&s, Some(3)).unwrap(),
        vec![("a".into(), "1".into()), ("b".into(), "1".into())]
    );
    assert_eq!(all(&s, Some(1)).unwrap(), vec![]);
    assert_eq!(all(&s, Some(9)), Err(StoreError::TooLarge { current: 5 }));
    let (events, rev) = s.events_after("/cm", 3).unwrap();
    assert_eq!((events.len(), rev), (2, 5));
    assert_eq!(events[1].kind, EventType::Deleted);
    assert!(s.find_uid("uid-a").is_some() && s.find_uid("uid-b").is_none());
    s.compact_now();
    assert_eq!(
        all(&s, Some(3)),
        Err(StoreError::Compacted { compacted: 5 })
    );
    assert!(s.events_after("/cm", 4).is_err());
    assert_eq!(s.events_after("/cm", 5).unwrap().0.len(), 0);
}

#[test]
fn bounded_history_compacts_oldest() {
    let s = Store::new(2, 0);
    for i in 0..5 {
        s.create("/cm", cm(&format!("o{i}"), "x"), &[]).unwrap();
    }
    assert_eq!(s.compacted(), 3);
    assert!(s.events_after("/cm", 2).is_err());
    assert_eq!(s.events_after("/cm", 3).unwrap().0.len(), 2);
}

#[test]
fn pages_count_remaining_and_continue() {
    let s = Store::new(100, 0);
    for i in 0..5 {
        s.create("/cm", cm(&format!("o{i}"), "x"), &[]).unwrap();
    }
    let req = ListRequest {
        keyspace: "/cm",
        prefix: "",
        at: None,
        start: "",
        limit: 2,
        count_remaining: true,
        cached: false,
    };
    let p = s.list(req, &|_| true).unwrap();
    assert_eq!(p.items.len(), 2);
    assert_eq!(p.remaining, Some(3));
    let next = p.next_key.unwrap();
    s.delete("/cm", "ns/o2", None, &[]).unwrap();
    // continue at the old revision still sees o2
    let p2 = s
        .list(
            ListRequest {
                start: &next,
                at: Some(p.rv),
                ..req
            },
            &|_| true,
        )
        .unwrap();
    assert_eq!(
        p2.items.iter().map(|o| o.name()).collect::<Vec<_>>(),
        vec!["o2", "o3"]
    );
    assert_eq!(p2.remaining, Some(1));
}

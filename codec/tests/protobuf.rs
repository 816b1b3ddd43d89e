//! Kubernetes protobuf read against what kube-apiserver 1.36.2 wrote: each fixture was
//! fetched twice from a real server (tests/fixtures/protobuf), once as
//! `application/vnd.kubernetes.protobuf` and once as `application/json`, and the JSON the
//! codec makes of the first must be the second.

use bytes::Bytes;
use clientgo_apimachinery::{Compact, DynamicObject, Object, WatchEvent};
use clientgo_codec::protobuf::{self, ProtobufError, WireFormat};
use clientgo_codec::{FrameError, Watch, WatchError};
use http_body_util::Full;
use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/protobuf/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn transcoded(object: &[u8]) -> Result<Value, ProtobufError> {
    let mut out = Vec::new();
    protobuf::object_to_json(object, &mut out)?;
    Ok(serde_json::from_slice(&out).expect("the codec writes valid JSON"))
}

/// The frames of a protobuf watch body, their length prefixes removed.
fn frames(body: &[u8]) -> Vec<&[u8]> {
    let mut rest = body;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        out.push(&rest[4..4 + len]);
        rest = &rest[4 + len..];
    }
    out
}

#[test]
fn objects_read_as_the_server_writes_them_in_json() {
    // `rich`: labels, annotations with escapes and non-ASCII, finalizers, two owner references
    // (one with controller and blockOwnerDeletion set), managed fields, a deletion timestamp
    // and grace period of 0, generateName, binaryData and immutable; `lease`: every field of
    // a LeaseSpec, its MicroTimes to the microsecond.
    for name in ["rich", "secret", "list", "empty-list", "status404", "lease"] {
        let json: Value = serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        assert_eq!(
            transcoded(&fixture(&format!("{name}.pb"))).unwrap(),
            json,
            "{name}"
        );
    }
}

#[test]
fn a_list_comes_out_in_pieces_an_item_at_a_time() {
    for (name, items) in [("list", 2), ("empty-list", 0), ("status404", usize::MAX)] {
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        protobuf::object_to_json_pieces::<ProtobufError>(
            &fixture(&format!("{name}.pb")),
            |piece| {
                pieces.push(piece.to_vec());
                Ok(())
            },
        )
        .unwrap();
        // The members but the items, each item, the close; a Status at once.
        let expected = if items == usize::MAX { 1 } else { items + 2 };
        assert_eq!(pieces.len(), expected, "{name}");
        let json: Value = serde_json::from_slice(&pieces.concat()).unwrap();
        let server: Value = serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        assert_eq!(json, server, "{name}");
    }
    // The sink's error stops the pieces.
    let mut calls = 0;
    let result = protobuf::object_to_json_pieces(&fixture("list.pb"), |_| {
        calls += 1;
        Err(ProtobufError::Truncated)
    });
    assert_eq!((result, calls), (Err(ProtobufError::Truncated), 1));
}

/// The pieces `JsonPieces` makes of `body` pushed in chunks of `chunk` bytes.
fn pieces_of(body: &[u8], chunk: usize) -> Result<Vec<Vec<u8>>, ProtobufError> {
    let mut reader = protobuf::JsonPieces::new();
    let mut pieces = Vec::new();
    for part in body.chunks(chunk.max(1)) {
        reader.push::<ProtobufError>(part, |piece| {
            pieces.push(piece.to_vec());
            Ok(())
        })?;
    }
    reader.finish::<ProtobufError>(|piece| {
        pieces.push(piece.to_vec());
        Ok(())
    })?;
    Ok(pieces)
}

#[test]
fn a_list_arriving_in_chunks_comes_out_an_item_at_a_time() {
    for (name, items) in [("list", 2), ("empty-list", 0), ("rich", usize::MAX)] {
        let body = fixture(&format!("{name}.pb"));
        let server: Value = serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        for chunk in [1, 2, 3, 7, 64, 1000, body.len()] {
            let pieces = pieces_of(&body, chunk).unwrap();
            // The opening, each item, the rest and the close; anything else at once.
            let expected = if items == usize::MAX { 1 } else { items + 2 };
            assert_eq!(pieces.len(), expected, "{name} in chunks of {chunk}");
            let json: Value = serde_json::from_slice(&pieces.concat()).unwrap();
            assert_eq!(json, server, "{name} in chunks of {chunk}");
        }
    }
    // The first item is handed on before the second has arrived.
    let body = fixture("list.pb");
    let mut reader = protobuf::JsonPieces::new();
    let mut pieces = 0;
    reader
        .push::<ProtobufError>(&body[..body.len() - 10], |_| {
            pieces += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(pieces, 2, "the opening and the first item");
}

#[test]
fn a_lists_items_read_straight_as_from_their_json() {
    for name in ["list", "empty-list", "rich"] {
        let body = fixture(&format!("{name}.pb"));
        let server: Value = serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        for chunk in [1, 3, 64, body.len()] {
            // The pieces with every item as its JSON make the server's JSON, and each item
            // reads straight into a type as from that JSON.
            let mut reader = protobuf::JsonPieces::new();
            let (mut json, mut items) = (Vec::new(), Vec::new());
            for part in body.chunks(chunk) {
                reader
                    .push_pieces::<ProtobufError>(part, |piece| {
                        match piece {
                            protobuf::Piece::Json(text) => json.extend_from_slice(text),
                            protobuf::Piece::Item(item) => {
                                let mut text = Vec::new();
                                item.write_json(&mut text)?;
                                let from_json: DynamicObject = serde_json::from_slice(
                                    text.strip_prefix(b",").unwrap_or(&text),
                                )
                                .unwrap();
                                assert_eq!(item.decode::<DynamicObject>()?, from_json);
                                let compact: Compact<DynamicObject> = item.decode()?;
                                assert_eq!(compact.name(), from_json.name());
                                json.extend_from_slice(&text);
                                items.push(from_json);
                            }
                        }
                        Ok(())
                    })
                    .unwrap();
            }
            reader
                .finish::<ProtobufError>(|text| {
                    json.extend_from_slice(text);
                    Ok(())
                })
                .unwrap();
            let json: Value = serde_json::from_slice(&json).unwrap();
            assert_eq!(json, server, "{name} in chunks of {chunk}");
            let expected = server["items"].as_array().map_or(0, Vec::len);
            assert_eq!(items.len(), expected, "{name} in chunks of {chunk}");
        }
    }
}

#[test]
fn a_list_cut_short_or_damaged_is_an_error_never_a_panic() {
    // Protobuf has no end marker: a body cut between two fields of the envelope reads as a
    // shorter object (the transport tells a cut body from a whole one). Cut inside the list's
    // message, it is an error.
    let body = fixture("list.pb");
    // The list's message runs from byte 29 to 4 bytes before the end (the envelope's empty
    // content encoding and content type follow it).
    let (list_starts, list_ends) = (29, body.len() - 4);
    for len in 0..body.len() {
        for chunk in [1, 5, 100] {
            if let Ok(pieces) = pieces_of(&body[..len], chunk) {
                assert!(
                    len <= list_starts || len >= list_ends,
                    "{len} bytes in chunks of {chunk}"
                );
                serde_json::from_slice::<serde::de::IgnoredAny>(&pieces.concat())
                    .expect("valid JSON");
            }
        }
    }
    let seed = 0x1157_cafe;
    println!("seed {seed:#x}");
    let mut rng = Rng(seed);
    let mut failed = 0;
    for _ in 0..2_000 {
        let mut damaged = body.clone();
        let i = (rng.next() as usize) % damaged.len();
        damaged[i] = rng.next() as u8;
        match pieces_of(&damaged, 1 + (rng.next() as usize) % 200) {
            Ok(pieces) => {
                serde_json::from_slice::<serde::de::IgnoredAny>(&pieces.concat())
                    .expect("valid JSON");
            }
            Err(_) => failed += 1,
        }
    }
    assert!(failed > 100, "{failed}");
}

#[test]
fn watch_events_read_as_the_server_writes_them_in_json() {
    // A streaming list of the same namespace, asked once in each format: ADDED events, then
    // the bookmark that ends the initial events.
    let pb = fixture("watch.pb");
    let json = fixture("watch.json");
    let from_pb: Vec<Value> = frames(&pb)
        .into_iter()
        .map(|frame| {
            let mut out = Vec::new();
            protobuf::watch_event_to_json(frame, &mut out).unwrap();
            serde_json::from_slice(&out).unwrap()
        })
        .collect();
    let from_json: Vec<Value> = json
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    assert_eq!(from_pb.len(), 3);
    assert_eq!(from_pb, from_json);
}

#[tokio::test]
async fn a_watch_reads_a_protobuf_body() {
    let body = Full::new(Bytes::from(fixture("watch.pb")));
    let mut watch = Watch::<DynamicObject>::new(body).with_format(WireFormat::Protobuf);
    let mut keys = Vec::new();
    let mut bookmark = None;
    while let Some(event) = watch.next().await {
        match event.unwrap() {
            WatchEvent::Added(object) => keys.push(object.key()),
            WatchEvent::Bookmark(mark) => bookmark = Some(mark),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(keys, ["proto-fx/owner", "proto-fx/rich"]);
    let bookmark = bookmark.expect("the bookmark ending the initial events");
    assert!(!bookmark.resource_version().is_empty());
    assert!(bookmark.is_initial_events_end());
}

#[tokio::test]
async fn an_expired_watch_ends_in_an_error_event() {
    let body = Full::new(Bytes::from(fixture("gone.pb")));
    let mut watch = Watch::<DynamicObject>::new(body).with_format(WireFormat::Protobuf);
    let Some(Ok(WatchEvent::Error(status))) = watch.next().await else {
        panic!("an ERROR event");
    };
    assert_eq!(status.code, 410);
    assert!(watch.next().await.is_none());
}

#[tokio::test]
async fn a_protobuf_watch_cut_inside_an_event_is_truncated() {
    let mut body = fixture("watch.pb");
    body.truncate(body.len() - 3);
    let mut watch =
        Watch::<DynamicObject>::new(Full::new(Bytes::from(body))).with_format(WireFormat::Protobuf);
    let mut last = None;
    while let Some(event) = watch.next().await {
        last = Some(event);
    }
    assert!(
        matches!(last, Some(Err(WatchError::Truncated { .. }))),
        "{last:?}"
    );
}

#[tokio::test]
async fn a_protobuf_frame_that_is_not_an_event_ends_the_watch() {
    // A frame of 3 bytes that end inside a field.
    let body = Full::new(Bytes::from_static(&[0, 0, 0, 3, 0x0a, 0x05, b'A']));
    let mut watch = Watch::<DynamicObject>::new(body).with_format(WireFormat::Protobuf);
    let Some(Err(WatchError::Frame(FrameError::Protobuf(ProtobufError::Truncated)))) =
        watch.next().await
    else {
        panic!("a protobuf frame error");
    };
    assert!(watch.next().await.is_none());
}

/// A field as protobuf writes it: a tag and a length-delimited value.
fn field(number: u32, value: &[u8]) -> Vec<u8> {
    let mut out = vec![(number << 3 | 2) as u8, value.len() as u8];
    out.extend_from_slice(value);
    out
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
}

#[test]
fn fields_in_any_order_read_the_same() {
    let meta = [field(3, b"ns"), field(1, b"cm")].concat();
    let entry = |k: &[u8], v: &[u8]| field(2, &[field(1, k), field(2, v)].concat());
    // data entries, then metadata, then another data entry: numbers go down twice.
    let raw = [entry(b"a", b"1"), field(1, &meta), entry(b"b", b"2")].concat();
    let json = transcoded(&envelope("v1", "ConfigMap", &raw)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "cm", "namespace": "ns"},
            "data": {"a": "1", "b": "2"},
        })
    );
}

#[test]
fn errors_name_the_field_never_a_value() {
    let unknown = envelope("v1", "Pod", b"");
    assert_eq!(
        transcoded(&unknown).unwrap_err(),
        ProtobufError::UnknownKind {
            api_version: "v1".into(),
            kind: "Pod".into()
        }
    );
    // ObjectMeta's name (field 1) given as a varint.
    let raw = field(1, &[0x08, 0x07]);
    let error = transcoded(&envelope("v1", "ConfigMap", &raw)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "field 1 of ObjectMeta has the wrong wire type"
    );
    // FieldsV1 that is not JSON: the error does not quote it.
    let fields_v1 = field(7, &field(1, b"{\"secret-value"));
    let raw = field(1, &field(17, &fields_v1));
    let error = transcoded(&envelope("v1", "ConfigMap", &raw)).unwrap_err();
    assert!(!error.to_string().contains("secret"), "{error}");
    assert_eq!(
        transcoded(b"{\"kind\":1}").unwrap_err(),
        ProtobufError::Magic
    );
}

/// A small seeded generator (xorshift64*), enough to vary bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `PROTOBUF_FUZZ_SEED`, or `default`; printed, so that a failure can be replayed.
fn fuzz_seed(default: u64) -> u64 {
    let seed = std::env::var("PROTOBUF_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    println!("seed {seed} (PROTOBUF_FUZZ_SEED)");
    seed
}

/// Hands `check` every prefix of each original, and 2,000 copies of each with 1 to 4 of its
/// bytes changed at random.
fn damage(originals: &[Vec<u8>], rng: &mut Rng, check: &mut impl FnMut(&[u8])) {
    for original in originals {
        for len in 0..original.len() {
            check(&original[..len]);
        }
        for _ in 0..2_000 {
            let mut bytes = original.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() as usize) % bytes.len();
                bytes[i] = rng.next() as u8;
            }
            check(&bytes);
        }
    }
}

#[test]
fn damaged_protobuf_is_an_error_or_valid_json_never_a_panic() {
    let seed = fuzz_seed(0x5eed_cafe_u64);
    let mut rng = Rng(seed | 1);
    let originals = [fixture("rich.pb"), fixture("list.pb"), fixture("secret.pb")];
    let (mut ok, mut failed) = (0, 0);
    let mut check = |bytes: &[u8]| {
        let mut out = Vec::new();
        match protobuf::object_to_json(bytes, &mut out) {
            Ok(()) => {
                serde_json::from_slice::<serde::de::IgnoredAny>(&out)
                    .unwrap_or_else(|e| panic!("seed {seed}: invalid JSON: {e}"));
                ok += 1;
            }
            Err(_) => failed += 1,
        }
    };
    damage(&originals, &mut rng, &mut check);
    // Both outcomes happened: the damage reached the decoder's checks and its output.
    assert!(ok > 100 && failed > 100, "ok {ok}, failed {failed}");
}

/// `object` read into a `Value` through the JSON the transcoder makes of it, and read
/// straight; errors as text.
fn both_ways(object: &[u8]) -> (Result<Value, String>, Result<Value, String>) {
    let mut json = Vec::new();
    let via_json = protobuf::object_to_json(object, &mut json)
        .map_err(|e| e.to_string())
        .and_then(|()| serde_json::from_slice(&json).map_err(|e| e.to_string()));
    let direct = protobuf::from_object::<Value>(object).map_err(|e| e.to_string());
    (via_json, direct)
}

#[test]
fn objects_read_straight_into_a_type_as_from_their_json() {
    for name in ["rich", "secret", "list", "empty-list", "status404", "lease"] {
        let pb = fixture(&format!("{name}.pb"));
        let json = fixture(&format!("{name}.json"));
        let direct: Value = protobuf::from_object(&pb).unwrap();
        assert_eq!(
            direct,
            serde_json::from_slice::<Value>(&json).unwrap(),
            "{name}"
        );
        // Types that read what they are given in other ways: field by field, and keeping
        // everything but metadata as raw JSON (serde_json's `RawValue`).
        let dynamic: DynamicObject = protobuf::from_object(&pb).unwrap();
        let from_json: DynamicObject = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            serde_json::to_value(&dynamic).unwrap(),
            serde_json::to_value(&from_json).unwrap(),
            "{name}"
        );
        // A `Compact` keeps its other fields in the order they came: protobuf's.
        let compact: Compact<DynamicObject> = protobuf::from_object(&pb).unwrap();
        let mut transcoded = Vec::new();
        protobuf::object_to_json(&pb, &mut transcoded).unwrap();
        let from_json: Compact<DynamicObject> = serde_json::from_slice(&transcoded).unwrap();
        assert_eq!(compact, from_json, "{name}");
    }
}

#[test]
fn fields_in_any_order_read_straight_the_same() {
    let meta = [field(3, b"ns"), field(1, b"cm")].concat();
    let entry = |k: &[u8], v: &[u8]| field(2, &[field(1, k), field(2, v)].concat());
    let raw = [entry(b"a", b"1"), field(1, &meta), entry(b"b", b"2")].concat();
    let object = envelope("v1", "ConfigMap", &raw);
    let (transcoded, direct) = both_ways(&object);
    assert_eq!(direct.unwrap(), transcoded.unwrap());
}

/// A type that takes what decodes and leaves out what does not, as a lenient
/// `deserialize_with` does: it swallows the error that ends a decode which met a message out
/// of order.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct Lenient {
    #[serde(default, deserialize_with = "or_none")]
    metadata: Option<std::collections::BTreeMap<String, String>>,
    data: std::collections::BTreeMap<String, String>,
}

fn or_none<'de, D: serde::Deserializer<'de>>(
    from: D,
) -> Result<Option<std::collections::BTreeMap<String, String>>, D::Error> {
    Ok(serde::Deserialize::deserialize(from).ok())
}

#[test]
fn a_message_out_of_order_reads_as_one_in_order_through_every_entry_point() {
    let entry = |k: &[u8], v: &[u8]| field(2, &[field(1, k), field(2, v)].concat());
    let expected = Lenient {
        metadata: Some(
            [("name", "cm"), ("namespace", "ns")]
                .map(|(k, v)| (k.into(), v.into()))
                .into(),
        ),
        data: [("a".to_owned(), "1".to_owned())].into(),
    };
    // The object's own fields in order; its metadata's not (namespace, then name), then in
    // order. Read through a type that would turn the first try's error into a missing field.
    for meta in [
        [field(3, b"ns"), field(1, b"cm")].concat(),
        [field(1, b"cm"), field(3, b"ns")].concat(),
    ] {
        let raw = [field(1, &meta), entry(b"a", b"1")].concat();
        let object = envelope("v1", "ConfigMap", &raw);
        let read: Lenient = protobuf::from_object(&object).unwrap();
        assert_eq!(read, expected);

        let event = [field(1, b"MODIFIED"), field(2, &field(1, &object))].concat();
        let read: WatchEvent<Lenient> = protobuf::from_watch_event(&event).unwrap();
        assert!(
            matches!(read, WatchEvent::Modified(ref cm) if *cm == expected),
            "{read:?}"
        );

        let list = envelope(
            "v1",
            "ConfigMapList",
            &[field(1, b""), field(2, &raw)].concat(),
        );
        let mut items = Vec::new();
        let mut reader = protobuf::JsonPieces::new();
        reader
            .push_pieces::<ProtobufError>(&list, |piece| {
                if let protobuf::Piece::Item(item) = piece {
                    items.push(item.decode::<Lenient>()?);
                }
                Ok(())
            })
            .unwrap();
        reader.finish::<ProtobufError>(|_| Ok(())).unwrap();
        assert_eq!(items, std::slice::from_ref(&expected));
    }
    // A decode after one that met a message out of order assumes the order again, and one
    // out of order in a message that is itself out of order reads the same too.
    let meta = [field(3, b"ns"), field(1, b"cm")].concat();
    let raw = [entry(b"a", b"1"), field(1, &meta)].concat();
    let read: Lenient = protobuf::from_object(&envelope("v1", "ConfigMap", &raw)).unwrap();
    assert_eq!(read, expected);
}

#[test]
fn a_type_that_does_not_fit_is_an_error_naming_the_field_never_a_value() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Wrong {
        data: std::collections::BTreeMap<String, u32>,
    }
    let error = protobuf::from_object::<Wrong>(&fixture("rich.pb")).unwrap_err();
    let text = error.to_string();
    assert_eq!(
        text,
        "invalid type: string, expected u32 in field 2 of ConfigMap"
    );
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Missing {
        spec: Value,
    }
    let error = protobuf::from_object::<Missing>(&fixture("rich.pb")).unwrap_err();
    assert_eq!(error.to_string(), "missing field `spec`");
}

#[test]
fn damaged_protobuf_reads_straight_as_through_its_json() {
    let seed = fuzz_seed(0x0de5_eed5_u64);
    let mut rng = Rng(seed | 1);
    let originals = [
        fixture("rich.pb"),
        fixture("list.pb"),
        fixture("secret.pb"),
        fixture("lease.pb"),
    ];
    let (mut ok, mut failed) = (0, 0);
    let mut check = |bytes: &[u8]| match both_ways(bytes) {
        (Ok(transcoded), Ok(direct)) => {
            assert_eq!(direct, transcoded, "seed {seed}");
            ok += 1;
        }
        (Err(_), Err(_)) => failed += 1,
        (transcoded, direct) => {
            panic!("seed {seed}: transcoded {transcoded:?}, read straight {direct:?}")
        }
    };
    damage(&originals, &mut rng, &mut check);
    assert!(ok > 100 && failed > 100, "ok {ok}, failed {failed}");
}

#[test]
fn watch_events_read_straight_as_from_their_json() {
    let pb = fixture("watch.pb");
    let json = fixture("watch.json");
    let lines: Vec<&[u8]> = json
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    let events = frames(&pb);
    assert_eq!(events.len(), lines.len());
    for (frame, line) in events.into_iter().zip(lines) {
        let direct: WatchEvent<DynamicObject> = protobuf::from_watch_event(frame).unwrap();
        let from_json: WatchEvent<DynamicObject> = serde_json::from_slice(line).unwrap();
        assert_eq!(direct, from_json);
        let mut transcoded = Vec::new();
        protobuf::watch_event_to_json(frame, &mut transcoded).unwrap();
        let compact: WatchEvent<Compact<DynamicObject>> =
            protobuf::from_watch_event(frame).unwrap();
        let from_json: WatchEvent<Compact<DynamicObject>> =
            serde_json::from_slice(&transcoded).unwrap();
        assert_eq!(compact, from_json);
    }
    // An expired watch's ERROR event: a Status.
    let gone = fixture("gone.pb");
    let [frame] = frames(&gone)[..] else {
        panic!("one frame")
    };
    let Ok(WatchEvent::<DynamicObject>::Error(status)) = protobuf::from_watch_event(frame) else {
        panic!("an ERROR event")
    };
    assert_eq!(status.code, 410);
}

#[test]
fn damaged_list_items_read_straight_as_through_their_json() {
    let seed = fuzz_seed(0x0115_7ed5_u64);
    let mut rng = Rng(seed | 1);
    let (mut same, mut both_failed) = (0, 0);
    let mut check = |bytes: &[u8]| {
        let mut reader = protobuf::JsonPieces::new();
        let mut item_ok = |piece: protobuf::Piece<'_>| {
            let protobuf::Piece::Item(item) = piece else {
                return Ok(());
            };
            let mut text = Vec::new();
            let through_json = item
                .write_json(&mut text)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    serde_json::from_slice::<Value>(text.strip_prefix(b",").unwrap_or(&text))
                        .map_err(|e| e.to_string())
                });
            match (through_json, item.decode::<Value>()) {
                (Ok(json), Ok(direct)) => {
                    assert_eq!(direct, json, "seed {seed}");
                    same += 1;
                }
                (Err(_), Err(_)) => both_failed += 1,
                (json, direct) => panic!("seed {seed}: through JSON {json:?}, straight {direct:?}"),
            }
            Ok::<(), ProtobufError>(())
        };
        for part in bytes.chunks(64) {
            if reader.push_pieces(part, &mut item_ok).is_err() {
                return;
            }
        }
    };
    damage(&[fixture("list.pb")], &mut rng, &mut check);
    assert!(
        same > 100 && both_failed > 10,
        "same {same}, both failed {both_failed}"
    );
}

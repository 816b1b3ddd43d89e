//! Property tests of the watch framer: however a body of JSON objects is cut into chunks, the
//! framer yields exactly the objects serde_json reads from it, byte for byte; whatever bytes
//! arrive, it never panics and never holds more than its cap of an unfinished frame.
//!
//! Seeded: the seed is printed; `PROPTEST_RNG_SEED` and `PROPTEST_CASES` run others, or more
//! (`PROPTEST_CASES=20000 cargo test --release -p clientgo-watch --test framer_properties`).

use bytes::Bytes;
use clientgo_watch::{FrameError, Framer};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// The seeded proptest configuration the workspace's property tests share.
#[path = "../../apimachinery/tests/support/mod.rs"]
mod support;
use support::config;

/// Strings full of what a framer must not be fooled by: braces, quotes, backslashes,
/// escapes, multi-byte characters, and long runs (past the word-at-a-time scan).
fn tricky_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\\\"".to_owned()),
        Just("\n".to_owned()),
        Just("é→𝄞".to_owned()),
        "[a-z ]{0,40}",
        "[{}\"\\\\]{1,5}",
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(tricky_string(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(tricky_string(), value(), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
}

/// Whitespace JSON allows between documents.
fn gap() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![Just(' '), Just('\n'), Just('\r'), Just('\t')],
        0..3,
    )
    .prop_map(|c| c.into_iter().collect())
}

/// `body` cut at `cuts` (positions taken modulo its length, sorted, repeats allowed).
fn chunks(body: &[u8], cuts: &[usize]) -> Vec<Bytes> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for end in at.into_iter().chain([body.len()]) {
        out.push(Bytes::copy_from_slice(&body[start..end]));
        start = end;
    }
    out
}

/// Feeds `chunks` to a framer capped at `max`: the frames, and how the body ended (`Ok(true)`
/// in the middle of a frame). Checks after each chunk that no more than the cap is held.
fn frame(chunks: Vec<Bytes>, max: usize) -> (Vec<Bytes>, Result<bool, FrameError>) {
    let mut framer = Framer::new(max);
    let mut frames = Vec::new();
    for chunk in chunks {
        framer.push(chunk);
        loop {
            match framer.next_frame() {
                Ok(Some(frame)) => {
                    assert!(frame.len() <= max, "a frame past the cap");
                    frames.push(frame);
                }
                Ok(None) => break,
                Err(error) => return (frames, Err(error)),
            }
        }
        assert!(framer.pending_len() <= max, "held past the cap");
    }
    let in_frame = framer.in_frame();
    (frames, Ok(in_frame))
}

proptest! {
    #![proptest_config(config(256))]

    /// Any cut of a body of objects gives back each object's exact bytes.
    #[test]
    fn any_cut_of_a_body_yields_its_objects(
        objects in proptest::collection::vec((object(), gap()), 1..6),
        lead in gap(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let texts: Vec<String> = objects.iter().map(|(o, _)| o.to_string()).collect();
        let mut body = lead;
        for (text, (_, gap)) in texts.iter().zip(&objects) {
            body.push_str(text);
            body.push_str(gap);
        }
        let (frames, end) = frame(chunks(body.as_bytes(), &cuts), usize::MAX);
        prop_assert_eq!(end, Ok(false));
        let frames: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let texts: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        prop_assert_eq!(frames, texts);
    }

    /// Whatever serde_json reads as a sequence of objects, the framer frames the same way.
    #[test]
    fn it_agrees_with_serde_json_on_mutated_bodies(
        objects in proptest::collection::vec(object(), 1..4),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0..3u8), 0..4),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut body: Vec<u8> = objects.iter().flat_map(|o| {
            let mut text = o.to_string().into_bytes();
            text.push(b'\n');
            text
        }).collect();
        for (at, byte, how) in edits {
            let at = at % (body.len() + 1);
            match how {
                0 if at < body.len() => body[at] = byte,
                1 => body.insert(at, byte),
                _ if at < body.len() => { body.remove(at); }
                _ => {}
            }
        }
        let read: Result<Vec<Value>, _> =
            serde_json::Deserializer::from_slice(&body).into_iter::<Value>().collect();
        let (frames, end) = frame(chunks(&body, &cuts), usize::MAX);
        if let Ok(values) = read {
            if values.iter().all(Value::is_object) {
                prop_assert_eq!(end, Ok(false));
                let framed: Vec<Value> =
                    frames.iter().map(|f| serde_json::from_slice(f).unwrap()).collect();
                prop_assert_eq!(framed, values);
            }
        }
    }

    /// Arbitrary bytes, cut anywhere, under a small cap: no panic, nothing held past the cap
    /// (checked inside `frame`), and a frame past it is `TooLarge`.
    #[test]
    fn arbitrary_bytes_never_panic_or_pass_the_cap(
        body in proptest::collection::vec(prop_oneof![
            4 => proptest::sample::select(b"{}\"\\ \n:,[]0a".to_vec()),
            1 => any::<u8>(),
        ], 0..400),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
        max in 1usize..64,
    ) {
        let (_, end) = frame(chunks(&body, &cuts), max);
        if let Err(error) = end {
            let known = matches!(
                error,
                FrameError::TooLarge { limit } if limit == max
            ) || matches!(error, FrameError::Unexpected { offset, .. } if offset < body.len() as u64);
            prop_assert!(known, "{error:?}");
        }
    }
}

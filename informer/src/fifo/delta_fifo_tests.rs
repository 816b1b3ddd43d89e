//! Tests of the DeltaFIFO's back-pressure: what counts against its capacity, when a waiting
//! reflector is woken, and that the count never drifts from what is queued.

use super::*;
use clientgo_apimachinery::DynamicObject;
use std::time::Duration;

fn object(name: &str) -> DynamicObject {
    DynamicObject::new(name)
}

/// Whether `room` resolves without waiting (polled once).
fn room_now(fifo: &DeltaFIFO<DynamicObject>) -> bool {
    let mut room = fifo.room();
    let waker = std::task::Waker::noop();
    room.as_mut()
        .poll(&mut std::task::Context::from_waker(waker))
        .is_ready()
}

#[tokio::test]
async fn watch_events_fill_it_relists_do_not_and_pops_make_room_at_half() {
    let fifo = DeltaFIFO::new(DeltaFIFOOptions::default()).with_capacity(4);
    // A relist of 100 objects: no event counted, room left.
    fifo.replace(
        (0..100).map(|i| object(&format!("r{i}"))).collect(),
        "1".into(),
    );
    assert!(fifo.has_room());
    // A hot key's updates count one by one, though it is one entry in line.
    for _ in 0..4 {
        fifo.update(object("hot"));
    }
    assert!(!fifo.has_room(), "four watch events queued");
    assert!(!room_now(&fifo));
    // The relisted keys come first; popping them frees nothing.
    for _ in 0..100 {
        fifo.pop(|_, _| ()).await.unwrap();
    }
    assert!(!fifo.has_room());
    fifo.pop(|deltas, _| assert_eq!(deltas.len(), 4))
        .await
        .unwrap();
    assert!(
        fifo.has_room() && room_now(&fifo),
        "the hot key's events are gone"
    );
}

#[tokio::test]
async fn a_waiting_reflector_is_woken_at_half_or_by_a_close() {
    let fifo = Arc::new(DeltaFIFO::new(DeltaFIFOOptions::default()).with_capacity(4));
    for name in ["a", "b", "c", "d"] {
        fifo.add(object(name));
    }
    let waiter = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.room().await })
    };
    tokio::task::yield_now().await;
    fifo.pop(|_, _| ()).await.unwrap(); // 3 left: above half
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    fifo.pop(|_, _| ()).await.unwrap(); // 2 left: half
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken at half")
        .unwrap();
    fifo.add(object("e"));
    fifo.add(object("f"));
    assert!(!fifo.has_room());
    let waiter = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.room().await })
    };
    tokio::task::yield_now().await;
    fifo.close();
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken by the close")
        .unwrap();
    assert!(fifo.has_room(), "a closed queue never holds the reflector");
}

/// The count of watch-event deltas (invariant 3) after every step of a seeded random mix
/// of events, deletions (collapsing), relists with tombstones, resyncs and pops.
#[tokio::test]
async fn the_count_of_event_deltas_never_drifts() {
    let seed = 0x5EED_DE17_A000_u64;
    println!("seed {seed:#x}");
    let mut rng = seed;
    let mut next = move |n: u64| {
        rng = rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    };
    let fifo = DeltaFIFO::new(DeltaFIFOOptions {
        emit_delta_type_replaced: true,
        ..DeltaFIFOOptions::default()
    });
    for step in 0..5_000 {
        let name = format!("k{}", next(12));
        match next(7) {
            0 => fifo.add(object(&name)),
            1 | 2 => fifo.update(object(&name)),
            3 => fifo.delete(object(&name)),
            4 => fifo.replace(
                (0..next(6)).map(|i| object(&format!("k{i}"))).collect(),
                step.to_string(),
            ),
            5 => fifo.resync(),
            _ => {
                if !fifo.is_empty() {
                    fifo.pop(|_, _| ()).await.unwrap();
                }
            }
        }
        let state = fifo.state.lock();
        let recount: usize = state
            .items
            .values()
            .map(|d| d.iter().filter(|d| counts(d)).count())
            .sum();
        assert_eq!(state.events, recount, "step {step}, seed {seed:#x}");
    }
}

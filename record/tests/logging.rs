//! `start_logging`: the structured "Event occurred" line of client-go's
//! `StartStructuredLogging`, as checked by `TestEventf`, here through `tracing`.

mod common;

use std::io;
use std::sync::Arc;

use clientgo_record::{EventBroadcaster, EventSource, EventType, ObjectReference};
use common::{pod, test_options};
use parking_lot::Mutex;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn start_logging_writes_one_structured_line_per_event() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .finish();
    // The test's runtime runs every task on this thread, so the default subscriber sees them.
    let _guard = tracing::subscriber::set_default(subscriber);

    let broadcaster = EventBroadcaster::with_options(test_options());
    let log = broadcaster.start_logging();
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));
    let test_ref = ObjectReference::from_object(&pod("baz", "foo", "bar"))
        .with_field_path("spec.containers[2]");
    recorder.eventf(
        &test_ref,
        EventType::Normal,
        "Started",
        format_args!("some verbose message: {}", 1),
    );
    let cluster_scoped = ObjectReference {
        kind: "Node".into(),
        api_version: "v1".into(),
        name: "node-1".into(),
        ..ObjectReference::default()
    };
    recorder.event(
        &cluster_scoped,
        EventType::Warning,
        "Rebooted",
        "node rebooted",
    );

    broadcaster.shutdown();
    log.join().await;

    let output = String::from_utf8(captured.0.lock().clone()).unwrap();
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("Event occurred"))
        .collect();
    assert_eq!(
        lines,
        [
            " INFO Event occurred object=baz/foo field_path=spec.containers[2] kind=Pod \
             api_version=v1 event_type=Normal reason=Started event_message=some verbose message: 1",
            " INFO Event occurred object=node-1 field_path= kind=Node api_version=v1 \
             event_type=Warning reason=Rebooted event_message=node rebooted",
        ],
        "{output}"
    );
}

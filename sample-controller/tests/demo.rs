//! The `--demo` main job is a test too: it must converge and finish cleanly.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_converges_and_exits_cleanly() {
    clientgo_sample_controller::demo::run()
        .await
        .expect("the demo converges");
}

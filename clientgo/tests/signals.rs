//! The shutdown signal: the first SIGTERM cancels the token and the program goes on to shut
//! down; a second signal exits at once with code 1. Each case runs in a child process (this
//! test binary, re-run on one test), since the signals are the process's own.

use std::process::Command;
use std::time::Duration;

/// Run as a child: installs the handler, signals itself, reports what happened.
#[tokio::test]
async fn child_signalled() {
    let Ok(times) = std::env::var("SIGNALS_CHILD") else {
        return;
    };
    let token = clientgo::signals::shutdown_on_signal();
    // SAFETY: sending a signal to this very process.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    tokio::time::timeout(Duration::from_secs(10), token.cancelled())
        .await
        .expect("the first SIGTERM cancels the token");
    println!("CANCELLED");
    if times == "2" {
        // SAFETY: as above.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        tokio::time::sleep(Duration::from_secs(10)).await;
        println!("STILL RUNNING");
    }
}

fn run_child(times: &str) -> (Option<i32>, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_signalled", "--nocapture"])
        .env("SIGNALS_CHILD", times)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn the_first_signal_cancels_the_token_and_the_program_ends_normally() {
    let (code, stdout) = run_child("1");
    assert!(stdout.contains("CANCELLED"), "{stdout}");
    assert_eq!(code, Some(0), "{stdout}");
}

#[test]
fn a_second_signal_exits_at_once_with_code_1() {
    let (code, stdout) = run_child("2");
    assert!(stdout.contains("CANCELLED"), "{stdout}");
    assert!(!stdout.contains("STILL RUNNING"), "{stdout}");
    assert_eq!(code, Some(1), "{stdout}");
}

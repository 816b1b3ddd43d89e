//! The demo's timeline page in a real browser: `sample-controller --demo --trace run.html`
//! writes the page, headless Chromium opens it with `#selftest` (the page's script clicks the
//! first reconcile and writes what it drew into `<pre id="selftest">`), and this test checks
//! that the worker lanes, the key lanes and one key's journey rendered with no script or
//! console error, then takes a screenshot (`target/tmp/trace_in_browser/run.png`).
//!
//! Without Chromium (`/usr/bin/chromium`, Debian's package `chromium`, or `$CHROMIUM`) the
//! test says it is skipped (on the test process's own standard error, which the test harness
//! does not capture), unless `CLIENTGO_BROWSER_REQUIRED=1`, or `CI=true` without that
//! variable, where a missing browser fails (`.ci/run` installs it and requires it).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from));
    candidates.into_iter().find(|path| path.is_file())
}

fn required() -> bool {
    match std::env::var("CLIENTGO_BROWSER_REQUIRED") {
        Ok(value) => value == "1" || value == "true",
        Err(_) => std::env::var("CI").is_ok_and(|ci| ci == "true"),
    }
}

/// Runs `command` to completion, at most `limit`; its stdout and stderr.
fn run(mut command: Command, limit: Duration) -> (String, String) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace_in_browser");
    let out = dir.join(format!("out-{}", std::process::id()));
    let err = dir.join(format!("err-{}", std::process::id()));
    command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = command.spawn().expect("the command starts");
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stdout = std::fs::read_to_string(&out).unwrap_or_default();
            let stderr = std::fs::read_to_string(&err).unwrap_or_default();
            assert!(status.success(), "{command:?} failed: {status}\n{stderr}");
            return (stdout, stderr);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn browser(chromium: &Path, profile: &Path) -> Command {
    let mut command = Command::new(chromium);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--hide-scrollbars",
        "--window-size=1600,1000",
        "--virtual-time-budget=5000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

#[test]
fn the_demos_timeline_renders_in_chromium() {
    let Some(chromium) = chromium() else {
        assert!(
            !required(),
            "Chromium is required here (CLIENTGO_BROWSER_REQUIRED=1 or CI=true) but was not \
             found: apt-get install -y chromium, or set CHROMIUM"
        );
        // Written to the process's standard error itself: `eprintln!` would be captured by
        // the test harness and shown only for a failing test.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the_demos_timeline_renders_in_chromium: Chromium not found \
             (apt-get install -y chromium, or set CHROMIUM=/path/to/chromium)"
        );
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace_in_browser");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("run.html");
    let mut demo = Command::new(env!("CARGO_BIN_EXE_sample-controller"));
    demo.args(["--demo", "--trace"]).arg(&page);
    let (stdout, _) = run(demo, Duration::from_secs(300));
    assert!(stdout.contains("timeline is in"), "{stdout}");

    let url = format!("file://{}#selftest", page.display());
    let mut dump = browser(&chromium, &dir.join("profile-dom"));
    dump.arg("--dump-dom").arg(&url);
    let (dom, log) = run(dump, Duration::from_secs(120));
    let result = dom
        .split_once("SELFTEST ")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(json, _)| json.replace("&quot;", "\""))
        .unwrap_or_else(|| panic!("the page's self test did not run:\n{dom}\n{log}"));
    let result: serde_json::Value = serde_json::from_str(&result).unwrap();
    println!("self test: {result}");
    assert!(
        result["workers"].as_u64() >= Some(1),
        "worker lanes: {result}"
    );
    assert!(result["keys"].as_u64() >= Some(2), "key lanes: {result}");
    assert!(
        result["reconciles"].as_u64() >= Some(2),
        "reconciles: {result}"
    );
    assert!(
        result["journeySteps"].as_u64() >= Some(3),
        "a key's journey: {result}"
    );
    assert!(
        result["flows"].as_u64() >= Some(1),
        "arrows from watch events: {result}"
    );
    assert_eq!(
        result["errors"],
        serde_json::json!([]),
        "script errors: {result}"
    );
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|line| {
            line.contains("CONSOLE") && (line.contains("ERROR") || line.contains("Uncaught"))
        })
        .collect();
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:#?}"
    );

    let screenshot = dir.join("run.png");
    let mut shot = browser(&chromium, &dir.join("profile-shot"));
    shot.arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url);
    run(shot, Duration::from_secs(120));
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real screenshot"
    );
}

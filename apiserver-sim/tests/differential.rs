//! The differential check: the same scripted requests sent to a real kube-apiserver 1.36.2
//! (envtest) and to apiserver-sim, in the same order, their answers compared after removing
//! what legitimately differs (uids, times, resourceVersions, generated-name suffixes,
//! continue tokens' contents, managedFields where a step is not about them).
//!
//! Each step names the sim behaviour it exercises and is either claimed (the sim's README
//! lists it as implemented: a difference fails the check) or a known difference (the
//! README's "Not implemented" table or "Known differences from kube-apiserver 1.36"): those
//! are printed, one line per field, and counted. The check ends with a summary line
//! `differential: N steps, M identical, K known differences, 0 claimed differences` and the
//! rows of the README's table of known differences.
//!
//! `DIFFERENTIAL_VERBOSE=1` prints both servers' normalized answers to every step.
//!
//! Skipped (one line saying what to set) where no control plane binaries are found, unless
//! `CLIENTGO_ENVTEST_REQUIRED=1`.

#[path = "differential/client.rs"]
mod client;
#[path = "differential/normalize.rs"]
mod normalize;
#[path = "differential/picks.rs"]
mod picks;
#[path = "differential/report.rs"]
mod report;
#[path = "differential/script.rs"]
mod script;
#[path = "differential/script_crd_status.rs"]
mod script_crd_status;
#[path = "differential/script_crds.rs"]
mod script_crds;
#[path = "differential/script_deletes.rs"]
mod script_deletes;
#[path = "differential/script_discovery.rs"]
mod script_discovery;
#[path = "differential/script_errors.rs"]
mod script_errors;
#[path = "differential/script_errors_wording.rs"]
mod script_errors_wording;
#[path = "differential/script_lists.rs"]
mod script_lists;
#[path = "differential/script_patches.rs"]
mod script_patches;
#[path = "differential/script_tables.rs"]
mod script_tables;
#[path = "differential/script_watches.rs"]
mod script_watches;
#[path = "differential/step.rs"]
mod step;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_envtest::ControlPlane;
use http::Method;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use client::Server;
use report::{Tally, differences};
use step::Ctx;

const SIM_TOKEN: &str = "differential-token";
/// The README section that lists the known differences, as this check prints them.
const README_SECTION: &str = "## Known differences from kube-apiserver 1.36";

/// Where the README's known-differences section differs from this run: its summary line,
/// rows this run produced that the README lacks, rows this run no longer produces.
fn readme_drift(summary: &str, rows: &[String]) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap_or_default();
    let section = readme
        .split(README_SECTION)
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default();
    let table: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| difference"))
        .collect();
    let mut drift = Vec::new();
    if !section.contains(&format!("`{summary}`")) {
        drift.push(format!("its summary is not `{summary}`"));
    }
    drift.extend(
        rows.iter()
            .filter(|row| !table.contains(&row.as_str()))
            .map(|row| format!("missing row {row}")),
    );
    drift.extend(
        table
            .iter()
            .filter(|line| !rows.iter().any(|r| r == *line))
            .map(|line| format!("row no longer observed {line}")),
    );
    drift
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_sim_answers_as_kube_apiserver_1_36_does() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let ns = cp.create_namespace("differential").expect("a namespace");
    let sim = ApiServerSim::start(SimConfig::default().with_tls().with_token(SIM_TOKEN))
        .await
        .expect("the sim starts");

    let real_ca = CertificateDer::from_pem_slice(cp.ca_pem().as_bytes()).expect("the CA");
    let real = Server::new("real", &cp.server_url(), real_ca.to_vec(), cp.token());
    let sim_ca = sim.ca_der().expect("a TLS sim has a CA").to_vec();
    let sim_server = Server::new("sim", sim.url(), sim_ca, SIM_TOKEN);
    // The sim gets the namespace the real server generated, so that messages naming it match.
    let created = sim_server
        .request(
            &Method::POST,
            "/api/v1/namespaces",
            Some("application/json"),
            Some(
                // As the real server's, generated from `differential-`.
                serde_json::json!({"metadata": {"name": ns, "generateName": "differential-"}})
                    .to_string()
                    .as_bytes(),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "the sim's namespace");
    // Pods need their service account on the real server (created by kube-controller-manager,
    // which this control plane does not run); the sim serves no service accounts.
    let account = real
        .request(
            &Method::POST,
            &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
            Some("application/json"),
            Some(br#"{"metadata": {"name": "default"}}"#),
        )
        .await;
    assert_eq!(account.status, 201, "the real server's service account");

    let pages = format!("{ns}-pages");
    let group = format!("{ns}.example.com");
    let vars = [
        ("ns", ns.as_str()),
        ("pages", pages.as_str()),
        ("group", group.as_str()),
    ];
    let mut real = Ctx::new(real, &vars);
    real.compact = Some(std::sync::Arc::new(move || {
        cp.compact().expect("etcd compacts")
    }));
    let mut sim_ctx = Ctx::new(sim_server, &vars);
    for ctx in [&mut real, &mut sim_ctx] {
        ctx.volatile.learn(&ns, "<ns>");
    }

    // DIFFERENTIAL_VERBOSE=1 prints both servers' (normalized) answers to every step.
    let verbose = std::env::var_os("DIFFERENTIAL_VERBOSE").is_some_and(|v| v == "1");
    let mut tally = Tally::default();
    let started = std::time::Instant::now();
    for (i, step) in script::steps().iter().enumerate() {
        let class = match step.claim {
            step::Claim::Claimed => "claimed".to_owned(),
            step::Claim::Known(why) => format!("known: {why}"),
        };
        println!(
            "step {:>3} {} [{}; {class}]: {}",
            i + 1,
            step.name,
            step.behaviour,
            step.describe(&real)
        );
        let (real_view, sim_view) = tokio::join!(real.run(step), sim_ctx.run(step));
        if verbose {
            println!("    real: {real_view}\n    sim:  {sim_view}");
        }
        let found = differences(step, &real_view, &sim_view);
        for d in &found {
            println!("    {}", d.line());
        }
        if let (step::Claim::Known(why), true) = (step.claim, found.is_empty()) {
            println!("    note: marked as a known difference ({why}) but answered alike");
        }
        tally.add(found);
    }

    println!("the script took {:.1} s", started.elapsed().as_secs_f64());
    let rows = tally.readme_rows();
    println!("\nThe table of README.md's \"{README_SECTION}\":");
    for row in &rows {
        println!("{row}");
    }
    for line in readme_drift(&tally.summary(), &rows) {
        println!("README.md is out of date: {line}");
    }
    println!("\n{}", tally.summary());
    let claimed: Vec<String> = tally
        .differences
        .iter()
        .filter(|d| d.known.is_none())
        .map(|d| d.line())
        .collect();
    assert!(
        claimed.is_empty(),
        "the sim differs from kube-apiserver 1.36.2 where it claims to behave as it:\n{}",
        claimed.join("\n")
    );
}

//! Loading-rule tests, ported from client-go `loader_test.go`.

use super::*;
use crate::config::testutil::write;
use std::path::Path;

/// Like client-go's `testConfigAlfa` … `testConfigDelta`: one user, cluster and context each.
fn simple(user: &str, token: &str, cluster: &str, server: &str, context: &str, ns: &str) -> String {
    format!(
        "users:\n- name: {user}\n  user: {{token: {token}}}\n\
         clusters:\n- name: {cluster}\n  cluster: {{server: '{server}'}}\n\
         contexts:\n- name: {context}\n  context: {{user: {user}, cluster: {cluster}, namespace: {ns}}}\n"
    )
}

fn alfa() -> String {
    simple(
        "red-user",
        "red-token",
        "cow-cluster",
        "http://cow.org:8080",
        "federal-context",
        "hammer-ns",
    )
}

/// client-go's `testConfigConflictAlfa`.
const CONFLICT_ALFA: &str = "users:\n\
- name: red-user\n  user: {token: a-different-red-token}\n\
- name: yellow-user\n  user: {token: yellow-token}\n\
clusters:\n\
- name: cow-cluster\n  cluster: {server: 'http://a-different-cow.org:8080', insecure-skip-tls-verify: true}\n\
- name: donkey-cluster\n  cluster: {server: 'http://donkey.org:8080', insecure-skip-tls-verify: true}\n\
current-context: federal-context\n";

fn token(loaded: &LoadedKubeconfig, user: &str) -> String {
    loaded.kubeconfig.users[user]
        .token
        .as_ref()
        .unwrap()
        .expose()
        .clone()
}

fn server(loaded: &LoadedKubeconfig, cluster: &str) -> String {
    loaded.kubeconfig.clusters[cluster].server.clone().unwrap()
}

#[test]
fn non_existent_explicit_file_is_an_error_naming_it() {
    let err = LoadingRules::explicit("bogus_file").load().unwrap_err();
    assert!(
        matches!(err, ConfigError::KubeconfigNotFound { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("bogus_file"), "{err}");
}

#[test]
fn missing_files_in_the_precedence_list_are_tolerated() {
    let loaded = LoadingRules::with_precedence(["bogus1", "bogus2", "bogus3"])
        .load()
        .unwrap();
    assert!(loaded.kubeconfig.is_empty());
    assert!(loaded.files.is_empty());
    assert_eq!(
        loaded.missing,
        [
            Path::new("bogus1"),
            Path::new("bogus2"),
            Path::new("bogus3")
        ]
    );
}

#[test]
fn unloadable_explicit_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "config", "bogus value");
    let err = LoadingRules::explicit(&path).load().unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn explicit_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = LoadingRules::explicit(dir.path()).load().unwrap_err();
    assert!(matches!(err, ConfigError::ReadKubeconfig { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
}

#[test]
fn unreadable_file_in_the_precedence_list_is_an_error_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good", alfa());
    let sub = dir.path().join("a-directory");
    std::fs::create_dir(&sub).unwrap();
    let err = LoadingRules::with_precedence([good, sub.clone()])
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains(&sub.display().to_string()),
        "{err}"
    );
}

#[test]
fn explicit_file_wins_and_its_current_context_too() {
    // TestConflictingCurrentContext and Example_noMergingOnExplicitPaths.
    let dir = tempfile::tempdir().unwrap();
    let explicit = write(
        dir.path(),
        "explicit",
        format!("{}current-context: any-context-value\n", alfa()),
    );
    let env_file = write(
        dir.path(),
        "env",
        CONFLICT_ALFA.replace("federal-context", "a-different-context"),
    );
    let rules = LoadingRules {
        explicit_path: Some(explicit.clone()),
        precedence: vec![env_file],
        warn_if_all_missing: false,
    };
    let loaded = rules.load().unwrap();
    assert_eq!(
        loaded.kubeconfig.current_context.as_deref(),
        Some("any-context-value")
    );
    assert_eq!(loaded.files, [explicit]);
    assert_eq!(token(&loaded, "red-user"), "red-token");
    assert!(
        !loaded.kubeconfig.users.contains_key("yellow-user"),
        "precedence list ignored"
    );
}

#[test]
fn first_file_to_define_a_name_wins_whole() {
    // Example_mergingSomeWithConflict.
    let dir = tempfile::tempdir().unwrap();
    let first = write(dir.path(), "first", alfa());
    let second = write(dir.path(), "second", CONFLICT_ALFA);
    let loaded = LoadingRules::with_precedence([&first, &second])
        .load()
        .unwrap();
    let kc = &loaded.kubeconfig;
    assert_eq!(server(&loaded, "cow-cluster"), "http://cow.org:8080");
    assert!(
        !kc.clusters["cow-cluster"].insecure_skip_tls_verify,
        "no field-level merge"
    );
    assert_eq!(
        kc.clusters["cow-cluster"].origin.as_deref(),
        Some(first.as_path())
    );
    assert_eq!(server(&loaded, "donkey-cluster"), "http://donkey.org:8080");
    assert!(kc.clusters["donkey-cluster"].insecure_skip_tls_verify);
    assert_eq!(token(&loaded, "red-user"), "red-token");
    assert_eq!(token(&loaded, "yellow-user"), "yellow-token");
    assert_eq!(
        kc.current_context.as_deref(),
        Some("federal-context"),
        "from the second file"
    );
    assert_eq!(
        kc.contexts["federal-context"].namespace.as_deref(),
        Some("hammer-ns")
    );
}

#[test]
fn first_current_context_wins() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", "current-context: from-a\n");
    let b = write(dir.path(), "b", "current-context: from-b\n");
    let loaded = LoadingRules::with_precedence([&b, &a]).load().unwrap();
    assert_eq!(loaded.kubeconfig.current_context.as_deref(), Some("from-b"));
}

#[test]
fn files_without_conflicts_all_merge() {
    // Example_mergingEverythingNoConflicts.
    let dir = tempfile::tempdir().unwrap();
    let files = [
        write(dir.path(), "alfa", alfa()),
        write(
            dir.path(),
            "bravo",
            simple(
                "black-user",
                "black-token",
                "pig-cluster",
                "http://pig.org:8080",
                "queen-anne-context",
                "saw-ns",
            ),
        ),
        write(
            dir.path(),
            "charlie",
            simple(
                "green-user",
                "green-token",
                "horse-cluster",
                "http://horse.org:8080",
                "shaker-context",
                "chisel-ns",
            ),
        ),
        write(
            dir.path(),
            "delta",
            simple(
                "blue-user",
                "blue-token",
                "chicken-cluster",
                "http://chicken.org:8080",
                "gothic-context",
                "plane-ns",
            ),
        ),
    ];
    let loaded = LoadingRules::with_precedence(files.clone()).load().unwrap();
    let kc = &loaded.kubeconfig;
    assert_eq!(
        kc.clusters.keys().collect::<Vec<_>>(),
        [
            "chicken-cluster",
            "cow-cluster",
            "horse-cluster",
            "pig-cluster"
        ]
    );
    assert_eq!(
        kc.users.keys().collect::<Vec<_>>(),
        ["black-user", "blue-user", "green-user", "red-user"]
    );
    assert_eq!(
        kc.contexts.keys().collect::<Vec<_>>(),
        [
            "federal-context",
            "gothic-context",
            "queen-anne-context",
            "shaker-context"
        ]
    );
    assert_eq!(kc.current_context, None);
    assert_eq!(loaded.files, files);
}

#[test]
fn relative_paths_resolve_against_each_files_directory() {
    // TestResolveRelativePaths.
    let dir1 = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let nested = dir2.path().join("nested");
    let file1 = write(dir1.path(), ".kubeconfig", "\
users:
- name: relative-user-1
  user: {client-certificate: relative/client/cert, client-key: ../relative/client/key, tokenFile: ./token}
- name: absolute-user-1
  user: {client-certificate: /absolute/client/cert, client-key: /absolute/client/key}
- name: relative-cmd-1
  user: {exec: {command: ../relative/client/cmd}}
- name: absolute-cmd-1
  user: {exec: {command: /absolute/client/cmd}}
- name: PATH-cmd-1
  user: {exec: {command: cmd}}
clusters:
- name: relative-server-1
  cluster: {certificate-authority: ../relative/ca}
- name: absolute-server-1
  cluster: {certificate-authority: /absolute/ca}
");
    let file2 = write(
        &nested,
        ".kubeconfig",
        "\
users:
- name: relative-user-2
  user: {client-certificate: relative/client/cert2, client-key: ../relative/client/key2}
clusters:
- name: relative-server-2
  cluster: {certificate-authority: ../relative/ca2}
",
    );
    let loaded = LoadingRules::with_precedence([&file1, &file2])
        .load()
        .unwrap();
    let kc = &loaded.kubeconfig;
    let d1 = std::path::absolute(dir1.path()).unwrap();
    let d2 = std::path::absolute(&nested).unwrap();
    let parent = |d: &Path| d.parent().unwrap().to_path_buf();

    let ca = |name: &str| kc.clusters[name].certificate_authority.clone().unwrap();
    assert_eq!(ca("relative-server-1"), parent(&d1).join("relative/ca"));
    assert_eq!(ca("relative-server-2"), parent(&d2).join("relative/ca2"));
    assert_eq!(ca("absolute-server-1"), Path::new("/absolute/ca"));

    let user = |name: &str| &kc.users[name];
    assert_eq!(
        user("relative-user-1").client_certificate.as_deref(),
        Some(d1.join("relative/client/cert").as_path())
    );
    assert_eq!(
        user("relative-user-1").client_key.as_deref(),
        Some(parent(&d1).join("relative/client/key").as_path())
    );
    assert_eq!(
        user("relative-user-1").token_file.as_deref(),
        Some(d1.join("token").as_path())
    );
    assert_eq!(
        user("relative-user-2").client_certificate.as_deref(),
        Some(d2.join("relative/client/cert2").as_path())
    );
    assert_eq!(
        user("absolute-user-1").client_key.as_deref(),
        Some(Path::new("/absolute/client/key"))
    );

    let cmd = |name: &str| user(name).exec.as_ref().unwrap().command.clone();
    assert_eq!(
        cmd("relative-cmd-1"),
        parent(&d1)
            .join("relative/client/cmd")
            .display()
            .to_string()
    );
    assert_eq!(cmd("absolute-cmd-1"), "/absolute/client/cmd");
    assert_eq!(
        cmd("PATH-cmd-1"),
        "cmd",
        "a bare command is looked up in PATH"
    );
}

#[test]
fn loading_precedence_from_the_environment() {
    // TestLoadingGetLoadingPrecedence and TestDeduplicate.
    let home = Path::new("/home/me");
    assert_eq!(
        LoadingRules::from_env_values(None, Some(home)).loading_precedence(),
        [Path::new("/home/me/.kube/config")]
    );
    assert_eq!(
        LoadingRules::from_env_values(Some("".as_ref()), Some(home)).loading_precedence(),
        [Path::new("/home/me/.kube/config")],
        "an empty KUBECONFIG is unset"
    );
    assert!(
        LoadingRules::from_env_values(None, None)
            .loading_precedence()
            .is_empty()
    );
    assert_eq!(
        LoadingRules::explicit("/explicit/kubeconfig").loading_precedence(),
        [Path::new("/explicit/kubeconfig")]
    );

    let single = LoadingRules::from_env_values(Some("/env/kubeconfig".as_ref()), Some(home));
    assert_eq!(single.loading_precedence(), [Path::new("/env/kubeconfig")]);
    assert!(single.warn_if_all_missing);

    let list = std::env::join_paths(["/a", "/b", "/c", "/b", "", "/e", "/a"]).unwrap();
    let rules = LoadingRules::from_env_values(Some(&list), Some(home));
    let expected: Vec<PathBuf> = ["/a", "/b", "/c", "/e"].iter().map(PathBuf::from).collect();
    assert_eq!(
        rules.loading_precedence(),
        expected,
        "split, deduplicated, empty entries dropped"
    );
}

#[test]
fn kubeconfig_list_skips_missing_files_and_merges_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", alfa());
    let missing = dir.path().join("missing");
    let b = write(dir.path(), "b", CONFLICT_ALFA);
    let list = std::env::join_paths([&a, &missing, &b]).unwrap();
    let loaded = LoadingRules::from_env_values(Some(&list), None)
        .load()
        .unwrap();
    assert_eq!(loaded.files, [a, b]);
    assert_eq!(loaded.missing, [missing]);
    assert_eq!(token(&loaded, "yellow-user"), "yellow-token");
}

#[test]
fn clean_folds_dot_and_dot_dot() {
    assert_eq!(clean(Path::new("/a/b/../c/./d")), Path::new("/a/c/d"));
    assert_eq!(clean(Path::new("/../a")), Path::new("/a"));
    assert_eq!(clean(Path::new("a/../../b")), Path::new("../b"));
}

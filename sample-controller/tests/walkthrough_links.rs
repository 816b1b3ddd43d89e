//! docs/walkthrough.md and the other pages of docs/ (testing.md, sharding.md,
//! flight-recorder.md, ...) point at code by line (`name` [path:N](../path#LN)); code moves,
//! so this test checks every such link of every docs/*.md page: the file exists, the text and
//! the anchor agree, and line N (or the next) still names what the link says it shows.

use std::path::Path;

/// The last identifier of a cited name: `Controller::run` -> `run`, `a.b()` -> `b`.
fn identifier(name: &str) -> &str {
    let last = name.rsplit("::").next().unwrap_or(name);
    let last = last.rsplit('.').next().unwrap_or(last);
    last.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or(last)
}

/// Every (cited name, path, line in the text, line in the anchor) of the document.
fn links(text: &str) -> Vec<(String, String, usize, usize)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("](../") {
        let Some(open) = text[..at].rfind('[') else {
            continue;
        };
        let Some((path, line)) = text[open + 1..at].rsplit_once(':') else {
            continue;
        };
        let target = &text[at + "](../".len()..];
        let Some(close) = target.find(')') else {
            continue;
        };
        let Some((target_path, anchor)) = target[..close].split_once("#L") else {
            continue;
        };
        assert_eq!(path, target_path, "link text and target differ: {path}");
        // The cited name: the last backticked span before the link, past an optional
        // parenthetical such as "(the fence)".
        let before = text[..open].trim_end();
        let before = match before.strip_suffix(')') {
            Some(rest) => rest.rsplit_once('(').map_or(rest, |(b, _)| b).trim_end(),
            None => before,
        };
        let Some(name) = before
            .strip_suffix('`')
            .and_then(|b| b.rsplit_once('`'))
            .map(|(_, name)| name)
        else {
            continue; // a link without a cited name
        };
        found.push((
            name.to_owned(),
            path.to_owned(),
            line.parse().expect("a line number"),
            anchor.parse().expect("an anchor line number"),
        ));
    }
    found
}

/// The pages of docs/ (every `*.md` file), sorted, as paths relative to the repository.
fn pages(root: &Path) -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    pages
}

#[test]
fn every_line_link_of_the_docs_names_what_it_points_at() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pages = pages(&root);
    for page in [
        "docs/walkthrough.md",
        "docs/testing.md",
        "docs/sharding.md",
        "docs/flight-recorder.md",
    ] {
        assert!(pages.iter().any(|p| p == page), "{page} is missing");
    }
    let mut drifted = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let links = links(&text);
        if page == "docs/walkthrough.md" {
            assert!(links.len() > 30, "{page}: found only {} links", links.len());
        }
        for (name, path, line, anchor) in &links {
            assert_eq!(
                line, anchor,
                "{page}: {name}: {path}:{line} links to #L{anchor}"
            );
            let source = std::fs::read_to_string(root.join(path))
                .unwrap_or_else(|e| panic!("{page}: {name}: {path}: {e}"));
            let lines: Vec<&str> = source.lines().collect();
            assert!(
                *line >= 1 && *line <= lines.len(),
                "{page}: {name}: {path}:{line} past the end"
            );
            if name.ends_with(".rs") {
                continue; // a whole file
            }
            let ident = identifier(name);
            let window = &lines[line - 1..(*line + 1).min(lines.len())];
            if !window.iter().any(|l| l.contains(ident)) {
                drifted.push(format!(
                    "{page}: `{name}` {path}:{line}: {}",
                    lines[line - 1].trim()
                ));
            }
        }
    }
    assert!(
        drifted.is_empty(),
        "docs links that no longer point at what they name:\n{}",
        drifted.join("\n")
    );
}

#[test]
fn the_link_parser_reads_names_paths_and_lines() {
    let text =
        "x `Controller::run` (the drain) [a/b.rs:12](../a/b.rs#L12); `f` [c.rs:3](../c.rs#L3)";
    assert_eq!(
        links(text),
        vec![
            ("Controller::run".into(), "a/b.rs".into(), 12, 12),
            ("f".into(), "c.rs".into(), 3, 3),
        ]
    );
    assert_eq!(identifier("Controller::run"), "run");
    assert_eq!(identifier("records::ensure"), "ensure");
}

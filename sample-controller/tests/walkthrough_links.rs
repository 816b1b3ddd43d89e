//! docs/walkthrough.md points at code by line (`name` [path:N](../path#LN)); code moves, so
//! this test checks every such link: the file exists, the text and the anchor agree, and
//! line N (or the next) still names what the link says it shows.

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

#[test]
fn every_line_link_of_the_walkthrough_names_what_it_points_at() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("docs/walkthrough.md")).unwrap();
    let links = links(&text);
    assert!(links.len() > 30, "found only {} links", links.len());
    let mut drifted = Vec::new();
    for (name, path, line, anchor) in &links {
        assert_eq!(line, anchor, "{name}: {path}:{line} links to #L{anchor}");
        let source = std::fs::read_to_string(root.join(path))
            .unwrap_or_else(|e| panic!("{name}: {path}: {e}"));
        let lines: Vec<&str> = source.lines().collect();
        assert!(
            *line >= 1 && *line <= lines.len(),
            "{name}: {path}:{line} past the end"
        );
        if name.ends_with(".rs") {
            continue; // a whole file
        }
        let ident = identifier(name);
        let window = &lines[line - 1..(*line + 1).min(lines.len())];
        if !window.iter().any(|l| l.contains(ident)) {
            drifted.push(format!(
                "`{name}` {path}:{line}: {}",
                lines[line - 1].trim()
            ));
        }
    }
    assert!(
        drifted.is_empty(),
        "walkthrough links that no longer point at what they name:\n{}",
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

//! Comparing the two servers' views of a step field by field, classifying each difference
//! as claimed (a failure) or known, and the printed report.

use serde_json::Value;

use super::step::{Claim, Step};

/// One field that differs.
pub struct Difference {
    pub step: &'static str,
    pub path: String,
    pub real: String,
    pub sim: String,
    /// `None`: claimed (a failure); else the known reason.
    pub known: Option<&'static str>,
}

impl Difference {
    /// One readable line: step, field, real vs sim.
    pub fn line(&self) -> String {
        let class = match self.known {
            None => "CLAIMED".to_owned(),
            Some(why) => format!("known: {why}"),
        };
        format!(
            "differs [{class}] {}: {}: real {} vs sim {}",
            self.step, self.path, self.real, self.sim
        )
    }
}

/// The differences between `real` and `sim` for `step`.
pub fn differences(step: &Step, real: &Value, sim: &Value) -> Vec<Difference> {
    let mut fields = Vec::new();
    diff("", Some(real), Some(sim), &mut fields);
    fields
        .into_iter()
        .map(|(path, real, sim)| {
            let known = match step.claim {
                Claim::Known(why) => Some(why),
                Claim::Claimed => step
                    .known_fields
                    .iter()
                    .find(|(pattern, _)| matches(pattern, &path))
                    .map(|(_, why)| *why),
            };
            Difference {
                step: step.name,
                path,
                real,
                sim,
                known,
            }
        })
        .collect()
}

fn diff(
    path: &str,
    real: Option<&Value>,
    sim: Option<&Value>,
    out: &mut Vec<(String, String, String)>,
) {
    match (real, sim) {
        (Some(Value::Object(r)), Some(Value::Object(s))) => {
            let mut keys: Vec<&String> = r.keys().chain(s.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                diff(&format!("{path}/{key}"), r.get(key), s.get(key), out);
            }
        }
        (Some(Value::Array(r)), Some(Value::Array(s))) => {
            for i in 0..r.len().max(s.len()) {
                diff(&format!("{path}/{i}"), r.get(i), s.get(i), out);
            }
        }
        (r, s) if r == s => {}
        (r, s) => out.push((path.to_owned(), show(r), show(s))),
    }
}

fn show(v: Option<&Value>) -> String {
    let text = match v {
        None => return "<absent>".to_owned(),
        Some(v) => v.to_string(),
    };
    const MAX: usize = 240;
    if text.len() > MAX {
        let cut = (0..=MAX)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}...", &text[..cut])
    } else {
        text
    }
}

/// `pattern` (segments, `*` for any one) is a prefix of `path`.
fn matches(pattern: &str, path: &str) -> bool {
    let mut path_segments = path.split('/');
    pattern
        .split('/')
        .all(|p| path_segments.next().is_some_and(|s| p == "*" || p == s))
}

/// The whole run's tally.
#[derive(Default)]
pub struct Tally {
    pub steps: usize,
    pub identical: usize,
    pub known: usize,
    pub claimed: usize,
    /// Every difference, in step order.
    pub differences: Vec<Difference>,
}

impl Tally {
    pub fn add(&mut self, differences: Vec<Difference>) {
        self.steps += 1;
        if differences.is_empty() {
            self.identical += 1;
        }
        for d in differences {
            if d.known.is_some() {
                self.known += 1;
            } else {
                self.claimed += 1;
            }
            self.differences.push(d);
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "differential: {} steps, {} identical, {} known differences, {} claimed differences",
            self.steps, self.identical, self.known, self.claimed
        )
    }

    /// The known differences as the rows of the README's table: one per reason, with the
    /// steps that show it and its first difference as the example.
    pub fn readme_rows(&self) -> Vec<String> {
        let mut reasons: Vec<&str> = Vec::new();
        for why in self.differences.iter().filter_map(|d| d.known) {
            if !reasons.contains(&why) {
                reasons.push(why);
            }
        }
        reasons
            .iter()
            .map(|why| {
                let of_reason: Vec<&Difference> = self
                    .differences
                    .iter()
                    .filter(|d| d.known == Some(*why))
                    .collect();
                let mut steps: Vec<&str> = of_reason.iter().map(|d| d.step).collect();
                steps.dedup();
                let steps = steps
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                // The telling difference: the status code, the content type, an event's
                // type, the body's kind, else the first one.
                let telling = [
                    |p: &str| p == "/code",
                    |p: &str| p == "/contentType",
                    |p: &str| p.starts_with("/events/") && p.ends_with("/type"),
                    |p: &str| p == "/body/kind",
                ];
                let first = telling
                    .iter()
                    .find_map(|t| of_reason.iter().find(|d| t(&d.path)))
                    .unwrap_or(&of_reason[0]);
                let (real, sim) = cells(&first.real, &first.sim);
                let example = format!("`{}` `{}`: {real} vs {sim}", first.step, first.path);
                format!("| {why} | {steps} | {example} |")
            })
            .collect()
    }
}

/// Two values for markdown table cells: in backticks, no `|`, a long common beginning cut
/// to `...`, then at most 80 characters each.
fn cells(real: &str, sim: &str) -> (String, String) {
    const MAX: usize = 80;
    let common = real
        .char_indices()
        .zip(sim.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or(real.len().min(sim.len()));
    let skip = if common > 40 { common - 20 } else { 0 };
    let cell = |value: &str| {
        let skip = (0..=skip)
            .rev()
            .find(|&i| value.is_char_boundary(i))
            .unwrap_or(0);
        let mut text = value[skip..].replace('|', "/").replace('`', "'");
        if text.len() > MAX {
            let cut = (0..=MAX)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            text.truncate(cut);
            text.push_str("...");
        }
        let dots = if skip > 0 { "..." } else { "" };
        format!("`{dots}{text}`")
    };
    (cell(real), cell(sim))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_prefixes_segment_by_segment() {
        assert!(matches("/body/items/*/kind", "/body/items/3/kind"));
        assert!(matches("/body/metadata", "/body/metadata/labels/a"));
        assert!(!matches("/body/items/*/kind", "/body/items/3/apiVersion"));
        assert!(!matches("/body/metadata/labels", "/body/metadata"));
    }
}

//! The timeline as one self-contained HTML page.
//!
//! The page embeds the timeline as JSON and the script and style that draw it
//! (`html/timeline.js`, `html/timeline.css`, compiled in): no external script, font or
//! request, so the file can be mailed, attached to an issue or opened offline. It draws lanes
//! per worker (reconciles coloured by outcome, their requests as ticks), the queue depth
//! over time, and a lane per key (watch events as dots, objects of a list as rings, adds as
//! ticks, coalesced adds as orange diamonds, time in line as grey bars, backoffs hatched red,
//! reconciles); hovering shows a label and the arrows from the key's watch events (and
//! listed objects) to its reconciles, clicking pins the key's whole journey in the side
//! panel, and so does `#key=NAMESPACE/NAME` at the end of the page's address (with
//! `&at=SECONDS`, the journey scrolled to that time).

use serde_json::Value as Json;

use crate::timeline::{Step, Timeline};

const SCRIPT: &str = include_str!("html/timeline.js");
const STYLE: &str = include_str!("html/timeline.css");

/// Adds each step's label to its JSON form.
fn label_steps(json: &mut Json, steps: &[Step]) {
    if let Some(array) = json.as_array_mut() {
        for (value, step) in array.iter_mut().zip(steps) {
            value["label"] = Json::String(step.kind.label());
        }
    }
}

/// The timeline's JSON with labels, safe inside a `<script>` element.
fn data(timeline: &Timeline) -> String {
    let mut json = serde_json::to_value(timeline).unwrap_or(Json::Null);
    for (index, journey) in timeline.journeys.iter().enumerate() {
        label_steps(&mut json["journeys"][index]["steps"], &journey.steps);
    }
    for (lane, worker) in timeline.workers.iter().enumerate() {
        for (index, slice) in worker.slices.iter().enumerate() {
            label_steps(
                &mut json["workers"][lane]["slices"][index]["requests"],
                &slice.requests,
            );
        }
    }
    label_steps(&mut json["client"], &timeline.client);
    label_steps(&mut json["other_watches"], &timeline.other_watches);
    // `<` only occurs inside JSON strings, where `\u003c` means the same: no `</script>`
    // in a key can end the element early.
    json.to_string().replace('<', "\\u003c")
}

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Writes the page.
pub(crate) fn write(timeline: &Timeline, title: &str, dropped: u64) -> String {
    let title = escape(title);
    let reconciles: usize = timeline.workers.iter().map(|w| w.slices.len()).sum();
    let coalesced: usize = timeline.journeys.iter().map(|j| j.coalesced).sum();
    let backoffs: usize = timeline.journeys.iter().map(|j| j.backoffs).sum();
    let dropped = if dropped > 0 {
        format!(", {dropped} older events dropped")
    } else {
        String::new()
    };
    let summary = format!(
        "{} keys, {reconciles} reconciles on {} workers, {coalesced} coalesced adds, \
         {backoffs} backoffs, {} recorded{dropped}",
        timeline.journeys.len(),
        timeline.workers.len(),
        crate::timeline::fmt_us(crate::timeline::micros(timeline.end)),
    );
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'">
<title>{title}</title>
<style>
{STYLE}</style>
</head>
<body>
<h1>{title}</h1>
<div id="summary">{summary}</div>
<div id="legend"><span><i style="background:#3d9a50"></i>reconcile ok</span><span><i style="background:#d64545"></i>error</span><span><i style="background:#1f5fbf;border-radius:6px"></i>watch event</span><span><i style="border:1.5px solid #1f5fbf;border-radius:6px;box-sizing:border-box"></i>listed at start</span><span><i style="background:#c9d3dd"></i>waiting in line</span><span><i style="background:#f28c28"></i>coalesced add</span><span><i style="background:repeating-linear-gradient(45deg,#d64545 0 2px,#fbe3e3 2px 5px)"></i>backoff</span><span><i style="background:#6b4fbb;height:2px"></i>queue depth</span></div>
<div id="wrap"><div id="chart"></div><div id="side"><div id="journey"><p>Hover a bar or a marker; click to pin a key's journey here.</p></div></div></div>
<div id="tip"></div>
<pre id="selftest"></pre>
<script type="application/json" id="data">{data}</script>
<script>
{SCRIPT}</script>
</body>
</html>
"#,
        data = data(timeline),
    )
}

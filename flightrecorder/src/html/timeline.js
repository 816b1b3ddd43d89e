// Draws the flight recorder's timeline from the JSON embedded in the page. No libraries,
// no network: SVG built by hand. Hover a bar or marker for its label; click one to pin the
// key's journey in the side panel (#key=NAMESPACE/NAME&at=SECONDS pins one when the page
// opens).
// Opened with #selftest, it checks what it drew and writes the result into
// <pre id="selftest"> (for the headless browser test).
"use strict";
const errors = [];
window.addEventListener("error", (e) => errors.push(String(e.message)));
const consoleError = console.error.bind(console);
console.error = (...args) => { errors.push(args.map(String).join(" ")); consoleError(...args); };

const NS = "http://www.w3.org/2000/svg";
const data = JSON.parse(document.getElementById("data").textContent);
const LABEL_W = 190, LANE_H = 18, GAP = 6, DEPTH_H = 70, MAX_KEYS = 300;

function el(name, attrs, parent, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}
function fmt(us) {
  if (us >= 1e6) return (us / 1e6).toFixed(2) + " s";
  if (us >= 1e3) return (us / 1e3).toFixed(1) + " ms";
  return Math.round(us) + " µs";
}

const chart = document.getElementById("chart");
const width = Math.max(900, chart.clientWidth || 1100);
const plotW = width - LABEL_W - 10;
const end = Math.max(data.end_us, 1);
const x = (us) => LABEL_W + (Math.min(us, end) / end) * plotW;
const w = (us) => Math.max((us / end) * plotW, 1.5);
const keys = data.journeys.slice(0, MAX_KEYS);
const height = 40 + data.workers.length * (LANE_H + GAP) + 30 + DEPTH_H + 30
  + keys.length * (LANE_H + 2) + 20;
const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, id: "svg" }, chart);
const defs = el("defs", {}, svg);
const hatch = el("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse",
  patternTransform: "rotate(45)" }, defs);
el("rect", { width: 6, height: 6, fill: "#fbe3e3" }, hatch);
el("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#d64545", "stroke-width": 2 }, hatch);
const arrow = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
  markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" }, defs);
el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#1f5fbf" }, arrow);

// Time axis.
for (let i = 0; i <= 10; i++) {
  const t = (end * i) / 10, px = x(t);
  el("line", { x1: px, y1: 14, x2: px, y2: height, class: "grid" }, svg);
  el("text", { x: px + 2, y: 12 }, svg, fmt(t));
}

const tip = document.getElementById("tip");
function hover(node, label, journey) {
  el("title", {}, node, label);
  node.addEventListener("mousemove", (e) => {
    tip.textContent = label;
    tip.style.display = "block";
    tip.style.left = e.clientX + 12 + "px";
    tip.style.top = e.clientY + 12 + "px";
    if (journey !== undefined) highlight(journey);
  });
  node.addEventListener("mouseleave", () => { tip.style.display = "none"; highlight(pinned); });
  if (journey !== undefined) {
    node.addEventListener("click", () => { pinned = journey; show(journey); highlight(journey); });
  }
}

let y = 30;
el("text", { x: 4, y: y - 4, class: "section" }, svg, "Workers");
const workerY = [];
const reconcileNodes = [];
data.workers.forEach((lane, i) => {
  const g = el("g", { class: "lane worker", "data-worker": lane.name }, svg);
  el("rect", { x: 0, y, width, height: LANE_H, class: "bg" }, g);
  el("text", { x: 4, y: y + 13 }, g, "worker " + lane.name);
  workerY[i] = y;
  for (const s of lane.slices) {
    const outcome = s.outcome || "open";
    const r = el("rect", { x: x(s.at_us), y: y + 1, width: w(s.dur_us), height: LANE_H - 2,
      class: `reconcile ${outcome}`, "data-journey": s.journey }, g);
    reconcileNodes.push(r);
    const writes = s.requests.map((q) => "\n  " + q.label).join("");
    hover(r, `reconcile ${s.key} on worker ${lane.name}: ${outcome || "running"}, ${fmt(s.dur_us)}${writes}`, s.journey);
    for (const q of s.requests) {
      el("rect", { x: x(q.at_us), y: y + LANE_H - 5, width: w(q.dur_us || 0), height: 3,
        class: "request" }, g);
    }
  }
  y += LANE_H + GAP;
});

y += 20;
el("text", { x: 4, y: y - 4, class: "section" }, svg, "Queue depth");
const maxDepth = Math.max(1, ...data.depth.flatMap(([, pts]) => pts.map((p) => p[1])));
const depthG = el("g", { class: "depth" }, svg);
el("text", { x: 4, y: y + 12 }, depthG, "max " + maxDepth);
for (const [queue, pts] of data.depth) {
  let d = "", last = 0;
  for (const [t, v] of pts) {
    const px = x(t), py = y + DEPTH_H - (v / maxDepth) * DEPTH_H;
    d += d ? ` L ${px} ${y + DEPTH_H - (last / maxDepth) * DEPTH_H} L ${px} ${py}` : `M ${px} ${py}`;
    last = v;
  }
  if (d) {
    d += ` L ${x(end)} ${y + DEPTH_H - (last / maxDepth) * DEPTH_H}`;
    hover(el("path", { d, class: "depthline" }, depthG), `depth of ${queue || "(unnamed queue)"}`);
  }
}
y += DEPTH_H + 30;

el("text", { x: 4, y: y - 4, class: "section" }, svg,
  `Keys (${data.journeys.length}${data.journeys.length > MAX_KEYS ? ", first " + MAX_KEYS + " shown" : ""})`);
const keyY = [];
const flowG = el("g", {}, null);
keys.forEach((j, i) => {
  const g = el("g", { class: "lane key", "data-journey": i }, svg);
  el("rect", { x: 0, y, width, height: LANE_H, class: "bg" }, g);
  const name = j.key.length > 28 ? "…" + j.key.slice(-27) : j.key;
  hover(el("text", { x: 4, y: y + 13 }, g, name), `${j.queue}: ${j.key}`, i);
  keyY[i] = y;
  let since = null;
  const mid = y + LANE_H / 2;
  for (const s of j.steps) {
    if (s.kind === "add" && s.outcome !== "deferred" && since === null) since = s.at_us;
    if (s.kind === "get" && since !== null) {
      hover(el("rect", { x: x(since), y: y + 4, width: w(s.at_us - since), height: LANE_H - 8,
        class: "waiting" }, g), `waiting ${fmt(s.at_us - since)}`, i);
      since = null;
    }
  }
  for (const s of j.steps) {
    let node = null;
    switch (s.kind) {
      case "watch":
        node = el("circle", { cx: x(s.at_us), cy: mid, r: 3.5, class: "watch" }, g); break;
      case "listed":
        node = el("circle", { cx: x(s.at_us), cy: mid, r: 3, class: "listed" }, g); break;
      case "add":
        node = s.outcome === "coalesced"
          ? el("path", { d: `M ${x(s.at_us)} ${mid - 5} l 5 5 l -5 5 l -5 -5 z`, class: "coalesced" }, g)
          : el("line", { x1: x(s.at_us), y1: y + 2, x2: x(s.at_us), y2: y + LANE_H - 2, class: "add" }, g);
        break;
      case "backoff": case "add_after":
        node = el("rect", { x: x(s.at_us), y: y + 3, width: w(s.delay_us), height: LANE_H - 6,
          class: "backoff" }, g); break;
      case "reconcile":
        node = el("rect", { x: x(s.at_us), y: y + 2, width: w(s.dur_us || 0), height: LANE_H - 4,
          class: `reconcile ${s.outcome || "open"}`, "data-journey": i }, g); break;
      default: break;
    }
    if (node) hover(node, s.label, i);
  }
  y += LANE_H + 2;
});
svg.appendChild(flowG);

function highlight(journey) {
  document.querySelectorAll(".hl").forEach((n) => n.classList.remove("hl"));
  flowG.replaceChildren();
  if (journey === null || journey === undefined) return;
  document.querySelectorAll(`[data-journey="${journey}"]`).forEach((n) => n.classList.add("hl"));
  for (const f of data.flows) {
    if (f.journey !== journey || keyY[journey] === undefined) continue;
    const x1 = x(f.from_us), y1 = keyY[journey] + LANE_H / 2;
    const x2 = x(f.to_us), y2 = workerY[f.worker] + LANE_H / 2;
    el("path", { d: `M ${x1} ${y1} C ${x1} ${(y1 + y2) / 2}, ${x2} ${(y1 + y2) / 2}, ${x2} ${y2}`,
      class: "flow" }, flowG);
  }
}

let pinned = null;
function show(journey) {
  const j = data.journeys[journey];
  const panel = document.getElementById("journey");
  panel.replaceChildren();
  const h = document.createElement("h2");
  h.style.fontSize = "14px";
  h.textContent = `${j.key}` + (j.queue ? ` (queue ${j.queue})` : "");
  panel.appendChild(h);
  const p = document.createElement("p");
  p.textContent = `${j.steps.length} steps, ${j.coalesced} coalesced adds, ${j.backoffs} backoffs`;
  panel.appendChild(p);
  const ol = document.createElement("ol");
  for (const s of j.steps) {
    const li = document.createElement("li");
    li.className = s.kind + (s.outcome === "coalesced" ? " coalesced" : "");
    const t = document.createElement("span");
    t.className = "t";
    t.textContent = fmt(s.at_us);
    li.appendChild(t);
    li.appendChild(document.createTextNode(s.label));
    ol.appendChild(li);
  }
  panel.appendChild(ol);
}

// #key=NAMESPACE/NAME opens the page with that key's journey pinned (a link to one key);
// &at=SECONDS scrolls the journey to its first step at or after that time.
const keyHash = location.hash.match(/^#key=([^&]+)(?:&at=([0-9.]+))?$/);
if (keyHash) {
  const journey = keys.findIndex((j) => j.key === decodeURIComponent(keyHash[1]));
  if (journey >= 0) {
    pinned = journey; show(journey); highlight(journey);
    const at = Number(keyHash[2] || 0) * 1e6;
    const first = data.journeys[journey].steps.findIndex((s) => s.at_us >= at);
    const side = document.getElementById("side");
    const item = document.querySelectorAll("#journey li")[first];
    if (at > 0 && item) side.scrollTop = item.offsetTop - side.offsetTop;
  }
}

if (location.hash === "#selftest") {
  const target = reconcileNodes[0] || document.querySelector(".lane.key text");
  if (target) target.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  const result = {
    workers: document.querySelectorAll(".lane.worker").length,
    keys: document.querySelectorAll(".lane.key").length,
    reconciles: document.querySelectorAll(".lane.worker .reconcile").length,
    journeySteps: document.querySelectorAll("#journey li").length,
    highlighted: document.querySelectorAll(".hl").length,
    flows: flowG.childElementCount,
    errors,
  };
  document.getElementById("selftest").textContent = "SELFTEST " + JSON.stringify(result);
  window.scrollTo(0, 0);
}

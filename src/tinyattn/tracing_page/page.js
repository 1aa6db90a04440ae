// The page of a tinyattn trace. TRACE (written in by tinyattn.tracing_page) holds the ops, the leaf
// tensors, the tensors' values, the source lines and the attention weights; dagre lays the graph out
// and this script draws it in SVG, fills the details panel and steps through the ops.
"use strict";

const D = TRACE;
const SVG_NS = "http://www.w3.org/2000/svg";
const MONO = 'ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace';
const opOf = new Map(D.ops.map(o => [o.step, o]));
const leafOf = new Map(D.leaves.map(l => [l.id, l]));
const order = D.ops.map(o => o.step); // the order the ops ran in: the forward pass, then the backward
const forwardOps = D.ops.filter(o => o.phase === "forward");
const heatOf = new Map(D.attention.map(h => [h.step, h]));

// --- small helpers ---

function esc(text) {
  return String(text).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function shape(s) {
  if (s === null || s === undefined) return "None";
  return "(" + s.join(", ") + (s.length === 1 ? "," : "") + ")";
}
function fmt(v, dtype) {
  if (dtype === "bool") return v ? "True" : "False";
  if (typeof v !== "number") return String(v);
  if (Number.isNaN(v)) return "nan";
  if (v === Infinity) return "inf";
  if (v === -Infinity) return "-inf";
  if (dtype && !dtype.startsWith("float")) return String(v);
  if (v === 0) return (1 / v < 0 ? "-" : "") + "0.0000";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(3);
  return v.toFixed(4);
}
function bytes(n) {
  if (n < 1024) return n + " B";
  for (const unit of ["KiB", "MiB", "GiB"]) { n /= 1024; if (n < 1024 || unit === "GiB") return n.toFixed(1) + " " + unit; }
}
function basename(path) { return path.split("/").pop(); }
function where(op) {
  if (op.file < 0) return "";
  return basename(D.files[op.file].path) + ":" + op.line;
}
function parentModule(m) { const i = m.lastIndexOf("."); return i < 0 ? null : m.slice(0, i); }
function depth(m) { return m.split(".").length - 1; }
function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
const measure = (() => {
  const ctx = document.createElement("canvas").getContext("2d");
  return (text, px, bold) => { ctx.font = (bold ? "bold " : "") + px + "px " + MONO; return ctx.measureText(text).width; };
})();

// --- the modules: groups that fold ---

const modules = new Set();
for (const o of D.ops) if (o.module) modules.add(o.module);
for (const l of D.leaves) if (l.module) modules.add(l.module);
for (const m of Array.from(modules)) { let p = parentModule(m); while (p) { modules.add(p); p = parentModule(p); } }
const folded = new Set();
if (forwardOps.length > 40) { // a larger model starts folded below its top module
  for (const m of modules) if (depth(m) >= 1) folded.add(m);
}
function foldedAncestor(module) { // the outermost folded module holding `module`, or null
  if (!module) return null;
  const chain = [];
  for (let m = module; m; m = parentModule(m)) chain.unshift(m);
  return chain.find(m => folded.has(m)) || null;
}
function shownAs(id) { // the id of the box that shows an op or a leaf now (its own, or its folded group's)
  let module = "";
  if (id[0] === "f" || id[0] === "b") { const o = opOf.get(+id.slice(1)); module = o ? o.module : ""; }
  else if (leafOf.has(id)) module = leafOf.get(id).module;
  const f = foldedAncestor(module);
  return f ? "g:" + f : id;
}

// --- the graph ---

let zoom = 1;
const LABEL = 18; // the height of a cluster's name above its boxes
let boxes = new Map(); // shown id -> {g, x, y, w, h}
let chips = new Map(); // backward step -> chip <g>
let edgesInto = new Map(); // forward step -> [edge <g>]
let edgeElements = [];

function opLines(o) {
  const marks = (o.inplace ? " in-place" : "") + (o.view ? " view" : "");
  let shapes = "\u2192 " + o.out.filter(s => s !== null).map(shape).join(", ");
  if (shapes.length > 44) shapes = shapes.slice(0, 43) + "\u2026";
  return {name: "#" + o.step + " " + o.op, marks, shapes: shapes + "  " + o.dtype, src: where(o)};
}

let fitted = false;

function draw() {
  const g = new dagre.graphlib.Graph({compound: true});
  g.setGraph({rankdir: "TB", nodesep: 18, ranksep: 40, edgesep: 8, marginx: 16, marginy: 16});
  g.setDefaultEdgeLabel(() => ({}));
  const shown = new Map(); // id -> what the box shows
  const groupCounts = new Map();
  const clusterOf = new Map(); // shown id -> module of its enclosing cluster
  function addCluster(module) {
    if (!module || g.hasNode("c:" + module)) return;
    g.setNode("c:" + module, {module});
    const p = parentModule(module);
    if (p && modules.has(p) && !folded.has(p)) { addCluster(p); g.setParent("c:" + module, "c:" + p); }
  }
  function place(id, module) { // put a box into its module's cluster (or its folded group)
    const f = foldedAncestor(module);
    if (f) {
      const gid = "g:" + f;
      const count = groupCounts.get(gid) || {ops: 0, leaves: 0};
      if (id[0] === "f") count.ops += 1; else count.leaves += 1;
      groupCounts.set(gid, count);
      if (!shown.has(gid)) { shown.set(gid, {kind: "group", module: f}); clusterOf.set(gid, parentModule(f)); }
      return;
    }
    clusterOf.set(id, module);
  }
  for (const o of D.ops) {
    if (o.phase === "forward") { shown.set("f" + o.step, {kind: "op", op: o}); place("f" + o.step, o.module); }
    else if (o.fwd === null) { shown.set("b" + o.step, {kind: "orphan", op: o}); place("b" + o.step, ""); }
  }
  for (const l of D.leaves) { shown.set(l.id, {kind: "leaf", leaf: l}); place(l.id, l.module); }
  for (const [id, what] of shown) {
    if (foldedAncestor(what.op ? what.op.module : what.leaf ? what.leaf.module : "") && what.kind !== "group") continue;
    let w, h;
    if (what.kind === "op" || what.kind === "orphan") {
      const t = opLines(what.op);
      w = Math.max(measure(t.name, 12, true) + measure(t.marks, 10, true), measure(t.shapes, 11), measure(t.src, 10)) + 22;
      h = 56 + (what.kind === "op" && what.op.bwd !== null ? 22 : 0);
    } else if (what.kind === "leaf") {
      w = Math.max(measure(what.leaf.name, 12, true), measure(shape(what.leaf.shape), 11)) + 30;
      h = 40;
    } else {
      const c = groupCounts.get(id);
      what.text = c.ops + " op" + (c.ops === 1 ? "" : "s") + (c.leaves ? ", " + c.leaves + " tensor" + (c.leaves === 1 ? "" : "s") : "");
      w = Math.max(measure("\u25B8 " + what.module, 12, true), measure(what.text, 11)) + 24;
      h = 42;
    }
    g.setNode(id, {width: Math.ceil(w), height: h});
    const module = clusterOf.get(id);
    if (module) { addCluster(module); g.setParent(id, "c:" + module); }
  }
  const edgeKeys = new Set();
  const edgeOps = new Map(); // "a->b" -> [forward steps whose inputs run along it]
  for (const o of forwardOps) {
    const to = shownAs("f" + o.step);
    o.parents.forEach((p, j) => {
      if (p === null) return;
      const from = shownAs(p);
      if (from === to || !g.hasNode(from) || !g.hasNode(to)) return;
      const key = from + "->" + to;
      if (!edgeKeys.has(key)) { edgeKeys.add(key); g.setEdge(from, to); edgeOps.set(key, []); }
      edgeOps.get(key).push([o.step, j]);
    });
  }
  dagre.layout(g);

  const host = document.getElementById("graph");
  host.innerHTML = "";
  const size = g.graph();
  // a cluster's name sits above its top row, in a strip LABEL high that dagre does not leave
  const width = size.width, height = size.height + LABEL;
  const svg = el("svg", {viewBox: `0 ${-LABEL} ${width} ${height}`, width: width * zoom, height: height * zoom,
                         "data-width": width, "data-height": height});
  const defs = el("defs", {}, svg);
  for (const [name, color] of [["arrow", "#98a3b5"], ["arrow-grad", "#c2410c"], ["arrow-active", "#1f4e96"]]) {
    const m = el("marker", {id: name, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"}, defs);
    el("path", {d: "M0,0 L10,5 L0,10 z", fill: color}, m);
  }
  // clusters, outermost first
  const clusters = g.nodes().filter(id => id.startsWith("c:")).sort((a, b) => depth(a) - depth(b));
  const clusterLayer = el("g", {class: "clusters"}, svg);
  for (const id of clusters) {
    const n = g.node(id), module = n.module;
    const c = el("g", {class: "cluster depth" + Math.min(depth(module), 2), "data-module": module}, clusterLayer);
    el("rect", {x: n.x - n.width / 2, y: n.y - n.height / 2 - LABEL, width: n.width, height: n.height + LABEL}, c);
    const label = el("text", {x: n.x - n.width / 2 + 8, y: n.y - n.height / 2 - LABEL + 13}, c);
    label.textContent = "\u25BE " + module;
    label.appendChild(el("title")).textContent = "fold " + module;
    label.addEventListener("click", e => { e.stopPropagation(); folded.add(module); draw(); refresh(); });
  }
  // edges
  const edgeLayer = el("g", {class: "edges"}, svg);
  edgesInto = new Map(); edgeElements = [];
  for (const e of g.edges()) {
    const pts = g.edge(e).points;
    let d = `M${pts[0].x},${pts[0].y}`;
    for (let i = 1; i < pts.length; i++) d += ` L${pts[i].x},${pts[i].y}`;
    const eg = el("g", {class: "edge", "data-from": e.v, "data-to": e.w}, edgeLayer);
    el("path", {d, "marker-end": "url(#arrow)"}, eg);
    edgeElements.push(eg);
    for (const [step, j] of edgeOps.get(e.v + "->" + e.w)) {
      if (!edgesInto.has(step)) edgesInto.set(step, []);
      edgesInto.get(step).push([eg, j]);
    }
  }
  // boxes
  const nodeLayer = el("g", {class: "nodes"}, svg);
  boxes = new Map(); chips = new Map();
  for (const id of g.nodes()) {
    if (id.startsWith("c:")) continue;
    const n = g.node(id), what = shown.get(id);
    const x = n.x - n.width / 2, y = n.y - n.height / 2;
    const box = el("g", {class: "node", transform: `translate(${x},${y})`, "data-id": id}, nodeLayer);
    boxes.set(id, {g: box, x: n.x, y: n.y, w: n.width, h: n.height});
    const text = (cls, tx, ty, content) => { const t = el("text", {class: cls, x: tx, y: ty}, box); t.textContent = content; return t; };
    if (what.kind === "op" || what.kind === "orphan") {
      const o = what.op, t = opLines(o);
      box.classList.add(what.kind === "op" ? "op" : "orphan");
      box.classList.add("op-node");
      box.setAttribute("data-step", o.step);
      el("rect", {class: "box", width: n.width, height: 56}, box);
      const name = text("name", 10, 17, t.name);
      if (o.inplace) text("mark inplace", 14 + measure(t.name, 12, true), 16, "in place");
      if (o.view) text("mark view", 14 + measure(t.name, 12, true), 16, "view");
      text("shapes", 10, 33, t.shapes);
      text("src", 10, 48, t.src);
      name.appendChild(el("title")).textContent = (o.module ? o.module + ": " : "") + o.fn;
      const mark = el("g", {class: "gradmark", transform: `translate(${n.width - 10},10)`}, box);
      el("circle", {r: 8}, mark);
      const gt = el("text", {x: -4, y: 4}, mark); gt.textContent = "\u2207";
      box.addEventListener("click", () => select(o.step));
      if (what.kind === "op" && o.bwd !== null) {
        const b = opOf.get(o.bwd);
        const chip = el("g", {class: "chip", transform: "translate(6,60)", "data-step": b.step}, box);
        el("rect", {width: n.width - 12, height: 16}, chip);
        const ct = el("text", {x: 6, y: 12}, chip);
        ct.textContent = "\u2207 #" + b.step + " backward";
        chip.addEventListener("click", ev => { ev.stopPropagation(); select(b.step); });
        chips.set(b.step, chip);
      }
    } else if (what.kind === "leaf") {
      const l = what.leaf;
      box.classList.add("leaf");
      if (l.param) box.classList.add("param");
      box.setAttribute("data-leaf", l.id);
      el("rect", {class: "box", width: n.width, height: n.height}, box);
      text("name", 14, 17, l.name);
      text("shapes", 14, 32, shape(l.shape));
      const mark = el("g", {class: "gradmark", transform: `translate(${n.width - 10},10)`}, box);
      el("circle", {r: 8}, mark);
      const gt = el("text", {x: -4, y: 4}, mark); gt.textContent = "\u2207";
      box.addEventListener("click", () => selectLeaf(l.id));
    } else {
      box.classList.add("group");
      box.setAttribute("data-module", what.module);
      el("rect", {class: "box", width: n.width, height: n.height}, box);
      text("name", 10, 17, "\u25B8 " + what.module);
      text("shapes", 10, 33, what.text);
      box.appendChild(el("title")).textContent = "unfold " + what.module;
      box.addEventListener("click", () => { folded.delete(what.module); draw(); refresh(); });
    }
  }
  host.appendChild(svg);
  if (!fitted) { // the first drawing: zoomed out to the pane's width where that keeps the text readable
    fitted = true;
    const fit = (host.clientWidth - 16) / width;
    if (fit < 1) setZoom(Math.max(0.6, fit));
  }
}

function setZoom(z) {
  zoom = Math.min(3, Math.max(0.2, z));
  const svg = document.querySelector("#graph svg");
  svg.setAttribute("width", svg.dataset.width * zoom);
  svg.setAttribute("height", svg.dataset.height * zoom);
}

function scrollToBox(id) {
  const b = boxes.get(id);
  if (!b) return;
  const pane = document.getElementById("graph");
  if (pane.classList.contains("hidden")) return;
  const x = b.x * zoom, y = b.y * zoom;
  if (x < pane.scrollLeft + 40 || x > pane.scrollLeft + pane.clientWidth - 40 ||
      y < pane.scrollTop + 40 || y > pane.scrollTop + pane.clientHeight - 40) {
    pane.scrollLeft = x - pane.clientWidth / 2;
    pane.scrollTop = y - pane.clientHeight / 2;
  }
}

// --- values: tables, statistics, histograms ---

function tensorView(index, label) {
  if (index === null || index === undefined) {
    return `<div class="tensor"><div class="tensor-head">${label} <span class="sub">${D.values ? "None" : "not kept"}</span></div></div>`;
  }
  const t = D.tensors[index];
  let body;
  if (t.data) body = numbers(t);
  else body = summary(t.summary, t);
  return `<div class="tensor" data-tensor="${index}"><div class="tensor-head">${label} <span class="shape">${shape(t.shape)}</span> ` +
         `<span class="sub">${t.dtype}</span></div>${body}</div>`;
}

function cellStyle(v, scale) {
  if (typeof v !== "number" || !Number.isFinite(v) || scale === 0) return "";
  const a = Math.min(1, Math.abs(v) / scale) * 0.45;
  return v > 0 ? ` style="background:rgba(222,110,75,${a.toFixed(3)})"` : v < 0 ? ` style="background:rgba(70,130,200,${a.toFixed(3)})"` : "";
}

function numbers(t) {
  const data = t.data, dims = t.shape;
  const scale = t.dtype.startsWith("float") ? data.reduce((m, v) => Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m, 0) : 0;
  if (dims.length === 0) return `<table class="values"><tr><td${cellStyle(data[0], scale)}>${fmt(data[0], t.dtype)}</td></tr></table>`;
  const cols = dims[dims.length - 1], rows = dims.length >= 2 ? dims[dims.length - 2] : 1;
  const per = rows * cols, slices = per ? data.length / per : 0;
  const lead = dims.slice(0, -2);
  let out = "";
  const most = 32;
  for (let s = 0; s < Math.min(slices, most); s++) {
    if (lead.length) {
      const idx = []; let r = s;
      for (let d = lead.length - 1; d >= 0; d--) { idx.unshift(r % lead[d]); r = Math.floor(r / lead[d]); }
      out += `<div class="slice-label">[${idx.join(", ")}, :, :]</div>`;
    }
    out += `<div class="values-wrap"><table class="values"><tr><th></th>`;
    for (let c = 0; c < cols; c++) out += `<th>${c}</th>`;
    out += "</tr>";
    for (let r = 0; r < rows; r++) {
      out += `<tr>${dims.length >= 2 ? `<th>${r}</th>` : "<th></th>"}`;
      for (let c = 0; c < cols; c++) { const v = data[s * per + r * cols + c]; out += `<td${cellStyle(v, scale)}>${fmt(v, t.dtype)}</td>`; }
      out += "</tr>";
    }
    out += "</table></div>";
  }
  if (slices > most) out += `<p class="hint">\u2026 and ${slices - most} more slices</p>`;
  return out;
}

function summary(s, t) {
  let out = `<div class="stats">min <b>${fmt(s.min)}</b> &nbsp;max <b>${fmt(s.max)}</b> &nbsp;mean <b>${fmt(s.mean)}</b> &nbsp;std <b>${fmt(s.std)}</b><br>` +
            `zeros ${s.zeros}` + (s.nans ? ` &nbsp;<b style="color:#a61b1b">NaN ${s.nans}</b>` : "") +
            (s.infs ? ` &nbsp;<b style="color:#a61b1b">inf ${s.infs}</b>` : "") +
            ` &nbsp;<span class="sub">(${t.shape.reduce((a, b) => a * b, 1)} numbers: ` +
            (t.why === "trace" ? `kept as a summary, past the trace's values_limit of ${D.valuesLimit})` :
             `more than the page's table limit of ${D.limits.table})`) + "</span></div>";
  if (s.counts.length) {
    const W = 300, H = 70, most = Math.max(...s.counts), bw = W / s.counts.length;
    out += `<svg class="hist" width="${W}" height="${H + 14}">`;
    s.counts.forEach((c, i) => {
      const h = most ? Math.max(c ? 1 : 0, (c / most) * H) : 0;
      out += `<rect x="${(i * bw + 0.5).toFixed(1)}" y="${(H - h).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${h.toFixed(1)}"><title>${fmt(s.edges[i])} to ${fmt(s.edges[i + 1])}: ${c}</title></rect>`;
    });
    out += `<text x="0" y="${H + 12}">${fmt(s.edges[0])}</text><text x="${W}" y="${H + 12}" text-anchor="end">${fmt(s.edges[s.edges.length - 1])}</text></svg>`;
  }
  return out;
}

// --- attention heatmaps ---

function tokenLabel(i) {
  return D.tokens && i < D.tokens.length ? D.tokens[i] : String(i);
}

const CELL = 5; // pixels per cell of a painted heatmap

// the square root of the weight as the colour's strength: a weight of 1/64 still shows
function shade(v) { return Math.sqrt(Math.max(0, Math.min(1, v))); }

function isMasked(h, base, r, c) {
  return h.blocked ? h.blocked[r * h.cols + c] === 1 : (h.data[base + r * h.cols + c] === 0 && c > r);
}

function paintHeatmaps(container) {
  container.querySelectorAll("canvas.hm-canvas").forEach(canvas => {
    const h = heatOf.get(+canvas.dataset.step), base = +canvas.dataset.base;
    const ctx = canvas.getContext("2d");
    for (let r = 0; r < h.rows; r++) {
      for (let c = 0; c < h.cols; c++) {
        const masked = isMasked(h, base, r, c);
        ctx.fillStyle = masked ? ((r + c) % 2 ? "#d9dde4" : "#eceef2") :
          `rgba(31,78,150,${shade(h.data[base + r * h.cols + c]).toFixed(3)})`;
        ctx.fillRect(c * CELL, r * CELL, CELL, CELL);
      }
    }
    canvas.addEventListener("mousemove", e => {
      const c = Math.floor(e.offsetX / CELL), r = Math.floor(e.offsetY / CELL);
      if (r < h.rows && c < h.cols) canvas.title = `${tokenLabel(r)} \u2192 ${tokenLabel(c)}: ${h.data[base + r * h.cols + c]}`;
    });
  });
}

function heatmaps(h, inDetails) {
  const o = opOf.get(h.step);
  const small = h.cols > 24;
  let out = `<div class="heatmaps${inDetails ? " in-details" : ""}" data-step="${h.step}" data-items="${h.items}" data-heads="${h.heads}" data-rows="${h.rows}" data-cols="${h.cols}">`;
  if (!inDetails) {
    out += `<h4><a data-select="${h.step}">#${h.step} ${esc(o.op)}</a> <span class="sub">${esc(o.module || "")} \u00B7 ${esc(where(o))} \u00B7 weights ${shape(h.shape)}</span></h4>`;
  }
  const cut = (h.rows < h.allRows || h.cols < h.allCols) ? ` (the first ${h.rows} of ${h.allRows} positions)` : "";
  const more = h.items < h.batch ? `; batch items 0 to ${h.items - 1} of ${h.batch}` : "";
  out += `<div class="hm-axis">rows: queries, columns: keys, each row sums to 1; darker: more weight (the colour grows as its square root); hatched: masked (weight 0)${cut}${more}</div><div class="hm-grid">`;
  const per = h.rows * h.cols;
  for (let b = 0; b < h.items; b++) {
    for (let head = 0; head < h.heads; head++) {
      const base = (b * h.heads + head) * per;
      if (small) { // many cells: painted on a canvas (a table of thousands of cells is slow to lay out)
        out += `<div class="hm small"><div class="hm-title">batch ${b} \u00B7 head ${head}</div>` +
               `<canvas class="hm-canvas" data-step="${h.step}" data-base="${base}" width="${h.cols * CELL}" height="${h.rows * CELL}"></canvas></div>`;
        continue;
      }
      out += `<div class="hm"><div class="hm-title">batch ${b} \u00B7 head ${head}</div><table><tr><th></th>`;
      for (let c = 0; c < h.cols; c++) out += `<th class="col" title="${esc(tokenLabel(c))}">${esc(tokenLabel(c))}</th>`;
      out += "</tr>";
      for (let r = 0; r < h.rows; r++) {
        out += `<tr><th title="${esc(tokenLabel(r))}">${esc(tokenLabel(r))}</th>`;
        for (let c = 0; c < h.cols; c++) {
          const v = h.data[base + r * h.cols + c];
          const masked = isMasked(h, base, r, c);
          const strength = shade(v);
          const bg = masked ? "" : ` style="background:rgba(31,78,150,${strength.toFixed(3)});color:${strength > 0.6 ? "#fff" : "#123"}"`;
          out += `<td class="hm-cell${masked ? " masked" : ""}" data-v="${v}"${bg} title="${esc(tokenLabel(r))} \u2192 ${esc(tokenLabel(c))}: ${v}">${masked ? "" : v.toFixed(2)}</td>`;
        }
        out += "</tr>";
      }
      out += "</table></div>";
    }
  }
  return out + "</div></div>";
}

let attentionDrawn = false;

function drawAttention() { // when the tab is first opened: a large model's heatmaps are many cells
  if (attentionDrawn) return;
  attentionDrawn = true;
  const pane = document.getElementById("attention");
  if (!D.attention.length) {
    pane.innerHTML = `<p class="hint">No attention weights in this trace: the heatmaps show the outputs of softmax over (\u2026, tokens, tokens) ` +
      `and of the attention op${D.values ? "" : ", and only for a trace made with values=True"}.</p>`;
    return;
  }
  pane.innerHTML = D.attention.map(h => heatmaps(h, false)).join("");
  paintHeatmaps(pane);
  pane.querySelectorAll("a[data-select]").forEach(a => a.addEventListener("click", () => { showTab("graph"); select(+a.dataset.select); }));
}

// --- the details panel ---

let selected = null; // {step} or {leaf}

function sourceBlock(o) {
  if (o.file < 0) return "<p class='hint'>no source line (the op ran outside the trace's view)</p>";
  const f = D.files[o.file];
  let out = `<div class="tensor-head">${esc(f.path)}:${o.line}</div><pre class="code">`;
  const numbersHere = Object.keys(f.lines).map(Number).filter(n => Math.abs(n - o.line) <= 3).sort((a, b) => a - b);
  for (const n of numbersHere) out += `<span${n === o.line ? ' class="here"' : ""}><i>${n}</i>${esc(f.lines[n])}</span>`;
  return out + "</pre>";
}

function parentName(p) {
  if (p === null) return "an op left out of the page";
  if (p[0] === "f") { const o = opOf.get(+p.slice(1)); return `<a data-select="${o.step}">#${o.step} ${esc(o.op)}</a>`; }
  const l = leafOf.get(p);
  return `<a data-leaf="${l.id}">${esc(l.name)}</a>`;
}

function badges(o) {
  return (o.phase === "forward" ? '<span class="badge fwd">forward</span>' : '<span class="badge bwd">backward</span>') +
         (o.inplace ? '<span class="badge inplace">in place</span>' : "") + (o.view ? '<span class="badge view">view</span>' : "");
}

function showDetails() {
  const box = document.getElementById("details");
  let out = "";
  if (selected === null) {
    out = `<h2>${esc(D.title)}</h2><p class="hint">Click an op (a blue box) for its inputs, outputs, gradients and source line, ` +
          `its \u2207 strip for its backward, a tensor (a yellow or green box) for its value and gradient, a module's name to fold it. ` +
          `The step control walks the forward pass op by op, then the backward pass.</p>`;
  } else if (selected.leaf) {
    const l = leafOf.get(selected.leaf);
    out = `<h2>${esc(l.name)}</h2><div class="sub">${l.named ? "a parameter or buffer of " + esc(l.module || "a module") : "a tensor that no traced op made (an input)"}</div>`;
    out += "<h3>value</h3>" + tensorView(l.value, "value");
    out += "<h3>gradient</h3>" + (l.gradFrom.length ? tensorView(l.grad, ".grad from this backward pass") +
      `<div class="sub">sent by ${l.gradFrom.map(s => `<a data-select="${s}">\u2207 #${s}</a>`).join(", ")}${l.gradFrom.length > 1 ? " (added up)" : ""}</div>`
      : "<p class='hint'>no gradient reached it</p>");
    out += "<h3>used by</h3>" + l.users.map(s => `<a data-select="${s}">#${s} ${esc(opOf.get(s).op)}</a>`).join(", ");
  } else {
    const o = opOf.get(selected.step);
    const fwd = o.phase === "forward" ? o : (o.fwd !== null ? opOf.get(o.fwd) : null);
    const bwd = o.phase === "forward" ? (o.bwd !== null ? opOf.get(o.bwd) : null) : o;
    out = `<h2>#${o.step} ${esc(o.op)}${o.phase === "backward" ? " (backward)" : ""} ${badges(o)}</h2>`;
    out += `<div class="sub">${esc(o.fn)}${o.module ? " in module <b>" + esc(o.module) + "</b>" : ""} \u00B7 ${esc(o.dtype)} \u00B7 allocated ${bytes(o.bytes)}` +
           (o.phase === "forward" && bwd ? ` \u00B7 its backward: <a data-select="${bwd.step}">\u2207 #${bwd.step}</a>` : "") +
           (o.phase === "backward" && fwd ? ` \u00B7 its forward: <a data-select="${fwd.step}">#${fwd.step}</a>` : "") + "</div>";
    out += "<h3>source</h3>" + sourceBlock(o);
    if (o.phase === "forward" && heatOf.has(o.step)) out += "<h3>attention weights</h3>" + heatmaps(heatOf.get(o.step), true);
    if (fwd) {
      if (o.phase === "forward") {
        out += "<h3>inputs</h3>" + fwd.in.map((s, j) => tensorView(fwd.vin[j], `input ${j} from ${parentName(fwd.parents[j])}`)).join("");
        out += "<h3>outputs</h3>" + fwd.out.map((s, i) => tensorView(fwd.vout[i], `output ${i}`)).join("");
      }
      if (bwd) {
        out += `<h3>gradient arriving (\u2207 #${bwd.step})</h3>` + bwd.in.map((s, i) => tensorView(bwd.vin[i], `gradient of output ${i}`)).join("");
        out += "<h3>gradients sent to the inputs</h3>" + fwd.in.map((s, j) => {
          const position = fwd.args.length ? fwd.args[j] : j;
          return tensorView(bwd.vout[position], `to input ${j} (${parentName(fwd.parents[j])})`);
        }).join("");
      } else if (o.phase === "forward") {
        out += "<h3>gradient</h3><p class='hint'>no backward ran through this op in the trace</p>";
      }
      if (fwd.saved.length) {
        const savedItem = s => {
          if (s[0] === "output") return `output ${s[1]}`;
          if (s[0] === "array") return `an array of its own, ${shape(s[1])} ${esc(s[2])}`;
          const j = fwd.args.indexOf(s[1]); // s[1]: the position among the arguments
          return j >= 0 ? `input ${j} (${parentName(fwd.parents[j])})` : `argument ${s[1]}`;
        };
        out += "<h3>saved for backward</h3><ul class='saved'>" + fwd.saved.map(s => `<li>${savedItem(s)}</li>`).join("") + "</ul>";
      } else if (o.phase === "forward" && D.values) {
        out += "<h3>saved for backward</h3><p class='hint'>nothing: its backward needs no values (or no gradient was needed)</p>";
      }
    } else {
      out += "<h3>gradients in</h3>" + o.in.map((s, i) => tensorView(o.vin[i], `gradient of output ${i}`)).join("");
      out += "<h3>gradients out</h3>" + o.out.map((s, i) => tensorView(o.vout[i], `to input ${i}`)).join("");
    }
  }
  box.innerHTML = out;
  paintHeatmaps(box);
  box.scrollTop = 0;
  box.querySelectorAll("a[data-select]").forEach(a => a.addEventListener("click", () => select(+a.dataset.select)));
  box.querySelectorAll("a[data-leaf]").forEach(a => a.addEventListener("click", () => selectLeaf(a.dataset.leaf)));
}

function select(step) { selected = {step}; refresh(); const o = opOf.get(step); scrollToBox(shownAs(o.phase === "forward" ? "f" + step : (o.fwd !== null ? "f" + o.fwd : "b" + step))); }
function selectLeaf(id) { selected = {leaf: id}; refresh(); scrollToBox(shownAs(id)); }

// --- stepping ---

let position = 0; // 0: the overview; k: the k-th op of the trace has just run
let timer = null;

function refresh() {
  const graph = document.getElementById("graph");
  graph.classList.toggle("stepping", position > 0);
  const done = new Set(order.slice(0, position));
  const current = position > 0 ? order[position - 1] : null;
  const graded = new Set();
  for (const step of done) {
    const o = opOf.get(step);
    if (o.phase === "backward" && o.fwd !== null) {
      graded.add(shownAs("f" + o.fwd));
      const f = opOf.get(o.fwd);
      f.parents.forEach((p, j) => {
        const position = f.args.length ? f.args[j] : j;
        if (p && leafOf.has(p) && o.out[position] !== null && o.out[position] !== undefined) graded.add(shownAs(p));
      });
    }
  }
  for (const [id, b] of boxes) {
    const cls = b.g.classList;
    let isDone = true, isCurrent = false;
    if (id[0] === "f" || id[0] === "b") { const s = +id.slice(1); isDone = done.has(s); isCurrent = s === current; }
    else if (id.startsWith("g:")) {
      const m = id.slice(2);
      const inside = D.ops.filter(o => o.phase === "forward" && (o.module === m || o.module.startsWith(m + ".")));
      isDone = inside.some(o => done.has(o.step));
      isCurrent = current !== null && inside.some(o => o.step === current || o.bwd === current);
    } else { // a leaf exists before the first op that uses it
      const l = leafOf.get(id); isDone = l.users.some(s => done.has(s));
    }
    cls.toggle("todo", position > 0 && !isDone);
    cls.toggle("current", isCurrent);
    cls.toggle("graded", graded.has(id));
    const sel = selected && ((selected.step && (id === "f" + selected.step || id === "b" + selected.step)) || (selected.leaf && id === selected.leaf));
    cls.toggle("selected", !!sel);
  }
  for (const [step, chip] of chips) {
    chip.classList.toggle("todo", position > 0 && !done.has(step));
    chip.classList.toggle("current", step === current);
    chip.classList.toggle("selected", !!(selected && selected.step === step));
  }
  for (const e of edgeElements) {
    e.classList.remove("active", "grad");
    e.firstChild.setAttribute("marker-end", "url(#arrow)");
    e.firstChild.removeAttribute("marker-start");
  }
  if (current !== null) { // the inputs flowing into the op running now; in the backward, its gradients flowing back
    const o = opOf.get(current);
    const f = opOf.get(o.phase === "forward" ? o.step : o.fwd);
    const into = f ? edgesInto.get(f.step) || [] : [];
    for (const [e, j] of into) {
      if (o.phase === "backward") { // only along the inputs that get a gradient (not a mask's)
        const position = f.args.length ? f.args[j] : j;
        if (o.out[position] === null || o.out[position] === undefined) continue;
      }
      if (o.phase === "forward") {
        e.classList.add("active");
        e.firstChild.setAttribute("marker-end", "url(#arrow-active)");
      } else {
        e.classList.add("grad");
        e.firstChild.removeAttribute("marker-end");
        e.firstChild.setAttribute("marker-start", "url(#arrow-grad)");
      }
    }
  }
  const slider = document.getElementById("slider");
  slider.value = position;
  const caption = document.getElementById("caption");
  if (current === null) {
    caption.innerHTML = `overview: ${D.counts.forward} forward and ${D.counts.backward} backward ops`;
  } else {
    const o = opOf.get(current);
    caption.innerHTML = `${position} / ${order.length} \u00B7 <b class="${o.phase === "forward" ? "fwd" : "bwd"}">${o.phase}</b> ` +
      `${esc(o.op)}${o.module ? " (" + esc(o.module) + ")" : ""} \u00B7 ${esc(where(o))}`;
  }
  caption.title = caption.textContent;
  showDetails();
}

function go(k) {
  position = Math.max(0, Math.min(order.length, k));
  if (position > 0) {
    const step = order[position - 1], o = opOf.get(step);
    selected = {step};
    refresh();
    scrollToBox(shownAs(o.phase === "forward" ? "f" + step : (o.fwd !== null ? "f" + o.fwd : "b" + step)));
  } else {
    refresh();
  }
}

function play() {
  const button = document.getElementById("play");
  if (timer) { clearInterval(timer); timer = null; button.textContent = "play"; return; }
  if (position >= order.length) go(0);
  button.textContent = "pause";
  timer = setInterval(() => { if (position >= order.length) play(); else go(position + 1); }, 700);
}

function showTab(name) {
  if (name === "attention") drawAttention();
  document.querySelectorAll(".tab").forEach(t => t.classList.toggle("active", t.dataset.tab === name));
  document.getElementById("graph").classList.toggle("hidden", name !== "graph");
  document.getElementById("attention").classList.toggle("hidden", name !== "attention");
  document.getElementById("graph-tools").classList.toggle("hidden", name !== "graph");
}

// --- the page ---

function start() {
  document.getElementById("title").textContent = D.title;
  const c = D.counts;
  document.getElementById("counts").textContent =
    `${c.forward} forward ops (${c.forwardBytes}), ${c.backward} backward ops (${c.backwardBytes}), ${c.leaves} leaf tensors` +
    (D.values ? ` \u00B7 values kept: ${D.valuesKept} of ${D.valuesLimit}` : " \u00B7 shapes only") +
    (D.tokens ? ` \u00B7 tokens: ${D.tokens.length}` : "");
  const notes = [];
  if (D.error) notes.push(esc(D.error));
  if (!D.values) notes.push("This trace kept no values, only shapes: trace it with <code>tinyattn.trace(values=True)</code> (or <code>tinyattn see</code>) to see the numbers and gradients.");
  if (D.leftOut) notes.push(`The trace has ${D.leftOut} more ops than the ${D.limits.maxOps} this page shows (the first ones).`);
  const notice = document.getElementById("notice");
  notice.innerHTML = notes.join("<br>");
  notice.classList.toggle("error", !!D.error);
  document.getElementById("legend").innerHTML =
    `<span class="key" style="background:var(--fwd)"></span>forward op: #step, output shapes, source` +
    `<span class="key" style="background:var(--bwd)"></span>its backward` +
    `<span class="key" style="background:var(--leaf)"></span>input` +
    `<span class="key" style="background:var(--param)"></span>parameter` +
    `<span class="key" style="background:#fff;border:2px solid var(--current)"></span>running` +
    `<span class="key" style="background:var(--grad);border-radius:8px"></span>gradient arrived` +
    `<span class="key" style="background:repeating-linear-gradient(45deg,#eceef2 0 3px,#d9dde4 3px 6px)"></span>masked`;
  document.querySelector('.tab[data-tab="attention"]').textContent = `Attention heads (${D.attention.length})`;
  const slider = document.getElementById("slider");
  slider.max = order.length;
  slider.addEventListener("input", () => go(+slider.value));
  document.getElementById("first").addEventListener("click", () => go(0));
  document.getElementById("prev").addEventListener("click", () => go(position - 1));
  document.getElementById("next").addEventListener("click", () => go(position + 1));
  document.getElementById("last").addEventListener("click", () => go(order.length));
  document.getElementById("play").addEventListener("click", play);
  document.getElementById("zoom-in").addEventListener("click", () => setZoom(zoom * 1.25));
  document.getElementById("zoom-out").addEventListener("click", () => setZoom(zoom / 1.25));
  document.getElementById("fold-all").addEventListener("click", () => { for (const m of modules) folded.add(m); draw(); refresh(); });
  document.getElementById("unfold-all").addEventListener("click", () => { folded.clear(); draw(); refresh(); });
  document.querySelectorAll(".tab").forEach(t => t.addEventListener("click", () => showTab(t.dataset.tab)));
  document.addEventListener("keydown", e => {
    if (e.target.tagName === "INPUT" && e.target.type !== "range") return;
    if (e.key === "ArrowRight") { go(position + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { go(position - 1); e.preventDefault(); }
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(order.length);
    else if (e.key === " ") { play(); e.preventDefault(); }
  });
  draw();
  refresh();
}

start();
